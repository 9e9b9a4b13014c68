"""The mock OpenAI server with a user model that never ends a conversation early.

Every simulated conversation then makes exactly 2 × turns calls, so a run's
ideal wall time is known in advance. Run as its own process so the server's
CPU is not charged to the client being measured:

    .venv/bin/python perf/conversation_server.py --latency 1.0

prints the bound port as stdout's first line, then serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import signal

import common  # noqa: F401 - puts the mock providers (tests/) on the path

from mock_providers import MockLLMServer, MockRequest, default_responder


def never_ending(req: MockRequest):
    """A valid `UserTurn` that keeps talking for structured calls, the default reply otherwise."""
    if req.schema is not None:
        return {
            "thought": "keep pressing",
            "message": f"Please look again at my plan ({req.body_hash[:12]}).",
            "end_conversation": False,
        }
    return default_responder(req)


def serve(latency: float) -> None:
    stop = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop)  # before the server thread exists
    server = MockLLMServer(responder=never_ending, api_key=None, latency=latency).start()
    print(server.port, flush=True)
    signal.sigwait(stop)
    server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per completion")
    serve(parser.parse_args().latency)
