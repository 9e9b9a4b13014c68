"""Ctrl-C during a stage's model calls: stop sending, keep what is already paid for.

A call already sent is paid for whether or not its answer is read. So the first SIGINT
does not abandon the calls in flight: it stops the client from sending any further call
(the stage then ends with `StageInterrupted`, exit code 130), lets the calls already sent
finish and reach the cache, and says so on stderr. The next run replays those answers
for free. A second SIGINT stops at once (the handler in place before the client's takes
it: `asyncio.run`'s cancels the stage), abandoning the calls still in flight, which the
next run sends again.

Signals reach only the main thread, so the handler is installed only when the client runs
there (a stage's process; not a notebook opened in JupyterLab, whose kernel runs the
client in a thread of its own and interrupts its own way). A SIGINT the process ignores
(a background job of a shell without job control) stays ignored.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def stopping_notice(in_flight: int) -> str:
    """What the first Ctrl-C prints at once, before the calls in flight have finished."""
    waiting = (f"waiting for the {in_flight} call{'s' if in_flight != 1 else ''} already sent "
               "to be answered and cached" if in_flight else "no call is in flight")
    return (f"pressurebench: stopping on Ctrl-C: no further model call is sent; {waiting} "
            "(Ctrl-C again stops at once, and the next run sends those calls again)")


def stopped_message(in_flight: int) -> str:
    """The `StageInterrupted` message: why the stage stopped and what a re-run does."""
    sent = (f"the {in_flight} call{'s' if in_flight != 1 else ''} already sent were let finish "
            "and what they answered is cached" if in_flight else "no call was in flight")
    return (f"stopped by Ctrl-C (SIGINT): no model call was sent after it, {sent}; run the "
            "stage again to continue, replaying every answered call for free")


@contextmanager
def first_interrupt_stops(on_stop: Callable[[], None]) -> Iterator[None]:
    """While open, the first SIGINT calls `on_stop` (in the event loop, soon) instead of
    raising, and the next is left to the handler that was in place before."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGINT) if main else None
    if not main or previous in (signal.SIG_IGN, None):
        yield
        return
    loop = asyncio.get_running_loop()

    def first(signum, frame) -> None:
        signal.signal(signal.SIGINT, previous)
        loop.call_soon_threadsafe(on_stop)

    signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is first:
            signal.signal(signal.SIGINT, previous)
