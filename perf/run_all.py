"""Run every measurement under perf/ in turn, each in its own process, and print all figures.

Each script prints its own table and whether it met its goal; this prints a
summary line per script at the end and exits non-zero if any missed.

Run: make perf   (or .venv/bin/python perf/run_all.py)
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

PERF = Path(__file__).resolve().parent
SCRIPTS = ("orchestration.py", "resume_cost.py", "embedded_model.py", "per_turn_judging.py",
           "stats_scaling.py", "scale.py", "stage_startup.py", "call_record.py", "prompt_caching.py")


def main() -> int:
    results = []
    for name in SCRIPTS:
        print(f"\n=== {name} ===", flush=True)
        started = time.perf_counter()
        code = subprocess.run([sys.executable, str(PERF / name)], check=False, cwd=PERF.parent).returncode
        results.append((name, code, time.perf_counter() - started))
    print("\n=== summary ===")
    for name, code, seconds in results:
        print(f"{name:<20} {'ok' if code == 0 else f'exit {code}':<8} {seconds:6.0f} s")
    return 0 if all(code == 0 for _, code, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main())
