"""The coverage grid's verdict on each rule, recomputed on a small seeded grid: below its rule a
statistic is withheld, at its rule it covers within the band. The full grid (`make coverage`)
writes docs/interval_coverage.md."""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

from pressurebench.stats.cluster_t import degrees_of_freedom_scaled, t_quantile
from pressurebench.stats.interval_rules import DIFFERENCE, RATE
from pressurebench.stats.sweeps.common import (
    HIGH,
    LOW,
    Sweep,
    band_rules,
    measured_rules,
    monte_carlo_error,
)
from pressurebench.stats.sweeps.grid import STATISTICS, Cell, coverage_grid, rule_of, simulate_cell

# Within the band at their rules, as the grid finds them (docs/interval_coverage.md): every other
# interval over-covers at its threshold in some cell, by design or by what makes it hold in the
# stress grid: paired differences through the continuity correction of their correlation (up to
# 0.99-1.00 on one metric at 5 base scenarios), rates over metrics through Satterthwaite's
# degrees of freedom of the metric that carries the variance, one metric's intervals on its own
# 4 degrees of freedom, per-metric gaps with at most a t of 1 from one or two discordant
# scenarios. The rules guard the lower side.
IN_BAND = {"independent contrast"}


def test_every_rule_covers_within_the_band_at_its_threshold():
    """4 metrics, 2 samples, ICC 0.1 and 0.5, rates 0.7 and 0.85, 600 benchmarks per cell, at
    each rule's threshold: none short of LOW by more than two Monte-Carlo standard errors (the
    tolerance of `measured_rules`: the lowest of four metrics' coverages at 600 benchmarks
    falls that far below a true coverage near LOW by chance), and the in-band ones not over
    HIGH."""
    thresholds = tuple(sorted({rule_of(name) for name in STATISTICS}))
    benchmarks = 600
    cells = coverage_grid(
        Sweep(benchmarks=benchmarks, seed=7, metrics=(4,), base_per_metric=thresholds),
        samples=(2,), iccs=(0.1, 0.5),
    )
    low = LOW - 2 * monte_carlo_error(benchmarks, 0.95)
    outside = [
        (name, c.base_per_metric, c.icc, c.rate, round(c.coverage[name], 3))
        for c in cells
        for name in STATISTICS
        if c.base_per_metric == rule_of(name)
        and not (low <= c.coverage[name] and (name not in IN_BAND or c.coverage[name] <= HIGH))
    ]
    assert not outside, outside


def test_below_its_rule_a_statistic_is_withheld_with_the_design_that_gives_one():
    """Without the grid's lowering, one base scenario per metric below the rate's rule gives no
    rate interval, pooled or on one metric, while a difference between targets (its own rule)
    is reported; the rule's threshold gives a rate interval to every benchmark."""
    rng = np.random.default_rng(3)
    below = simulate_cell(RATE.pooled - 1, 2, 0.1, 0.7, 0.15, benchmarks=50,
                          confidence_level=0.95, rng=rng)
    at = simulate_cell(RATE.pooled, 2, 0.1, 0.7, 0.15, benchmarks=50, confidence_level=0.95,
                       rng=rng)
    assert below.reported["overall"] == 0 and below.coverage["overall"] is None
    assert at.reported["overall"] == 1
    assert below.reported["metric (min)"] == 0 and at.reported["metric (min)"] == 1
    assert DIFFERENCE.pooled < RATE.pooled and below.reported["target difference"] == 1


def _cell(k: int, **coverage: float) -> Cell:
    values = {name: coverage.get(name.replace(" ", "_"), 0.95) for name in STATISTICS}
    return Cell(4, k, 2, 0.1, 0.7, coverage=values, reported=dict.fromkeys(STATISTICS, 1.0))


def test_the_band_holds_from_the_design_where_no_larger_one_leaves_it_beyond_monte_carlo_error():
    """"in band from" reads both sides of the band with the same two-error tolerance as the
    rules read the lower one: a cell just above HIGH but within the error is in band, one
    beyond it is not, and a short cell at a larger design moves the verdict past it."""
    tolerance = 2 * monte_carlo_error(1000, 0.95)
    cells = [
        _cell(3, overall=HIGH + 2 * tolerance, positive=HIGH + tolerance / 2),
        _cell(5, overall=0.95, positive=0.95, target_difference=LOW - 2 * tolerance),
        _cell(8),
    ]
    found = band_rules(cells, 1000, STATISTICS)
    assert found["overall"] == 5
    assert found["positive"] == 3
    assert found["target difference"] == 8
    assert measured_rules(cells, 1000, STATISTICS)["overall"] == 3  # not short: wide is not withheld


def test_the_quantile_sensitivity_measures_the_same_benchmarks_with_a_narrower_quantile():
    """`only` draws a design's cells from the streams the whole grid gives them, so a factor
    of 1 reproduces the grid's cells and the normal quantile differs from them only through
    the quantile: never wider, so never covering more."""
    run = Sweep(benchmarks=60, seed=11, metrics=(4,), base_per_metric=(3, 5))
    kwargs = {"samples": (2,), "iccs": (0.1,)}
    whole = coverage_grid(run, **kwargs)
    only = frozenset({(4, 5)})
    again = coverage_grid(run, **kwargs, only=only)
    normal = coverage_grid(run, **kwargs, only=only, df_factor=math.inf)
    assert [c.coverage for c in again] == [c.coverage for c in whole if c.base_per_metric == 5]
    names = ("overall", "positive", "target difference", "demographic gap")
    pairs = [(z.coverage[n], t.coverage[n]) for t, z in zip(again, normal) for n in names]
    assert all(z <= t for z, t in pairs)
    assert any(z < t for z, t in pairs)


def test_scaling_the_degrees_of_freedom_changes_the_quantile_only_within_the_block():
    df = np.array([4.0, 8.0, 0.0])
    before = t_quantile(df, 0.95)
    with degrees_of_freedom_scaled(math.inf):
        normal = t_quantile(df, 0.95)
    with degrees_of_freedom_scaled(2.0):
        doubled = t_quantile(df, 0.95)
    assert np.allclose(normal[:2], norm.ppf(0.975))
    assert np.allclose(doubled[:2], t_quantile(np.array([8.0, 16.0]), 0.95))
    assert np.isnan(normal[2]) and np.isnan(doubled[2])
    assert np.array_equal(t_quantile(df, 0.95), before, equal_nan=True)
