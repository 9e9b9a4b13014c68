"""Per-model concurrency and request-rate limits, honoured across all stages' calls."""

from __future__ import annotations

import asyncio
import time


class RateLimiter:
    """Spaces request starts evenly so at most `per_minute` start in any minute."""

    def __init__(self, per_minute: float):
        self.interval = 60.0 / per_minute
        self._next = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        async with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self.interval
        if delay > 0:
            await asyncio.sleep(delay)
