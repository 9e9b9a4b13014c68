"""What passes between the client and a provider adapter, independent of any SDK."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..errors import EXIT_INTERRUPTED, PressurebenchError


class ModelSettings(Protocol):
    """One model's entry of the params as the client and its providers read it (the params'
    `ModelSpec` is one): the client knows what it reads, not the params file's module."""

    # Read-only: the params are frozen, and may narrow a type (a Literal of the values taken).
    @property
    def provider(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def base_url(self) -> str | None: ...
    @property
    def api_key_env(self) -> str | None: ...
    @property
    def temperature(self) -> float | None: ...
    @property
    def top_p(self) -> float | None: ...
    @property
    def max_tokens(self) -> int: ...
    @property
    def seed(self) -> int | None: ...
    @property
    def max_concurrency(self) -> int | None: ...
    @property
    def requests_per_minute(self) -> float | None: ...
    @property
    def tokens_per_minute(self) -> float | None: ...
    @property
    def price_per_mtok_in(self) -> float | None: ...
    @property
    def price_per_mtok_out(self) -> float | None: ...
    @property
    def price_per_mtok_cached_in(self) -> float | None: ...
    @property
    def price_per_mtok_cache_write(self) -> float | None: ...
    @property
    def prompt_cache(self) -> Literal["auto", "off", "1h"]: ...
    @property
    def system_prompt(self) -> str | None: ...
    @property
    def extra_headers(self) -> dict[str, str]: ...
    @property
    def timeout_s(self) -> float: ...
    @property
    def structured_output(self) -> Literal["json_schema", "json_object", "tool", "prompt"] | None: ...
    @property
    def strict_schema(self) -> bool | None: ...
    @property
    def reasoning(self) -> bool | None: ...
    @property
    def reasoning_effort(self) -> str | None: ...
    @property
    def reasoning_tokens(self) -> int: ...
    @property
    def token_limit_param(self) -> Literal["max_tokens", "max_completion_tokens"] | None: ...
    @property
    def price_table(self) -> bool | None: ...
    @property
    def thinking_budget(self) -> int | None: ...
    @property
    def region(self) -> str | None: ...
    @property
    def project_id(self) -> str | None: ...
    @property
    def api_version(self) -> str | None: ...
    @property
    def thinking_level(self) -> Literal["minimal", "low", "medium", "high"] | None: ...
    @property
    def batch(self) -> bool: ...
    @property
    def extra_body(self) -> dict[str, Any]: ...
    @property
    def n_ctx(self) -> int: ...
    @property
    def n_threads(self) -> int | None: ...
    @property
    def repeat_penalty(self) -> float | None: ...
    @property
    def requantize(self) -> str | None: ...
    @property
    def weight_repacking(self) -> bool | None: ...


class ClientSettings(Protocol):
    """What `ModelClient.from_params` reads of the params (`params.Params` is one): the models
    by id and the run's cache, retry, spending and batch settings."""

    # Read-only, as the params are.
    @property
    def models(self) -> Mapping[str, ModelSettings]: ...
    @property
    def run(self) -> Any: ...


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
    cache_group: str | None = None  # requests likely to share a prompt prefix (`llm.prompt_cache`)
    # Indices into `messages` of the messages that end a prefix another request repeats
    # (`llm.prompt_cache.cache_marks`); None: the provider's default places.
    cache_marks: tuple[int, ...] | None = None


@dataclass
class ProviderResponse:
    text: str | None
    finish_reason: FinishReason
    input_tokens: int = 0  # the whole prompt: uncached, read from and written to a prompt cache
    output_tokens: int = 0  # billed output, hidden reasoning included
    model_version: str | None = None
    refusal: str | None = None
    reasoning_tokens: int = 0  # of output_tokens, spent on hidden reasoning
    cached_input_tokens: int = 0  # of input_tokens, read from the provider's prompt cache
    cache_write_tokens: int = 0  # of input_tokens, written to it (Anthropic bills them apart)
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
    """401/403: the provider refused the key, so every call would fail."""


class ProviderNotFound(ProviderStop):
    """404: the provider serves no model of this name at this base_url, or the base_url leads
    to no API of it, so every call would fail."""


class StageInterrupted(ProviderStop):
    """Ctrl-C (SIGINT) stopped the stage's model calls: no call was sent after it, and the calls
    already sent were let finish, so what they answered is cached (`llm.interrupts`)."""

    exit_code = EXIT_INTERRUPTED


class RequestsRefused(ProviderStop):
    """The provider refused the same request shape several times over (a 400 that retrying
    or other prompts cannot fix, such as a parameter the model does not take)."""
