"""How often the intervals contain the true pass rate: the check that they are honest.

Simulates many benchmarks with a known true rate and strong within-scenario
correlation (`synthetic_scores`), and counts how often each interval covers
the truth: the cluster-t interval as the results report it, from the scores
frame through `rate_estimate`, and the same interval computed as if every row
were its own base scenario (the naive one that ignores clustering). Run
`cd tests && python -m stats_support.coverage` to print the figures;
`stats_support.coverage_grid` does the same over a grid of designs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.estimates import RateEstimate
from pressurebench.stats.rates import rate_estimate

from .synthetic import synthetic_scores

TRUE_RATE = 0.7
# Six metrics of twelve base scenarios, three demographic variants each, three
# samples per variant: 648 rows with an intra-scenario correlation of 1/3.
DESIGN = {
    "metrics": 6,
    "base_per_metric": 12,
    "axes": {"persona": ["p1", "p2", "p3"]},
    "samples": 3,
    "concentration": 2.0,
    "metric_spread": 0.15,
}


@dataclass(frozen=True)
class Coverage:
    """Shares of simulated benchmarks whose interval contains the true rate."""

    benchmarks: int
    confidence_level: float
    cluster: float
    naive_rows: float


def _covers(estimate: RateEstimate, truth: float) -> bool:
    return estimate.ci_low is not None and estimate.ci_low <= truth <= estimate.ci_high


def coverage_study(
    benchmarks: int = 1000, *, confidence_level: float = 0.95, seed: int = 2024
) -> Coverage:
    """Coverage of the cluster-t interval and of the same interval with rows as clusters."""
    rng = np.random.default_rng(seed)
    hits = np.zeros(2)
    for _ in range(benchmarks):
        scores = synthetic_scores(target_rates={"target": TRUE_RATE}, seed=rng, **DESIGN)
        rows = scores.assign(base_id=[f"row{i}" for i in range(len(scores))], metric_id="all")
        for i, frame in enumerate((scores, rows)):
            bootstrap = ClusterBootstrap.from_scores(frame, resamples=1, seed=0)
            estimate = rate_estimate(frame, bootstrap, confidence_level=confidence_level)
            hits[i] += _covers(estimate, TRUE_RATE)
    cluster, naive_rows = hits / benchmarks
    return Coverage(
        benchmarks=benchmarks,
        confidence_level=confidence_level,
        cluster=float(cluster),
        naive_rows=float(naive_rows),
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=1000)
    parser.add_argument("--confidence-level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    result = coverage_study(args.benchmarks, confidence_level=args.confidence_level, seed=args.seed)
    print(
        f"coverage of nominal {result.confidence_level:.0%} intervals over {result.benchmarks} "
        f"simulated benchmarks (true rate {TRUE_RATE}):"
    )
    print(f"  cluster-t over base scenarios within metrics (as reported): {result.cluster:.3f}")
    print(f"  the same with every row its own base scenario (naive):      {result.naive_rows:.3f}")


if __name__ == "__main__":
    main()
