"""How the statistics scale with the number of score rows.

Builds synthetic benchmarks of about 1k, 10k and 100k score rows (2 targets,
8 metrics, 2 demographic axes giving 6 variants per base scenario, 5 samples,
a panel of 3 judges, 3% errors, intra-scenario correlation 1/3), runs
`build_results` with 2000 resamples on each and prints rows, seconds, peak
traced memory and the growth from the previous size. The 100k case has a
budget of 10 seconds; the script exits non-zero when it is exceeded.

Run: .venv/bin/python perf/stats_scaling.py
"""

from __future__ import annotations

import sys
import time
import tracemalloc

import common  # noqa: F401 - puts the test support code (tests/) on the path

from pressurebench.stats.results import build_results
from pressurebench.stats.sweeps.synthetic import synthetic_scores

RESAMPLES = 2000
BUDGET_S = 10.0
# base scenarios per metric: rows = 2 targets × 8 metrics × base × 6 variants × 5 samples
BASE_PER_METRIC = (2, 21, 208)


def scores_of(base_per_metric: int):
    return synthetic_scores(
        target_rates={"model-a": 0.65, "model-b": 0.55},
        metrics=8,
        base_per_metric=base_per_metric,
        axes={"age": ["teen", "adult", "senior"], "gender": ["female", "male"]},
        samples=5,
        error_rate=0.03,
        judges=3,
        seed=base_per_metric,
    )


def run(scores) -> None:
    build_results(scores, resamples=RESAMPLES, confidence_level=0.95, seed=1, benchmark="perf")


def main() -> int:
    run(scores_of(1))  # warm-up: imports and first-call costs are not part of any size
    header = f"{'rows':>8} {'seconds':>8} {'peak MB':>8} {'time x':>7} {'rows x':>7}"
    print(f"build_results, {RESAMPLES} resamples")
    print(header)
    print("-" * len(header))
    previous = None
    seconds = 0.0
    for base in BASE_PER_METRIC:
        scores = scores_of(base)
        start = time.perf_counter()
        run(scores)
        seconds = time.perf_counter() - start
        tracemalloc.start()
        run(scores)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        growth = (
            f"{seconds / previous[1]:>7.1f} {len(scores) / previous[0]:>7.1f}"
            if previous
            else f"{'-':>7} {'-':>7}"
        )
        print(f"{len(scores):>8} {seconds:>8.2f} {peak / 2**20:>8.1f} {growth}")
        previous = (len(scores), seconds)
    within = seconds < BUDGET_S
    print(
        f"largest case: {seconds:.2f} s, budget {BUDGET_S:.0f} s: {'ok' if within else 'EXCEEDED'}"
    )
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
