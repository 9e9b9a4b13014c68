"""Headless Chromium for the browser tests, driven through chromedriver's W3C WebDriver HTTP
interface, spoken directly (a handful of JSON requests): the browser and driver found on the
machine, a driver process started and awaited until it reports ready, and a session."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from support import WAIT_S

CHROMIUM = next((p for p in ("/usr/lib/chromium/chromium", "/usr/bin/chromium") if Path(p).exists()),
                shutil.which("chromium"))
CHROMEDRIVER = ("/usr/bin/chromedriver" if Path("/usr/bin/chromedriver").exists()
                else shutil.which("chromedriver"))
needs_browser = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="chromium and chromedriver not installed: apt-get install chromium chromium-driver",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ready(proc: subprocess.Popen, port: int) -> bool:
    """Whether the driver's /status says it is ready (a state, not a time; the deadline only
    bounds a driver that never gets there); False if the driver exited first."""
    deadline = time.monotonic() + WAIT_S
    while proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=WAIT_S) as resp:
                if json.loads(resp.read())["value"]["ready"]:
                    return True
        except OSError:
            pass
        if time.monotonic() > deadline:
            pytest.fail("chromedriver did not start")
        time.sleep(0.2)
    return False


@contextmanager
def chromedriver() -> Iterator[int]:
    """A chromedriver process on a free port, yielded once it is ready. A driver that exits
    before then lost its port to another process between `free_port` and its own bind (tests
    run in parallel workers): it is started again on another port."""
    for _ in range(3):
        port = free_port()
        proc = subprocess.Popen([CHROMEDRIVER, f"--port={port}"], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            if _ready(proc, port):
                yield port
                return
        finally:
            proc.terminate()
            proc.wait(timeout=WAIT_S)
    pytest.fail(f"chromedriver exited three times before it was ready (exit code {proc.returncode})")


class WebDriver:
    """One headless Chromium session of the driver on `port`, its profile in `profile`
    (`prefs`: Chromium preferences, such as where downloads go)."""

    def __init__(self, port: int, profile: Path, prefs: dict | None = None):
        self.base = f"http://127.0.0.1:{port}"
        options = {
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", f"--user-data-dir={profile}"],
        }
        if prefs:
            options["prefs"] = prefs
        caps = {"capabilities": {"alwaysMatch": {"browserName": "chrome",
                                                 "goog:chromeOptions": options}}}
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method: str, path: str, body: dict | None = None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=WAIT_S) as resp:
            return json.loads(resp.read())["value"]

    def s(self, path: str) -> str:
        return f"/session/{self.session}{path}"

    def open(self, url: str) -> None:
        self.call("POST", self.s("/url"), {"url": url})

    def script(self, source: str):
        return self.call("POST", self.s("/execute/sync"), {"script": source, "args": []})

    def quit(self) -> None:
        self.call("DELETE", self.s(""))
