"""Inspect's own log viewer shows an exported conversation: `inspect view bundle` builds the
static viewer (https://inspect.aisi.org.uk/log-viewer.html, "Publishing"), served here over
local HTTP as a web host would, and opened in headless Chromium through chromedriver's W3C
WebDriver interface. The test waits for the state it asserts (the page's text holding the
turns), never for a time; the deadline only bounds a page that never gets there.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from browser_support import WebDriver, chromedriver, needs_browser
from pressurebench.commands.cli import main
from pressurebench.io import read_artifact
from pressurebench.paths import Layout, inspect_log_file, inspect_logs_dir
from pressurebench.schemas import ConversationsFile
from pressurebench.stats.results import Results
from support import WAIT_S

pytest.importorskip("inspect_ai")
pytestmark = pytest.mark.slow

INSPECT = Path(sys.executable).with_name("inspect")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


class Browser(WebDriver):
    """Headless Chromium: open a URL, read the page's text once it shows what is wanted."""

    def text_once_it_shows(self, wanted: list[str]) -> str:
        """The page's text once it holds every string of `wanted` (the viewer loads the log
        in its own time), or what it holds at the deadline."""
        deadline = time.monotonic() + WAIT_S
        while True:
            text = self.script("return document.body.innerText")
            if all(w in text for w in wanted) or time.monotonic() > deadline:
                return text
            time.sleep(0.1)


@pytest.fixture
def served(run_dir):
    """The exported logs as Inspect's static viewer, served over local HTTP."""
    assert main(["export", "inspect", "--benchmark", "tiny"]) == 0
    done = subprocess.run([str(INSPECT), "view", "bundle", "--log-dir", str(inspect_logs_dir("reports", "tiny")),
                           "--output-dir", "bundle"], capture_output=True, text=True,
                          timeout=WAIT_S, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(_Quiet, directory=str(run_dir / "bundle")))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@needs_browser
def test_the_viewer_lists_the_logs_and_shows_a_conversations_turns(run_dir, served, tmp_path):
    conv = next(c for c in read_artifact(run_dir / Layout("data", "tiny").conversations_file("target-b"),
                                         ConversationsFile).rows if c.status == "ok")
    with chromedriver() as port:
        browser = Browser(port, tmp_path / "profile")
        try:
            browser.open(served)
            listing = browser.text_once_it_shows(["pressurebench/tiny", "anthropic/target-b-model"])
            assert "openai/target-a-model" in listing and "anthropic/target-b-model" in listing
            results = read_artifact(run_dir / Layout("data", "tiny").results_file, Results)
            for target in results.targets.values():  # each log's headline: its overall pass rate
                assert f"{round(target.overall.rate, 3):g}" in listing.split()
            log = inspect_log_file("", None, "target-b").as_posix()
            browser.open(f"{served}#/logs/{log}/samples/sample/{conv.scenario_id}/{conv.sample + 1}")
            turns = [m.content for m in conv.transcript]
            text = browser.text_once_it_shows(turns)
            for turn in turns:
                assert turn in text
            assert "ASSISTANT" in text.upper() and "USER" in text.upper()
        finally:
            browser.quit()
