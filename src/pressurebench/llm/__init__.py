"""One client for every model call: providers, structured output, cache, limits, retries, usage."""

from .client import CallResult, ModelClient, run_sync
from .types import ProviderAuthError

__all__ = ["CallResult", "ModelClient", "ProviderAuthError", "run_sync"]
