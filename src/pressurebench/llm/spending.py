"""The study's spending record, and a cap over it (`run.max_cost_usd`).

The cache is the checkpoint, so it is also where spending is kept: `spending.json`
in the cache directory holds the list-price cost of every paid call made through it
(answers and failures alike), across stages and runs, whether or not a cap is set:
a cap set halfway through a study counts what the study spent before it. Before a
call under a cap, its cost
is bounded from above: its prompt at one token per three characters, and the
whole token limit it may spend (a reasoning model's room to reason included).
A call whose bound would take what is spent, plus the bounds of the calls in
flight, past the cap is not made: the stage stops with `SpendingCapReached`,
everything answered so far is cached, and raising the cap (or a fresh cache
directory) and running again continues where it stopped. So a run stops within
one call's bound of the cap, and never passes it on list prices, also when several
processes spend through one cache directory at once (`SpendingLedger`).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from ..io import atomic_write
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
    otherwise): its whole prompt uncached, or written to the prompt cache where a write costs
    more than input (Anthropic)."""
    prompt = prompt_token_bound(messages)
    written = prompt if api.writes_cache else 0
    cost = api.price(prompt, api.token_limit(max_tokens), cache_write_tokens=written)
    if cost is None:
        raise ValueError(f"model {api.spec.model} has no price: a spending cap cannot bound its calls")
    return cost


class SpendingLedger:
    """What the cache directory's calls have cost, and what calls in flight may still cost.

    Several processes may use one cache directory at once (two targets simulated side
    by side, one command started twice), so the record is the file, not this object:
    each reservation and each settlement reads it, changes it and writes it back under
    an exclusive lock (`spending.lock`). The file holds what was spent and, per process
    id, the bounds of that process's calls in flight; a process that is gone holds
    nothing. So the cap bounds every process's calls together.
    """

    FILE = "spending.json"
    LOCK = "spending.lock"

    def __init__(self, cache_dir: str | Path, cap_usd: float | None):
        self.path = Path(cache_dir) / self.FILE
        self.lock_path = Path(cache_dir) / self.LOCK
        self.cap_usd = cap_usd
        self.reserved = 0.0  # this process's calls in flight
        self.pid = os.getpid()
        self._lock = threading.Lock()
        self.spent = 0.0
        if self.capped:
            with self._locked():
                self.spent = self._read()[0]

    @property
    def capped(self) -> bool:
        """Whether calls are bounded before they are made (else only recorded after)."""
        return self.cap_usd is not None

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """This process's threads one at a time, and this process alone among processes."""
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # releases the lock

    def _read(self) -> tuple[float, dict[int, float]]:
        """What was spent, and the bounds in flight of the other processes still running."""
        try:
            record = json.loads(self.path.read_text(encoding="utf-8"))
            spent = float(record["spent_usd"])
            in_flight = {int(pid): float(bound) for pid, bound in record.get("in_flight_usd", {}).items()}
        except FileNotFoundError:
            return 0.0, {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise OSError(f"{self.path}: unreadable spending record ({exc}); check or remove it") from None
        if not math.isfinite(spent) or spent < 0:
            raise OSError(f"{self.path}: spent_usd is {spent}; check or remove the spending record")
        return spent, {pid: b for pid, b in in_flight.items() if pid != self.pid and _running(pid)}

    def reserve(self, bound: float) -> None:
        """Hold `bound` for a call about to be made, or stop: it could pass the cap."""
        with self._locked():
            self.spent, others = self._read()
            in_flight = self.reserved + sum(others.values())
            if self.cap_usd is not None and self.spent + in_flight + bound > self.cap_usd:
                raise SpendingCapReached(
                    f"spending cap reached: ${self.spent:.4f} spent through {self.path.parent} "
                    f"(+${in_flight:.4f} in flight), and the next call may cost up to "
                    f"${bound:.4f}, past run.max_cost_usd = ${self.cap_usd:.4f}. Everything answered "
                    "so far is cached: raise the cap and run again to continue"
                )
            self.reserved += bound
            self._write(others)

    def settle(self, bound: float, cost: float | None) -> None:
        """The call reserved with `bound` is over and cost `cost` (None: nothing is known)."""
        with self._locked():
            self.spent, others = self._read()
            self.reserved = max(self.reserved - bound, 0.0)
            if self.reserved < 1e-12:
                self.reserved = 0.0
            if cost:
                self.spent += cost
            self._write(others)

    def _write(self, others: dict[int, float]) -> None:
        in_flight = {**others, self.pid: self.reserved} if self.reserved else others
        record = {"spent_usd": self.spent, "in_flight_usd": {str(p): b for p, b in sorted(in_flight.items())}}
        with atomic_write(self.path, durable=False) as fh:
            json.dump(record, fh)


def recorded_spending(cache_dir: str | Path) -> float:
    """What the spending record of `cache_dir` holds: 0 where there is none. Read without the
    lock, for a figure shown before a run (`pressurebench estimate`), never for a reservation."""
    path = Path(cache_dir) / SpendingLedger.FILE
    try:
        spent = float(json.loads(path.read_text(encoding="utf-8"))["spent_usd"])
    except FileNotFoundError:
        return 0.0
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise OSError(f"{path}: unreadable spending record ({exc}); check or remove it") from None
    return spent if math.isfinite(spent) and spent > 0 else 0.0


def _running(pid: int) -> bool:
    """Whether a process with this id exists (one of another user's counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
