"""pressurebench: how LLM assistants behave under realistic multi-turn pressure."""

__version__ = "0.1.0"
