"""A spending cap over every call the response cache has paid for (`run.max_cost_usd`).

The cache is the checkpoint, so it is also where spending is kept: `spending.json`
in the cache directory holds the list-price cost of every call made through it
(answers and failures alike), across stages and runs. Before a call, its cost
is bounded from above: its prompt at one token per three characters, and the
whole token limit it may spend (a reasoning model's room to reason included).
A call whose bound would take what is spent, plus the bounds of the calls in
flight, past the cap is not made: the stage stops with `SpendingCapReached`,
everything answered so far is cached, and raising the cap (or a fresh cache
directory) and running again continues where it stopped. So a run stops within
one call's bound of the cap, and never passes it on list prices.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from .types import ProviderStop

if TYPE_CHECKING:
    from .providers.registry import ModelApi

CHARS_PER_TOKEN_BOUND = 3  # prompts tokenise at about four characters a token; three bounds it
MESSAGE_OVERHEAD_TOKENS = 8


class SpendingCapReached(ProviderStop):
    """The next call could take the run's spending past `run.max_cost_usd`."""


def prompt_token_bound(messages: list[dict]) -> int:
    return sum(len(str(m.get("content", ""))) // CHARS_PER_TOKEN_BOUND + MESSAGE_OVERHEAD_TOKENS
               for m in messages)


def call_token_bound(api: ModelApi, messages: list[dict], max_tokens: int) -> int:
    """The most tokens a call may use: its prompt, bounded from above, and its whole limit."""
    return prompt_token_bound(messages) + api.token_limit(max_tokens)


def call_cost_bound(api: ModelApi, messages: list[dict], max_tokens: int) -> float:
    """The most a call may cost at list price (nothing for a free provider; needs both prices
    otherwise)."""
    prompt = prompt_token_bound(messages)
    cost = api.price(prompt, api.token_limit(max_tokens))
    if cost is None:
        raise ValueError(f"model {api.spec.model} has no price: a spending cap cannot bound its calls")
    return cost


class SpendingLedger:
    """What the cache directory's calls have cost, and what calls in flight may still cost."""

    FILE = "spending.json"

    def __init__(self, cache_dir: str | Path, cap_usd: float | None):
        self.path = Path(cache_dir) / self.FILE
        self.cap_usd = cap_usd
        self.reserved = 0.0
        self._lock = threading.Lock()
        self.spent = self._read()

    def _read(self) -> float:
        try:
            return float(json.loads(self.path.read_text(encoding="utf-8"))["spent_usd"])
        except FileNotFoundError:
            return 0.0
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise OSError(f"{self.path}: unreadable spending record ({exc}); check or remove it") from None

    def reserve(self, bound: float) -> None:
        """Hold `bound` for a call about to be made, or stop: it could pass the cap."""
        with self._lock:
            if self.cap_usd is not None and self.spent + self.reserved + bound > self.cap_usd:
                raise SpendingCapReached(
                    f"spending cap reached: ${self.spent:.4f} spent through {self.path.parent} "
                    f"(+${self.reserved:.4f} in flight), and the next call may cost up to "
                    f"${bound:.4f}, past run.max_cost_usd = ${self.cap_usd:.4f}. Everything answered "
                    "so far is cached: raise the cap and run again to continue"
                )
            self.reserved += bound

    def settle(self, bound: float, cost: float | None) -> None:
        """The call reserved with `bound` is over and cost `cost` (None: nothing is known)."""
        with self._lock:
            self.reserved -= bound
            if cost:
                self.spent += cost
                self._write()

    def _write(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".spending.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"spent_usd": self.spent}, fh)
        os.replace(tmp, self.path)
