"""Which calls to a mock provider fail, and how: deterministic, yet recoverable by a retry.

A client's error handling is only tested if failures arrive on purpose. The
plan decides per call from a hash of (plan seed, request body, attempt number
for that body): the same run fails the same calls every time, while a retried
identical request is a new draw and can succeed, exactly as a flaky provider
behaves. For tests that need a precise sequence there are two sharper tools:
`fail_first_n` (every distinct request fails its first N attempts) and the
server's scripted queue of explicit outcomes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields
from enum import StrEnum

__all__ = ["OK", "Fault", "FaultPlan"]

OK = "ok"
"""The outcome of a call that gets a normal reply."""


class Fault(StrEnum):
    """One way a provider call goes wrong, as the client sees it on the wire."""

    RATE_LIMIT = "rate_limit"
    """HTTP 429 with a `retry-after` header."""
    SERVER_ERROR = "server_error"
    """HTTP 500."""
    HANG = "hang"
    """No reply for `FaultPlan.hang_seconds`, longer than any sane client timeout."""
    MALFORMED_JSON = "malformed_json"
    """HTTP 200 whose body is cut off mid-JSON."""
    BAD_STRUCTURED = "bad_structured"
    """A valid envelope whose structured content is not JSON or violates the schema."""
    TRUNCATED = "truncated"
    """Content cut off with finish_reason `length` / stop_reason `max_tokens`."""
    EMPTY = "empty"
    """An empty content string (OpenAI) or no content blocks (Anthropic)."""
    REFUSAL = "refusal"
    """The model declines: OpenAI `message.refusal`, Anthropic stop_reason `refusal`."""


@dataclass(frozen=True)
class FaultPlan:
    """Share of calls (0..1) that fail with each fault kind, plus how the faults behave.

    The shares are probabilities of one independent draw per attempt; they must
    sum to at most 1. `fail_first_n` overrides the draw: every distinct request
    body fails its first N attempts with `fail_first_kind`, then the draw applies.
    """

    rate_limit: float = 0.0
    server_error: float = 0.0
    hang: float = 0.0
    malformed_json: float = 0.0
    bad_structured: float = 0.0
    truncated: float = 0.0
    empty: float = 0.0
    refusal: float = 0.0
    seed: int = 0
    fail_first_n: int = 0
    fail_first_kind: Fault = Fault.SERVER_ERROR
    retry_after: float = 1.0
    """Seconds advertised in the `retry-after` header of a rate-limit reply."""
    hang_seconds: float = 30.0
    """How long a hanging call stays silent before it answers normally."""
    per_attempt: bool = True
    """Draw anew for every attempt (a flaky provider), or once per request body, so a request
    that fails fails on every attempt and every run (a provider that always refuses it)."""

    def __post_init__(self) -> None:
        shares = self.shares()
        for kind, share in shares.items():
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"FaultPlan.{kind}: share must be within 0..1, got {share}")
        if sum(shares.values()) > 1.0 + 1e-9:
            raise ValueError(f"FaultPlan: shares sum to {sum(shares.values()):.3f}, above 1")
        if self.fail_first_n < 0:
            raise ValueError("FaultPlan.fail_first_n must be >= 0")
        object.__setattr__(self, "fail_first_kind", Fault(self.fail_first_kind))

    def shares(self) -> dict[Fault, float]:
        """The configured share of each fault kind, in the fixed order used by the draw."""
        return {Fault(f.name): getattr(self, f.name) for f in fields(self) if f.name in _KINDS}

    def decide(self, body_hash: str, attempt: int) -> Fault | None:
        """The fault for the `attempt`-th (1-based) arrival of a request body, or None."""
        if attempt <= self.fail_first_n:
            return self.fail_first_kind
        draw_for = attempt if self.per_attempt else 0
        digest = hashlib.sha256(f"{self.seed}:{body_hash}:{draw_for}".encode()).digest()
        draw = int.from_bytes(digest[:8], "big") / 2**64
        cumulative = 0.0
        for kind, share in self.shares().items():
            cumulative += share
            if draw < cumulative:
                return kind
        return None


_KINDS = {kind.value for kind in Fault}
