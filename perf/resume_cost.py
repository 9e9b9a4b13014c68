"""What an interrupted simulate run costs to finish, and what a no-op `dvc repro` costs.

Resume. The real simulate stage (`pressurebench.stages.simulate.run`) runs in
a subprocess, in a scratch project with generated params and scenarios,
against a mock OpenAI server in this process that counts every request by the
hash of its body. Once half of the expected calls are answered the server
holds every further reply, waits until the client has had time to take in the
replies already sent, and the subprocess is SIGKILLed with its requests in
flight; then the stage is run again to completion. Printed: calls made by the
re-run against calls the first run left unanswered (equal when the cache
replays every finished call and nothing else), and duplicates: bodies
answered twice across both runs (the goal is 0). Holding the replies keeps
the kill out of the ~1 ms in which a reply is on the wire but not yet cached:
a reply the client never received must be asked again by any design.

No-op pipeline. `dvc repro` is timed in this repository when it has a
completed run (`dvc.lock` and a clean `dvc status`); otherwise `dvc status`,
the same up-to-date check without running anything, is timed and the output
says so.

Run: .venv/bin/python perf/resume_cost.py
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml
from common import REPO, benchmark, machine, scenarios
from conversation_server import never_ending

from mock_providers import MockLLMServer, MockRequest
from pressurebench.io import read_artifact, write_artifact, write_yaml_model
from pressurebench.paths import Layout
from pressurebench.schemas import ConversationsFile, ScenariosFile

CONVERSATIONS = 40
TURNS = 6
CONCURRENCY = 8
LATENCY_S = 0.2
SETTLE_S = 1.0  # after the last reply is sent, before the kill
EXPECTED_CALLS = CONVERSATIONS * 2 * TURNS
RUN_STAGE = "from pressurebench.stages import simulate; simulate.run('params/pipeline.yaml', 'perf', 'mock')"


def scratch_project(root: Path, base_url: str) -> None:
    params = {
        "models": {
            "mock": {"provider": "openai", "model": "perf-model", "base_url": base_url,
                     "max_concurrency": CONCURRENCY, "max_tokens": 256, "timeout_s": 30},
        },
        "roles": {"generator": "mock", "user": "mock", "evaluator": "mock"},
        "targets": ["mock"],
        "benchmarks": ["perf"],
        "generation": {"turns": TURNS, "num_samples": 1},
    }
    (root / "params").mkdir()
    (root / "params" / "pipeline.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    layout = Layout(root / "data", "perf")
    layout.root.mkdir(parents=True)
    write_yaml_model(layout.benchmark_file, benchmark())
    write_artifact(layout.scenarios_file, ScenariosFile(benchmark="perf", rows=scenarios(CONVERSATIONS)))


class HoldAfter:
    """Replies like `never_ending` until `limit` replies are given, then holds the rest."""

    def __init__(self, limit: int):
        self.limit = limit
        self.given = 0

    async def __call__(self, req: MockRequest):
        if self.given >= self.limit:
            await asyncio.Event().wait()  # held until the server stops
        self.given += 1
        return never_ending(req)


def answered(server: MockLLMServer) -> Counter[str]:
    """Completed (HTTP 200) replies per body hash."""
    return Counter(e.body_hash for e in server.request_log if e.status == 200)


def resume(server: MockLLMServer) -> dict:
    with tempfile.TemporaryDirectory(prefix="pb-perf-resume-") as tmp:
        root = Path(tmp)
        scratch_project(root, server.openai_base_url)
        stage = [sys.executable, "-c", RUN_STAGE]

        hold = HoldAfter(EXPECTED_CALLS // 2)
        server.responder = hold
        first = subprocess.Popen(stage, cwd=root, stderr=subprocess.DEVNULL)
        while hold.given < hold.limit and first.poll() is None:
            time.sleep(0.01)
        time.sleep(SETTLE_S)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        time.sleep(0.2)  # the server drops the held requests of the closed connections
        before = answered(server)
        arrived_before = server.total_requests
        server.responder = never_ending

        t0 = time.perf_counter()
        subprocess.run(stage, cwd=root, stderr=subprocess.DEVNULL, check=True)
        rerun_s = time.perf_counter() - t0
        after = answered(server)
        rows = read_artifact(Layout(root / "data", "perf").conversations_file("mock"), ConversationsFile).rows

    return {
        "answered before kill": sum(before.values()),
        "in flight at kill (unanswered)": arrived_before - sum(before.values()),
        "unfinished calls": EXPECTED_CALLS - sum(before.values()),
        "re-run calls": server.total_requests - arrived_before,
        "duplicates": sum(n - 1 for n in after.values() if n > 1),
        "re-run seconds": round(rerun_s, 2),
        "rows ok": sum(r.status == "ok" for r in rows),
        "rows": len(rows),
    }


def dvc_noop() -> tuple[str, float | None, str]:
    """(what was timed, seconds, note). `dvc repro` runs only where it has nothing to do."""
    dvc = str(Path(sys.executable).parent / "dvc")
    if not (REPO / "dvc.yaml").exists():
        return "dvc repro", None, "no dvc.yaml in the repository"
    status = subprocess.run([dvc, "status", "-q"], cwd=REPO, capture_output=True, text=True,
                            check=False)
    has_run = (REPO / "dvc.lock").exists() and status.returncode == 0
    command = [dvc, "repro"] if has_run else [dvc, "status"]
    t0 = time.perf_counter()
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        return " ".join(command[1:]), None, f"failed: {(proc.stderr or proc.stdout).strip()[-300:]}"
    if has_run:
        return "dvc repro", seconds, "completed run, nothing changed"
    stale = sum(1 for line in proc.stdout.splitlines() if line and not line.startswith((" ", "\t")))
    return "dvc status", seconds, (
        f"no completed run here ({stale} stages not up to date), so the up-to-date check that a "
        "no-op repro performs was timed without running anything"
    )


def main() -> int:
    print(f"resume cost: simulate, {CONVERSATIONS} conversations × {2 * TURNS} calls, "
          f"concurrency {CONCURRENCY}, mock latency {LATENCY_S:g} s, SIGKILL at ~50%")
    print(f"machine: {machine()}")
    with MockLLMServer(responder=never_ending, api_key=None, latency=LATENCY_S) as server:
        figures = resume(server)
    width = max(map(len, figures))
    for name, value in figures.items():
        print(f"  {name:<{width}}  {value}")
    ok = (
        figures["duplicates"] == 0
        and figures["re-run calls"] == figures["unfinished calls"]
        and figures["rows ok"] == figures["rows"] == CONVERSATIONS
    )
    print(f"resume: re-run made {figures['re-run calls']} calls for {figures['unfinished calls']} "
          f"unfinished, {figures['duplicates']} duplicates: {'met' if ok else 'MISSED'}")

    what, seconds, note = dvc_noop()
    shown = f"{seconds:.2f} s" if seconds is not None else "not measured"
    print(f"no-op pipeline: `{what}` in {REPO.name}: {shown} ({note})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
