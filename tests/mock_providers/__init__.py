"""Offline stand-ins for model providers: a local server speaking the OpenAI and Anthropic APIs.

Names are resolved on first use so that `python -m mock_providers.mock_llm_server` (from tests/)
does not import its own module twice (once via this package, once as `__main__`).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Fault": "faults",
    "FaultPlan": "faults",
    "LoggedRequest": "mock_llm_server",
    "MockLLMServer": "mock_llm_server",
    "MockRequest": "mock_llm_server",
    "Reply": "mock_llm_server",
    "Responder": "mock_llm_server",
    "default_responder": "mock_llm_server",
    "planning_responder": "mock_llm_server",
    "schema_instance": "schema_instances",
}

__all__ = [
    "Fault",
    "FaultPlan",
    "LoggedRequest",
    "MockLLMServer",
    "MockRequest",
    "Reply",
    "Responder",
    "default_responder",
    "planning_responder",
    "schema_instance",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
