"""What a pipeline stage costs beyond its own work: `dvc repro -f -s aggregate@<b>` against the
stage's `run` called in a fresh process.

A scratch copy of the repository (tiny params, every model served by the mock
server in this process) is reproduced cold once, whole (DVC reads its lock file
on every command, so the lock is the one this dvc.yaml writes); then, in turn
and `--repeats` times:

- `dvc repro -f -s aggregate@<b>`: DVC, the stage command (`notebook_run`: the
  notebook's cells in a fresh process of their own, its report rendered), DVC's
  bookkeeping;
- the stage command alone, without DVC;
- `pressurebench.stages.aggregate.run` in a fresh `python -c`: imports and the
  stage's work, the floor of a stage started cold (its call alone is printed too).

Printed: the median wall time of each and the ratios, measured in one run.
Goal: `dvc repro -f -s` within 3.2x the stage's own run in a fresh process
(2.5 s against 0.77 s on an idle two-core machine).

Run: .venv/bin/python perf/stage_startup.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, machine

from mock_providers import MockLLMServer

BENCHMARK = "pressure-core"
STAGE = f"aggregate@{BENCHMARK}"
GOAL_RATIO = 3.2
KEY = "perf-mock-key"
RUN_STAGE = (
    "import time; t = time.perf_counter(); from pressurebench.stages import aggregate; "
    f"s = time.perf_counter(); aggregate.run('params/pipeline.yaml', {BENCHMARK!r}); "
    "print(time.perf_counter() - s)"
)


def pipeline_conftest():
    """tests/pipeline/conftest.py: the scratch copy of the repository its tests use."""
    sys.path.insert(0, str(REPO / "tests" / "pipeline"))
    spec = importlib.util.spec_from_file_location("pipeline_conftest", REPO / "tests/pipeline/conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(cmd: list[str], root: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return seconds, proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    conftest = pipeline_conftest()
    env = {**os.environ, "PB_MOCK_KEY": KEY,
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    with MockLLMServer(api_key=KEY) as server, tempfile.TemporaryDirectory() as tmp:
        root = conftest.copy_repository(Path(tmp) / "repo", server.openai_base_url)
        (root / "dvc.lock").unlink(missing_ok=True)
        print(f"machine: {machine()}", flush=True)
        cold, _ = timed(["dvc", "repro"], root, env)
        lock_lines = len((root / "dvc.lock").read_text().splitlines())
        print(f"cold `dvc repro` of the scratch copy: {cold:.1f} s; dvc.lock {lock_lines} lines", flush=True)
        rows: dict[str, list[float]] = {k: [] for k in ("repro", "command", "process", "call")}
        command = [sys.executable, "-m", "pressurebench.pipeline.notebook_run", "notebooks/05_aggregate.ipynb",
                   f"reports/{BENCHMARK}/05_aggregate", "-p", "benchmark", BENCHMARK]
        for _ in range(args.repeats):
            rows["repro"].append(timed(["dvc", "repro", "-f", "-s", STAGE], root, env)[0])
            rows["command"].append(timed(command, root, env)[0])
            seconds, out = timed([sys.executable, "-c", RUN_STAGE], root, env)
            rows["process"].append(seconds)
            rows["call"].append(float(out.split()[-1]))
        print(f"machine after: {machine()}")
    med = {k: statistics.median(v) for k, v in rows.items()}
    labels = {
        "repro": f"dvc repro -f -s {STAGE}",
        "command": "the stage command alone",
        "process": "aggregate.run in a fresh python -c",
        "call": "aggregate.run, the call alone",
    }
    print(f"\n{'':<52} {'median s':>9}  runs")
    for key, label in labels.items():
        print(f"{label:<52} {med[key]:>9.2f}  {', '.join(f'{v:.2f}' for v in rows[key])}")
    ratio = med["repro"] / med["process"]
    print(f"\ndvc repro / the stage's run in a fresh process: {ratio:.2f} (goal <= {GOAL_RATIO})")
    print(f"dvc repro - stage command (DVC's own share): {med['repro'] - med['command']:.2f} s")
    return 0 if ratio <= GOAL_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
