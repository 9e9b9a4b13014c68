"""What passes between the client and a provider adapter, independent of any SDK."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..errors import PressurebenchError

FinishReason = Literal["stop", "length", "refusal", "content_filter", "other"]


@dataclass(frozen=True)
class ProviderRequest:
    messages: list[dict]  # [{role, content}], an optional system message first
    temperature: float
    max_tokens: int
    top_p: float | None = None
    repeat_penalty: float | None = None  # local provider only (params validation)
    seed: int | None = None
    schema: dict | None = None  # JSON schema of the structured answer, or None for text
    schema_name: str | None = None
    timeout_s: float = 120.0


@dataclass
class ProviderResponse:
    text: str | None
    finish_reason: FinishReason
    input_tokens: int = 0
    output_tokens: int = 0
    model_version: str | None = None
    refusal: str | None = None


@dataclass
class RetryableError(Exception):
    """429, 5xx, timeouts, dropped connections, garbled bodies: worth another try."""

    reason: str
    retry_after: float | None = None

    def __str__(self) -> str:
        return self.reason


@dataclass
class RejectedError(Exception):
    """The provider refused this request as such (400/422): retrying the same request cannot help."""

    reason: str

    def __str__(self) -> str:
        return self.reason


class ProviderAuthError(PressurebenchError):
    """401/403/404: the configuration is wrong, so every call would fail; the run stops."""


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    extra: dict = field(default_factory=dict)
