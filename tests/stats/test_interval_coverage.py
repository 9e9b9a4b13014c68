"""Intervals contain the truth as often as they claim; ones that ignore clustering do not.

Many benchmarks with a known true rate and strong within-scenario correlation
(`synthetic_scores`) go through the scores frame and `rate_estimate`, as the results report
them, and again as if every row were its own base scenario (the naive interval that ignores
clustering)."""

from __future__ import annotations

import numpy as np
import pytest

from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.rates import rate_estimate
from pressurebench.stats.sweeps.synthetic import synthetic_scores

TRUE_RATE = 0.7
# Six metrics of twelve base scenarios, three demographic variants each, three samples per
# variant: 648 rows with an intra-scenario correlation of 1/3.
DESIGN = {
    "metrics": 6,
    "base_per_metric": 12,
    "axes": {"persona": ["p1", "p2", "p3"]},
    "samples": 3,
    "concentration": 2.0,
    "metric_spread": 0.15,
}


def coverage_study(benchmarks: int, seed: int) -> tuple[float, float]:
    """Shares of simulated benchmarks whose cluster-t interval, and whose interval with rows
    as clusters, contain the true rate."""
    rng = np.random.default_rng(seed)
    hits = np.zeros(2)
    for _ in range(benchmarks):
        scores = synthetic_scores(target_rates={"target": TRUE_RATE}, seed=rng, **DESIGN)
        rows = scores.assign(base_id=[f"row{i}" for i in range(len(scores))], metric_id="all")
        for i, frame in enumerate((scores, rows)):
            bootstrap = ClusterBootstrap.from_scores(frame, resamples=1, seed=0)
            estimate = rate_estimate(frame, bootstrap, confidence_level=0.95)
            hits[i] += estimate.ci_low is not None and estimate.ci_low <= TRUE_RATE <= estimate.ci_high
    cluster, naive_rows = hits / benchmarks
    return float(cluster), float(naive_rows)


@pytest.mark.slow
def test_cluster_t_covers_the_true_rate_and_the_naive_interval_does_not():
    cluster, naive_rows = coverage_study(1000, seed=2024)
    print(f"\ncoverage over 1000 simulated benchmarks: cluster-t {cluster:.3f}, "
          f"rows as clusters {naive_rows:.3f}")
    assert 0.93 <= cluster <= 0.97
    assert naive_rows < 0.90
