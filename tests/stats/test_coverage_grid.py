"""The coverage grid's verdict on each rule, recomputed on a small seeded grid: below its rule a
statistic is withheld, at its rule it covers within the band. The full grid (`make coverage`)
writes docs/interval_coverage.md."""

from __future__ import annotations

import numpy as np

from pressurebench.stats.interval_rules import RATE
from stats_support.coverage_grid import (
    HIGH,
    LOW,
    STATISTICS,
    coverage_grid,
    monte_carlo_error,
    rule_of,
    simulate_cell,
)

# Over-covering at their rules where the grid says so (docs/interval_coverage.md): a metric's
# rate and difference near a rate of 1 (up to 0.98-0.99: 6-10 rows per metric cover in steps),
# per-metric gaps (up to 1.00: with one or two discordant base scenarios the t statistic is at
# most 1), and at 3 base scenarios per metric of 4 metrics, ICC 0.5, the pooled rates and the
# demographic gap (0.977-0.992). The rules guard the lower side; every other interval must stay
# below HIGH too.
CONSERVATIVE = {
    "overall",
    "positive",
    "demographic gap",
    "metric (max)",
    "metric (min)",
    "metric difference (max)",
    "metric difference (min)",
    "metric gap (max)",
    "metric gap (min)",
}


def test_every_rule_covers_within_the_band_at_its_threshold():
    """4 metrics, 2 samples, ICC 0.1 and 0.5, rates 0.7 and 0.85, 600 benchmarks per cell, at
    each rule's threshold: none short of LOW by more than two Monte-Carlo standard errors (the
    tolerance of `measured_rules`: the lowest of four metrics' coverages at 600 benchmarks
    falls that far below a true coverage near LOW by chance), and none over HIGH but the
    conservative ones."""
    thresholds = tuple(sorted({rule_of(name) for name in STATISTICS}))
    benchmarks = 600
    cells = coverage_grid(
        benchmarks=benchmarks, metrics=(4,), base_per_metric=thresholds, samples=(2,),
        iccs=(0.1, 0.5), seed=7,
    )
    low = LOW - 2 * monte_carlo_error(benchmarks, 0.95)
    outside = [
        (name, c.base_per_metric, c.icc, c.rate, round(c.coverage[name], 3))
        for c in cells
        for name in STATISTICS
        if c.base_per_metric == rule_of(name)
        and not (low <= c.coverage[name] and (name in CONSERVATIVE or c.coverage[name] <= HIGH))
    ]
    assert not outside, outside


def test_below_its_rule_a_statistic_is_withheld_with_the_design_that_gives_one():
    """Without the grid's lowering, 2 base scenarios per metric of 4 metrics give no pooled
    rate interval; the rule's threshold gives one to every benchmark."""
    rng = np.random.default_rng(3)
    below = simulate_cell(RATE.pooled - 1, 2, 0.1, 0.7, 0.15, benchmarks=50,
                          confidence_level=0.95, rng=rng)
    at = simulate_cell(RATE.pooled, 2, 0.1, 0.7, 0.15, benchmarks=50, confidence_level=0.95,
                       rng=rng)
    assert below.reported["overall"] == 0 and below.coverage["overall"] is None
    assert at.reported["overall"] == 1
    assert below.reported["metric (min)"] == at.reported["metric (min)"] == 0
