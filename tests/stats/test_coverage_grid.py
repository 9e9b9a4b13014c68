"""The coverage grid's verdict on small designs, recomputed: every interval type is withheld
where the design cannot support it, and covers between 0.93 and 0.97 where it is reported.
The full grid (`make coverage`) writes docs/interval_coverage.md."""

from __future__ import annotations

import pytest

from pressurebench.stats.cluster_t import MIN_DEGREES_OF_FREEDOM
from stats_support.coverage_grid import METRICS, coverage_grid, failures

pytestmark = pytest.mark.slow


def test_designs_below_the_minimum_degrees_of_freedom_report_no_interval():
    small = tuple(k for k in (1, 2, 3, 5) if METRICS * (k - 1) < MIN_DEGREES_OF_FREEDOM)
    assert small == (1, 2, 3, 5)  # the default design (1 per metric) is among them
    cells = coverage_grid(benchmarks=300, base_per_metric=small, samples=(1, 5), iccs=(0.0, 0.5))
    for cell in cells:
        assert all(share == 0 for share in cell.reported.values()), cell


def test_every_interval_reported_at_eight_and_twelve_base_scenarios_covers_nominally():
    cells = coverage_grid(benchmarks=2000, base_per_metric=(8, 12), samples=(1, 3), iccs=(0.1, 0.5))
    for cell in cells:
        degrees = {"overall": METRICS * (cell.base_per_metric - 1),
                   "positive": 2 * (cell.base_per_metric - 1),
                   "metric (min)": cell.base_per_metric - 1}
        for name, df in degrees.items():
            assert cell.reported[name] == (1.0 if df >= MIN_DEGREES_OF_FREEDOM else 0.0), (name, cell)
        assert cell.reported["target difference"] == cell.reported["demographic gap"] == 1.0
    bad = failures(cells)
    assert not bad, [(c.base_per_metric, c.samples, c.icc, c.rate, n, c.coverage[n]) for c, n in bad]
