"""Ctrl-C during a stage's model calls: every stage stops the same documented way, and a re-run
pays for nothing the provider had already answered.

A real SIGINT goes to a stage command started as `dvc repro` starts one (`python -m
pressurebench.pipeline.notebook_run`, which relays it to the stage's own process) or as
`pressurebench run` does. The mock server holds every reply until the test lets it go, so the
stop always finds calls in flight; each step waits for the state it asserts (the calls held,
the stop announced), never for a fixed time. Then: exit 130, one line saying what happened and
what the next run does, no traceback; no call sent after the stop; the calls that were in
flight answered and cached, so the re-run sends none of them again. A second Ctrl-C stops at
once, and says that the calls still in flight were abandoned.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from reliability_support import BENCHMARK, KEY_ENV, MOCK_KEY, PARAMS, mock_params, write_project

from mock_providers import MockLLMServer, default_responder
from pressurebench.stages import evaluate, gen_metrics, gen_scenarios, simulate
from support import REPO, WAIT_S

pytestmark = pytest.mark.slow

TARGET = "target-a"
AT_ONCE = 3  # calls in flight per model
NOTEBOOKS = {"simulate": "03_simulate", "evaluate": "04_evaluate"}
STOPPING = "pressurebench: stopping on Ctrl-C: no further model call is sent"


class Gate:
    """Default replies, held while the gate is shut. Held requests wait on an event of the
    server's loop, which `open()` (in the test's thread) sets through that loop."""

    def __init__(self):
        self._lock = threading.Lock()
        self._shut = False
        self._held: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    def shut(self) -> None:
        with self._lock:
            self._shut = True

    def open(self) -> None:
        with self._lock:
            self._shut = False
            held, self._held = self._held, None
        if held is not None:
            loop, event = held
            loop.call_soon_threadsafe(event.set)

    async def __call__(self, req):
        with self._lock:
            if self._shut and self._held is None:
                self._held = (asyncio.get_running_loop(), asyncio.Event())
            held = self._held if self._shut else None
        if held is not None:
            await held[1].wait()
        return default_responder(req)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The server and a project whose metrics, scenarios and conversations exist."""
    gate = Gate()
    with MockLLMServer(api_key=MOCK_KEY, responder=gate) as server, \
            pytest.MonkeyPatch.context() as mp:
        base = tmp_path_factory.mktemp("base")
        mp.chdir(base)
        mp.setenv(KEY_ENV, MOCK_KEY)
        limit = {"max_concurrency": AT_ONCE}
        write_project(base, mock_params(
            server, timeout_s=WAIT_S, models={"user": limit, "judge": limit, TARGET: limit},
            generation={"scenarios_per_metric": 3}))
        gen_metrics.run(PARAMS, BENCHMARK)
        gen_scenarios.run(PARAMS, BENCHMARK)
        simulate.run(PARAMS, BENCHMARK, TARGET)
        yield server, gate, base


def command(stage: str, how: str, root: Path) -> list[str]:
    if how == "pressurebench run":
        return [sys.executable, "-m", "pressurebench.commands.cli", "run", stage,
                "--benchmark", BENCHMARK, "--target", TARGET]
    return [sys.executable, "-m", "pressurebench.pipeline.notebook_run",
            str(REPO / "notebooks" / f"{NOTEBOOKS[stage]}.ipynb"),
            str(root / "reports" / stage), "-p", "benchmark", BENCHMARK, "-p", "target", TARGET]


class Stage:
    """A stage command in a child process, its stderr read line by line as it comes."""

    def __init__(self, cmd: list[str], root: Path):
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        self.proc = subprocess.Popen(cmd, cwd=root, env={**env, KEY_ENV: MOCK_KEY},
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, what: str, predicate) -> None:
        deadline = time.monotonic() + WAIT_S
        while not predicate():
            assert self.proc.poll() is None, (what, self.proc.returncode, self.lines[-20:])
            if time.monotonic() > deadline:
                pytest.fail(f"hung waiting for {what}: {self.lines[-20:]}")
            time.sleep(0.02)

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def end(self) -> tuple[int, list[str]]:
        code = self.proc.wait(timeout=WAIT_S)
        self.reader.join(timeout=WAIT_S)
        return code, [line.split("\r")[-1] for line in self.lines if line.strip()]


def start_held(served, tmp_path, stage: str, how: str) -> tuple[Stage, Path]:
    """The stage started on a fresh copy of the project, with its first calls held in flight."""
    server, gate, base = served
    root = tmp_path / "project"
    shutil.copytree(base, root)
    if stage == "simulate":  # the copy's conversations were made already: forget their calls
        shutil.rmtree(root / ".pbcache")
        (root / "data" / BENCHMARK / "runs" / TARGET / "simulate" / "calls.jsonl").unlink()
    server.reset()
    gate.shut()
    running = Stage(command(stage, how, root), root)
    running.wait_for(f"{AT_ONCE} calls in flight", lambda: server.in_flight == AT_ONCE)
    return running, root


@pytest.mark.parametrize("how", ["dvc repro's command", "pressurebench run"])
@pytest.mark.parametrize("stage", ["simulate", "evaluate"])
def test_ctrl_c_lets_the_calls_in_flight_finish_then_stops_with_130_and_one_line(
        served, tmp_path, monkeypatch, stage, how):
    server, gate, _ = served
    running, root = start_held(served, tmp_path, stage, how)
    held = [e.body_hash for e in server.request_log]
    assert len(held) == AT_ONCE

    running.proc.send_signal(signal.SIGINT)
    running.wait_for("the stop to be announced", lambda: running.said(STOPPING))
    assert running.said(f"waiting for the {AT_ONCE} calls already sent to be answered")
    gate.open()
    code, lines = running.end()

    assert code == 130, lines
    last = lines[-1]
    assert last.startswith("pressurebench: ") and "stopped by Ctrl-C (SIGINT): no model call " \
        f"was sent after it, the {AT_ONCE} calls already sent were let finish and what they " \
        "answered is cached" in last, lines
    said = "\n".join(lines)
    for crash in ("Traceback", "KeyboardInterrupt", "please report", "does not expect"):
        assert crash not in said, lines
    assert sum(line.startswith("pressurebench: ") for line in lines) == 2  # the notice, the stop
    assert [e.body_hash for e in server.request_log] == held  # nothing sent after the stop
    assert all(e.status == 200 for e in server.request_log)

    # The re-run replays what the provider answered before the stop: none of it is sent again.
    monkeypatch.chdir(root)
    server.reset()
    (simulate if stage == "simulate" else evaluate).run(PARAMS, BENCHMARK, TARGET)
    assert server.total_requests > 0
    assert not set(held) & {e.body_hash for e in server.request_log}


def test_a_second_ctrl_c_stops_at_once_and_says_the_calls_in_flight_were_abandoned(
        served, tmp_path):
    server, gate, _ = served
    running, _ = start_held(served, tmp_path, "evaluate", "dvc repro's command")
    running.proc.send_signal(signal.SIGINT)
    running.wait_for("the stop to be announced", lambda: running.said(STOPPING))
    running.proc.send_signal(signal.SIGINT)
    try:
        code, lines = running.end()
        # Ended with its calls still held: it did not wait for them, none was answered.
        assert len(server.request_log) == AT_ONCE
        assert not any(e.status == 200 for e in server.request_log)
    finally:
        gate.open()
    assert code == 130, lines
    assert lines[-1].startswith("pressurebench: evaluate · tiny · target-a stopped by Ctrl-C "
                                "(SIGINT) before it finished"), lines
    assert "calls still waiting for an answer were abandoned and are sent again" in lines[-1]
    assert not any("Traceback" in line for line in lines), lines
