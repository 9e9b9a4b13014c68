"""SIGKILL in the middle of simulate and evaluate, then a re-run: nothing lost, nothing asked twice.

The cache is the pipeline's checkpoint: a killed run must leave no file a
reader could take for complete while it is not, and the re-run must replay
every call that had finished (not pay for it again) and write exactly the
bytes an uninterrupted run writes.

The stage runs as `pressurebench run ...` in a child process against a mock
server in this process (fixed latency, no faults), so the server's log shows
every request of the killed run and of the re-run. Kills come at seeded
random points of two kinds:

- between calls: the server holds every reply once the k-th request arrives
  and the child has stored every reply it already got, then the child is
  killed; no request may then be answered normally twice;
- at any moment: after a random delay, possibly while a reply is on the wire;
- after the last call: within moments of the last reply, while the stage
  writes its artifacts.

After a kill of the last two kinds the re-run may repeat only calls whose
reply was not yet in the cache when the child died.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from reliability_support import (
    BENCHMARK,
    KEY_ENV,
    MOCK_KEY,
    PARAMS,
    answered,
    check_artifacts_complete,
    check_cache_entries,
    mock_params,
    write_project,
)

from mock_providers import MockLLMServer, default_responder
from pressurebench.stages import gen_metrics, gen_scenarios
from support import WAIT_S

pytestmark = pytest.mark.slow

TARGET = "target-a"
LATENCY_S = 0.08
RNG = random.Random(20250611)
STAGE_ARGS = {
    "simulate": ["run", "simulate", "--benchmark", BENCHMARK, "--target", TARGET],
    "evaluate": ["run", "evaluate", "--benchmark", BENCHMARK, "--target", TARGET],
}
OUTPUT = {"simulate": "simulate/conversations.json", "evaluate": "evaluate/scores.json"}


class HoldingResponder:
    """Default replies; once armed, holds every reply from the k-th request on.

    Held requests belong to the child about to be killed: `release()` makes
    them fail, so none of them can count as answered even if the server
    outlives the connection. They wait on an event of the server's loop, which
    `release()` (in the test's thread) sets through that loop.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._threshold: int | None = None
        self._seen = 0
        self._released: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
        self.holding = threading.Event()

    def arm(self, k: int | None) -> None:
        with self._lock:
            self._threshold, self._seen = k, 0

    def release(self) -> None:
        with self._lock:
            self._threshold = None
            released, self._released = self._released, None
        if released is not None:
            loop, event = released
            loop.call_soon_threadsafe(event.set)
        self.holding.clear()

    async def __call__(self, req):
        with self._lock:
            self._seen += 1
            hold = self._threshold is not None and self._seen >= self._threshold
            if hold and self._released is None:
                self._released = (asyncio.get_running_loop(), asyncio.Event())
            released = self._released
        if hold:
            assert released is not None
            self.holding.set()
            await released[1].wait()
            raise RuntimeError("held for a child that was killed")
        return default_responder(req)


@dataclass
class Setup:
    server: MockLLMServer
    responder: HoldingResponder
    base: Path  # metrics and scenarios written, nothing simulated
    reference: dict[str, bytes]  # stage -> the uninterrupted run's output bytes
    requests: dict[str, int]  # stage -> requests of an uninterrupted run
    busy_s: dict[str, float]  # stage -> seconds from its first request to its exit


def out_path(root: Path, stage: str) -> Path:
    return root / "data" / BENCHMARK / "runs" / TARGET / OUTPUT[stage]


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**env, KEY_ENV: MOCK_KEY}


def start(stage: str, root: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "pressurebench.commands.cli", *STAGE_ARGS[stage]],
        cwd=root, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def finish(proc: subprocess.Popen) -> None:
    _, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, err[-3000:]


def wait_for(predicate, proc: subprocess.Popen, timeout: float = 60, every: float = 0.002) -> bool:
    """True once `predicate()` holds (asked every `every` seconds); False if the child exits
    first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        if proc.poll() is not None:
            return predicate()
        time.sleep(every)
    raise AssertionError("timed out waiting for the child")


def kill(proc: subprocess.Popen) -> bool:
    """SIGKILL the child; False if it had already finished on its own."""
    if proc.poll() is not None:
        finish(proc)
        return False
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=WAIT_S)
    return True


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    responder = HoldingResponder()
    with MockLLMServer(api_key=MOCK_KEY, responder=responder, latency=LATENCY_S) as server, \
            pytest.MonkeyPatch.context() as mp:
        base = tmp_path_factory.mktemp("base")
        mp.chdir(base)
        mp.setenv(KEY_ENV, MOCK_KEY)
        seeded = {"seed": 3, "max_concurrency": 2}
        write_project(base, mock_params(
            server,
            anthropic=[],
            timeout_s=30,
            models={"user": seeded, "judge": seeded, TARGET: seeded},
            generation={"scenarios_per_metric": 3, "num_samples": 2},
        ))
        gen_metrics.run(PARAMS, BENCHMARK)
        gen_scenarios.run(PARAMS, BENCHMARK)

        ref = tmp_path_factory.mktemp("reference")
        shutil.copytree(base, ref, dirs_exist_ok=True)
        reference, requests, busy = {}, {}, {}
        for stage in ("simulate", "evaluate"):
            server.reset()
            proc = start(stage, ref)
            wait_for(lambda: server.total_requests > 0, proc)
            t0 = time.monotonic()
            finish(proc)
            busy[stage] = time.monotonic() - t0
            requests[stage] = server.total_requests
            reference[stage] = out_path(ref, stage).read_bytes()
            assert all(n == 1 for n in server.body_hash_counts.values())
        yield Setup(server, responder, base, reference, requests, busy)


def trial_dir(setup: Setup, tmp_path: Path, stage: str) -> Path:
    root = tmp_path / "project"
    shutil.copytree(setup.base, root)
    if stage == "evaluate":
        conversations = out_path(root, "simulate")
        conversations.parent.mkdir(parents=True)
        conversations.write_bytes(setup.reference["simulate"])
    return root


def check_after_kill(root: Path) -> None:
    check_artifacts_complete(root / "data")
    check_cache_entries(root / ".pbcache")


def every_answer_cached(server: MockLLMServer, root: Path) -> bool:
    sent = {sent_signature(e.body) for e in answered(server.request_log)}
    return sent <= cached_signatures(root / ".pbcache")


def sent_signature(body: dict) -> str:
    """What identifies an OpenAI-style request body (sampling settings are fixed per model)."""
    return json.dumps([body["model"], body["messages"], body["max_tokens"], body.get("seed")], sort_keys=True)


def cached_signatures(cache_dir: Path) -> set[str]:
    """The requests whose replies the cache holds (the provider sends the model's seed + sample)."""
    out = set()
    for path in cache_dir.rglob("*.json"):
        if path.name.startswith("."):
            continue
        m = json.loads(path.read_text())["request"]
        seed = None if m["seed"] is None else m["seed"] + m["sample"]
        out.add(json.dumps([m["model"], m["messages"], m["max_tokens"], seed], sort_keys=True))
    return out


TRIALS = (
    [("simulate", "between_calls")] * 5 + [("simulate", "any_moment")] * 2
    + [("simulate", "after_last_call")] * 2
    + [("evaluate", "between_calls")] * 3 + [("evaluate", "any_moment")] * 2
    + [("evaluate", "after_last_call")]
)
TRIAL_SEEDS = [RNG.randrange(2**32) for _ in TRIALS]


@pytest.mark.parametrize(("stage", "kind", "seed"), [(s, k, x) for (s, k), x in zip(TRIALS, TRIAL_SEEDS)],
                         ids=[f"{s}-{k}-{i}" for i, (s, k) in enumerate(TRIALS)])
def test_killed_run_resumes_without_repeats_and_writes_the_same_bytes(setup, tmp_path, stage, kind, seed):
    rng = random.Random(seed)
    server, responder = setup.server, setup.responder
    root = trial_dir(setup, tmp_path, stage)
    server.reset()
    kills = 0
    for _ in range(rng.choice([1, 2])):
        mark = server.total_requests
        if kind == "between_calls":
            responder.arm(rng.randint(1, max(1, setup.requests[stage] - mark)))
            proc = start(stage, root)
            reached = wait_for(responder.holding.is_set, proc)
            if reached:  # and the child has cached every reply it was sent
                wait_for(lambda: every_answer_cached(server, root), proc, every=0.05)
        elif kind == "any_moment":
            proc = start(stage, root)
            wait_for(lambda mark=mark: server.total_requests > mark, proc)
            time.sleep(rng.uniform(0, setup.busy_s[stage] * 1.2))
        else:  # while the artifacts are written: every call has been answered
            proc = start(stage, root)
            wait_for(lambda: len(answered(server.request_log)) >= setup.requests[stage], proc)
            time.sleep(rng.uniform(0, 0.03))
        killed = kill(proc)
        responder.release()
        if not killed:
            break
        kills += 1
        check_after_kill(root)
        cached_at_kill = cached_signatures(root / ".pbcache")
        mark = server.total_requests
        if kind != "between_calls":
            break

    finish(start(stage, root))
    log = server.request_log
    if kind == "between_calls":
        assert kills, "the child must have reached the request it was to be killed at"
        twice = [h for h, n in Counter(e.body_hash for e in answered(log)).items() if n > 1]
        assert not twice, f"{len(twice)} requests were answered twice"
    elif kills:
        repeated = [e for e in log[mark:] if sent_signature(e.body) in cached_at_kill]
        assert not repeated, f"the re-run asked {len(repeated)} calls the cache already held"
    assert out_path(root, stage).read_bytes() == setup.reference[stage]
    check_after_kill(root)
