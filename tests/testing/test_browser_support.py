"""The headless browser's driver as the browser tests start it (tests/browser_support.py)."""

from __future__ import annotations

import json
import socket
import urllib.request

import browser_support
from browser_support import chromedriver, needs_browser
from support import WAIT_S


@needs_browser
def test_a_driver_whose_port_was_taken_meanwhile_starts_again_on_another(monkeypatch):
    """Between `free_port` and the driver's own bind another process (a parallel test worker)
    may take the port: the driver exits, and a new one starts on another port."""
    free_port = browser_support.free_port
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))  # bound, not listening: a request to it is refused
        first = iter([taken.getsockname()[1]])
        monkeypatch.setattr(browser_support, "free_port", lambda: next(first, None) or free_port())
        with chromedriver() as port:
            assert port != taken.getsockname()[1]
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=WAIT_S) as resp:
                assert json.loads(resp.read())["value"]["ready"]
