"""Intervals contain the truth as often as they claim; ones that ignore clustering do not."""

from __future__ import annotations

import pytest

from stats_support.coverage import coverage_study


@pytest.mark.slow
def test_cluster_t_covers_the_true_rate_and_the_naive_interval_does_not():
    result = coverage_study(1000, confidence_level=0.95, seed=2024)
    print(
        f"\ncoverage over {result.benchmarks} simulated benchmarks: "
        f"cluster-t {result.cluster:.3f}, rows as clusters {result.naive_rows:.3f}"
    )
    assert 0.93 <= result.cluster <= 0.97
    assert result.naive_rows < 0.90
