"""The design sweep's verdict on the capitulation and sensitivity rules, recomputed on a small
seeded part of it: at and above each package rule no interval covers less than 0.93 beyond
Monte-Carlo error. The full sweep (`make capitulation-coverage`) writes
docs/capitulation_coverage.md."""

from __future__ import annotations

from pressurebench.stats.sweeps import capitulation as capitulation_coverage
from pressurebench.stats.sweeps import sensitivity as sensitivity_coverage
from pressurebench.stats.sweeps.common import LOW, Sweep, monte_carlo_error

BENCHMARKS = 2000


def _short(cells, statistics, rule_of) -> list[tuple]:
    """Cells the package reports (at or above the statistic's rule) whose coverage falls short
    of LOW by more than the two Monte-Carlo standard errors `measured_rules` allows."""
    low = LOW - 2 * monte_carlo_error(BENCHMARKS, 0.95)
    return [
        (name, c.metrics, c.base_per_metric, round(c.coverage[name], 3))
        for c in cells
        for name in statistics
        if c.base_per_metric >= rule_of(name)
        and (c.coverage[name] is None or c.coverage[name] < low)
    ]


def test_capitulation_rules_are_never_below_what_the_sweep_measures():
    """4 metrics, 3 and 5 base scenarios per metric, 1 or 4 conversations, the strongly
    clustered hazard (the setting that decides the curve difference's rule): bands, one
    metric's band and the curve difference cover at their rules and above."""
    cells = capitulation_coverage.sweep(
        Sweep(benchmarks=BENCHMARKS, seed=5, metrics=(4,), base_per_metric=(3, 5)),
        per_base=(1, 4), hazards=("Beta(0.25, 1), ICC 0.44",),
    )
    assert {c.base_per_metric for c in cells} == {3, 5}
    assert not _short(cells, capitulation_coverage.SWEEP_STATISTICS,
                      capitulation_coverage.rule_of)
    assert all(c.reported["band"] > 0.99 for c in cells)


def test_sensitivity_rule_is_never_below_what_the_sweep_measures():
    """4 metrics, 3 and 20 base scenarios per metric, 1 or 4 conversations, ICC 0.5 of passing
    and of breaking: the sensitivity difference over all metrics and on one metric covers at
    its rule and above (on one metric a symmetric cluster-t interval fell to 0.70–0.90 here)."""
    cells = sensitivity_coverage.grid(
        Sweep(benchmarks=BENCHMARKS, seed=9, metrics=(4,), base_per_metric=(3, 20)),
        samples=(1, 4), iccs=(0.5,),
    )
    assert not _short(cells, sensitivity_coverage.STATISTICS, sensitivity_coverage.rule_of)
