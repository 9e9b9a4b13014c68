"""What the two generation stages share: the arm they write for, and asking the generator for
one structured item, regenerating a bounded number of times.

The client already repairs malformed structured output; `generate` handles
answers that are well-formed but unacceptable in context (a near-duplicate, a
rewrite identical to its base). Every attempt uses a distinct `sample` index,
so a regeneration is a new draw rather than a replay of the cached failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pydantic import BaseModel

from ..errors import ConfigError
from ..llm.client import ModelClient
from .entry import StageCall

T = TypeVar("T", bound=BaseModel)

MAX_REASON_CHARS = 600


def require_generating(call: StageCall, what: str) -> None:
    """The called arm must write its own `what` (metrics, scenarios): an arm that plays the
    main arm's is refused."""
    if not call.inputs.generates:
        raise ConfigError(
            call.params_path, f"arm '{call.arm}' plays the main arm's {what}; it writes none"
        )


@dataclass
class Attempts(Generic[T]):
    """The accepted item (or None) and why each rejected attempt was rejected."""

    value: T | None = None
    rejections: list[str] = field(default_factory=list)

    def reason(self, what: str) -> str:
        """One line for a GenerationError: how many attempts, and the distinct reasons."""
        distinct = list(dict.fromkeys(self.rejections))
        text = f"no acceptable {what} after {len(self.rejections)} attempt(s): " + " | ".join(
            distinct
        )
        return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 3] + "..."


async def generate(
    client: ModelClient,
    model_id: str,
    *,
    messages: Callable[[list[T]], list[dict]],
    schema: type[T],
    accept: Callable[[T], str | None],
    attempts: int,
) -> Attempts[T]:
    """Try up to `attempts` times. `messages(rejected)` builds the prompt, given the drafts
    rejected so far (so the prompt can say what not to repeat); `accept(draft)` returns
    None or the reason the draft is unacceptable."""
    out: Attempts[T] = Attempts()
    rejected: list[T] = []
    for attempt in range(attempts):
        result = await client.chat(
            model_id, messages(rejected), schema=schema, sample=attempt
        )
        if not result.ok:
            out.rejections.append(result.error or "call failed without a reason")
            continue
        problem = accept(result.parsed)
        if problem is None:
            out.value = result.parsed
            return out
        out.rejections.append(problem)
        rejected.append(result.parsed)
    return out

