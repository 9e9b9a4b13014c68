"""Calls in flight across processes: one process asks, the others wait and replay its answer.

Two runs over one cache directory (two targets simulated side by side, or one
command started twice) may need the same call. A call that misses the cache
claims its key first, with an exclusive lock on `in-flight/<key>.lock` in the
cache directory, and looks at the cache again once it holds the claim: a call
another process was asking is then answered from the cache, so no answer is paid
for twice. The lock is the kernel's (`flock`), so a process that dies releases
its claims; the file is removed when the claim ends.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

FOLDER = "in-flight"
FIRST_WAIT_S = 0.005
LONGEST_WAIT_S = 0.25  # a claimed call takes seconds; waiting longer between looks costs little


class CallClaims:
    """Exclusive claims on call keys, shared by every process using one cache directory."""

    def __init__(self, cache_dir: str | Path):
        self.folder = Path(cache_dir) / FOLDER

    @asynccontextmanager
    async def claim(self, key: str) -> AsyncIterator[None]:
        """Hold the key's claim for the body; wait (without blocking the event loop) while
        another process or task holds it."""
        path = self.folder / f"{key}.lock"
        wait = FIRST_WAIT_S
        while (fd := self._try_claim(path)) is None:
            await asyncio.sleep(wait)
            wait = min(wait * 2, LONGEST_WAIT_S)
        try:
            yield
        finally:
            # Removed while still locked: a process that opened the old file finds, once it
            # holds its lock, that the path no longer names that file, and claims anew.
            path.unlink(missing_ok=True)
            os.close(fd)

    def _try_claim(self, path: Path) -> int | None:
        """The locked file's descriptor, or None while another holder has the key."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except FileNotFoundError:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return None
            raise
        try:
            current = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            current = False
        if not current:  # the previous holder removed the file between our open and our lock
            os.close(fd)
            return None
        return fd
