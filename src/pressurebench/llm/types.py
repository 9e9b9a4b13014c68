"""What passes between the client and a provider adapter, independent of any SDK."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import PressurebenchError

FinishReason = Literal["stop", "length", "refusal", "content_filter", "other"]


@dataclass(frozen=True)
class ProviderRequest:
    messages: list[dict]  # [{role, content}], an optional system message first
    max_tokens: int  # the visible answer's budget; a provider adds room for hidden reasoning
    temperature: float | None = None  # None: left out, the provider's default applies
    top_p: float | None = None
    seed: int | None = None
    schema: dict | None = None  # JSON schema of the structured answer, or None for text
    schema_name: str | None = None
    timeout_s: float = 120.0


@dataclass
class ProviderResponse:
    text: str | None
    finish_reason: FinishReason
    input_tokens: int = 0
    output_tokens: int = 0  # billed output, hidden reasoning included
    model_version: str | None = None
    refusal: str | None = None
    reasoning_tokens: int = 0  # of output_tokens, spent on hidden reasoning
    # What the call cost and how long it took when it was made (`ModelApi.cost_of`, seconds
    # until the reply): kept with the reply in the cache and the stage's record, so a run
    # that replays the call still knows both. None in entries written before they were kept.
    cost_usd: float | None = None
    latency_s: float | None = None


@dataclass
class RetryableError(Exception):
    """429, 5xx, timeouts, dropped connections, garbled bodies: worth another try."""

    reason: str
    retry_after: float | None = None
    rate_limited: bool = False  # HTTP 429: the provider's rate limit, which the client adapts to

    def __str__(self) -> str:
        return self.reason


@dataclass
class RejectedError(Exception):
    """The provider refused this request as such (400/422): retrying the same request cannot help."""

    reason: str

    def __str__(self) -> str:
        return self.reason


class ProviderStop(PressurebenchError):
    """Every further call to this model would fail the same way: the stage stops."""


class ProviderAuthError(ProviderStop):
    """401/403/404: the configuration is wrong, so every call would fail."""


class RequestsRefused(ProviderStop):
    """The provider refused the same request shape several times over (a 400 that retrying
    or other prompts cannot fix, such as a parameter the model does not take)."""
