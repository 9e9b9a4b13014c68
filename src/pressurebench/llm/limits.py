"""Per-model concurrency and request-rate limits, honoured across all stages' calls."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class RateLimiter:
    """Spaces request starts evenly so at most `per_minute` start in any minute.

    `clock` and `sleep` are the monotonic clock and the sleep it waits with (a test gives
    its own, so that it need not wait on the wall clock).
    """

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep):
        self.interval = 60.0 / per_minute
        self._next = 0.0
        self._clock, self._sleep = clock, sleep
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self._lock:
            now = self._clock()
            delay = self._next - now
            self._next = max(now, self._next) + self.interval
        if delay > 0:
            await self._sleep(delay)


class TokenRateLimiter:
    """At most `per_minute` tokens a minute: a bucket of a minute's tokens, refilled evenly.

    A call takes its estimated tokens (prompt and the most it may generate) before it
    starts and is corrected with what it really used when it ends, so a run keeps
    within a provider's tokens-per-minute limit instead of learning it from 429s.
    A call larger than the whole bucket waits for a full bucket and then goes.
    """

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[object]] = asyncio.sleep):
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.level = self.capacity
        self._stamp = clock()
        self._clock, self._sleep = clock, sleep
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def take(self, tokens: float) -> None:
        need = min(tokens, self.capacity)
        async with self._lock:  # first come, first served
            self._refill()
            while self.level < need:
                await self._sleep((need - self.level) / self.rate)
                self._refill()
            self.level -= tokens

    def settle(self, estimated: float, used: float) -> None:
        """A call that took `estimated` tokens used `used`: give back (or take) the difference."""
        self._refill()
        self.level = min(self.capacity, self.level + estimated - used)


class AdaptiveConcurrency:
    """Calls in flight, at most `limit`, where the limit follows the provider (AIMD).

    A rate-limit answer (HTTP 429) halves the limit (multiplicative decrease, once for
    the calls already in flight when it came); every `limit` answers in a row raise it by
    one again (additive increase), up to the configured `maximum`. The low point and the
    number of decreases are reported in the stage's cost file.
    """

    def __init__(self, maximum: int):
        self.maximum = maximum
        self.limit = maximum
        self.in_flight = 0
        self.lowest = maximum
        self.decreases = 0
        self.rate_limited = 0
        self._since_change = 0
        self._epoch = 0
        self._turn = asyncio.Condition()

    async def acquire(self) -> int:
        """Wait for a slot; returns the epoch the call starts in (for `rate_limited_at`)."""
        async with self._turn:
            await self._turn.wait_for(lambda: self.in_flight < self.limit)
            self.in_flight += 1
            return self._epoch

    async def release(self) -> None:
        async with self._turn:
            self.in_flight -= 1
            self._turn.notify_all()

    def answered(self) -> None:
        self._since_change += 1
        if self._since_change >= self.limit and self.limit < self.maximum:
            self.limit += 1
            self._since_change = 0

    def rate_limited_at(self, epoch: int) -> None:
        """A 429 for a call started in `epoch`: halve, unless a 429 of this epoch already did."""
        self.rate_limited += 1
        if epoch != self._epoch:
            return
        self.limit = max(1, self.limit // 2)
        self.lowest = min(self.lowest, self.limit)
        self.decreases += 1
        self._since_change = 0
        self._epoch += 1
