"""Cluster-t intervals: the linearized variance, its degrees of freedom, and when it is withheld."""

from __future__ import annotations

import numpy as np
import pytest
from score_rows import frame, row
from statsmodels.stats.multitest import multipletests

from pressurebench.stats import methods
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.cluster_t import (
    design_effect_df,
    rate_z,
    stratified_variance,
    wilson_t_effective,
    wilson_t_interval,
)
from pressurebench.stats.interval_rules import RATE
from pressurebench.stats.intervals import wilson_interval
from pressurebench.stats.multiplicity import holm_adjust
from pressurebench.stats.rates import estimate_rates, rate_estimate, rates_by


def test_stratified_variance_by_hand():
    # Two strata: {1, 2, 6} and {0, 4}; z sums within stratum, k/(k−1)·Σ(z − z̄)² each.
    z = np.array([1.0, 2.0, 6.0, 0.0, 4.0])
    strata = np.array([0, 0, 0, 1, 1])
    result = stratified_variance(z, np.ones(5, bool), strata, min_df=1)
    expected = 3 / 2 * ((1 - 3) ** 2 + (2 - 3) ** 2 + (6 - 3) ** 2) + 2 / 1 * (2**2 + 2**2)
    assert result.variance[0] == pytest.approx(expected)
    # Satterthwaite's degrees of freedom of the two strata's variances, at most (3 − 1) + (2 − 1)
    first, second = 3 / 2 * 14, 2 / 1 * 8
    assert result.df[0] == pytest.approx((first + second) ** 2 / (first**2 / 2 + second**2 / 1))
    assert result.df[0] <= 3
    assert result.reason == [None]


def test_the_degrees_of_freedom_follow_the_metric_that_carries_the_variance():
    """Four metrics of 3 base scenarios: when one metric's scenarios vary and the others' hardly
    do, the sum's variance is that metric's, estimated on 2 degrees of freedom, not 8; when they
    vary alike, all 8 count."""
    strata = np.repeat(np.arange(4), 3)
    alike = np.tile([0.0, 1.0, 2.0], 4)
    one = np.r_[[0.0, 10.0, 20.0], np.tile([0.0, 0.01, 0.02], 3)]
    assert stratified_variance(alike, np.ones(12, bool), strata, min_df=1).df[0] == pytest.approx(8)
    assert stratified_variance(one, np.ones(12, bool), strata, min_df=1).df[0] < 2.01


def test_inactive_clusters_leave_the_variance_and_the_degrees_of_freedom():
    z = np.array([[1.0], [2.0], [6.0], [100.0]])
    active = np.array([[True], [True], [True], [False]])
    result = stratified_variance(z, active, np.zeros(4, int), min_df=1)
    assert result.variance[0] == pytest.approx(3 / 2 * 14)
    assert result.df[0] == 2


def test_the_linearized_variance_is_what_the_rescaled_bootstrap_estimates():
    """For a sum of per-cluster values the n_h − 1 bootstrap's variance equals the
    linearized variance in expectation (Rao & Wu 1988): the two methods agree."""
    rng = np.random.default_rng(3)
    strata = np.repeat(["m1", "m2", "m3"], [4, 6, 9])
    z = rng.normal(size=len(strata)) + (strata == "m2") * 3
    boot = ClusterBootstrap(strata, [f"c{i}" for i in range(len(strata))], resamples=40000, seed=1)
    bootstrap_variance = boot.replicate_sums(z).var()
    linearized = stratified_variance(z, np.ones(len(z), bool), boot.strata_codes, min_df=1)
    assert bootstrap_variance == pytest.approx(linearized.variance[0], rel=0.03)


def test_a_metric_with_one_base_scenario_has_no_interval():
    z = np.array([1.0, 2.0, 3.0, 5.0])
    result = stratified_variance(z, np.ones(4, bool), np.array([0, 0, 0, 1]), min_df=1)
    assert "single base scenario" in result.reason[0]


def test_too_few_degrees_of_freedom_withhold_the_interval_with_the_count():
    z = np.arange(6.0)
    result = stratified_variance(z, np.ones(6, bool), np.array([0, 0, 0, 1, 1, 1]), min_df=20)
    assert result.df[0] == 4
    assert "too few base scenarios" in result.reason[0] and "4 degrees of freedom" in result.reason[0]


def test_wilson_t_is_wilson_when_rows_are_independent_and_df_is_large():
    p, n = 0.3, 50
    low, high = wilson_t_interval(np.array([p]), np.array([p * (1 - p) / n]), np.array([1e7]), 0.95)
    w_low, w_high = wilson_interval(p * n, n, 0.95)
    assert low[0] == pytest.approx(w_low, abs=1e-6) and high[0] == pytest.approx(w_high, abs=1e-6)


def test_few_degrees_of_freedom_widen_the_interval():
    args = (np.array([0.3]), np.array([0.004]))
    low_few, high_few = wilson_t_interval(*args, np.array([12]), 0.95)
    low_many, high_many = wilson_t_interval(*args, np.array([200]), 0.95)
    assert low_few[0] < low_many[0] and high_few[0] > high_many[0]


def test_rate_z_sums_to_zero_per_group():
    s = np.array([[1.0, 0.0], [2.0, 3.0], [0.0, 1.0]])
    t = np.array([[2.0, 1.0], [2.0, 3.0], [2.0, 0.0]])
    assert rate_z(s, t).sum(axis=0) == pytest.approx([0.0, 0.0])


def _benchmark(base_per_metric: int, metrics=("m01", "m02", "m03")):
    rows = []
    for m in metrics:
        for b in range(1, base_per_metric + 1):
            for v in (1, 2):
                rows.append(row(m, b, v, passed=(b + v) % 3 != 0))
    return frame(rows)


def test_a_small_design_says_why_there_is_no_interval():
    scores = _benchmark(2)  # 6 base scenarios in 3 metrics: 3 degrees of freedom
    est = rate_estimate(scores, ClusterBootstrap.from_scores(scores))
    assert est.rate is not None and est.ci_low is None and est.ci_high is None
    assert est.ci_method == methods.NONE and "too few base scenarios" in est.reason
    assert est.n_clusters == 6


def test_a_large_enough_design_gets_a_cluster_t_interval():
    scores = _benchmark(8)  # 24 base scenarios, 21 degrees of freedom
    est = rate_estimate(scores, ClusterBootstrap.from_scores(scores))
    assert est.ci_method == methods.CLUSTER_T_WILSON and est.reason is None
    assert est.ci_low < est.rate < est.ci_high
    # per metric: 8 base scenarios each, reported from RATE.single on
    for by_metric in rates_by(scores, ClusterBootstrap.from_scores(scores), "metric_id").values():
        assert (by_metric.ci_low is None) == (RATE.single > 8)


def test_holm_matches_statsmodels():
    p = np.array([0.01, 0.04, 0.03, 0.5, np.nan, 0.002])
    ours = holm_adjust(p)
    finite = np.isfinite(p)
    theirs = multipletests(p[finite], method="holm")[1]
    assert ours[finite] == pytest.approx(theirs)
    assert np.isnan(ours[~finite]).all()


def test_metrics_whose_scenarios_all_agree_have_no_spread_not_a_rounding_one():
    """Five base scenarios all passing on one metric and all failing on the other: Σz² −
    (Σz)²/k leaves rounding (about 4e-18), which is no spread; the rate takes Wilson's interval
    on the base scenarios, never a zero-width one."""
    from pressurebench.stats.cluster_t import rate_z, stratified_variance
    from pressurebench.stats.interval_rules import RATE

    k = 5
    successes = np.array([[1.0]] * k + [[0.0]] * k)
    trials = np.ones((2 * k, 1))
    design = stratified_variance(rate_z(successes, trials), trials > 0,
                                 np.array([0] * k + [1] * k), rule=RATE)
    assert design.variance[0] == 0.0


# One metric of 5 base scenarios, 2 rows each: four scenarios split 1-1 and one passes both.
SPLIT = (np.array([[1.0], [1.0], [1.0], [1.0], [2.0]]), np.full((5, 1), 2.0))


def test_a_metric_whose_rows_barely_cluster_takes_the_degrees_of_freedom_of_its_design_effect():
    successes, trials = SPLIT
    # SS_W = 4 · 1/2 = 2 of SS_T = 6 · 4 / 10 = 2.4: a relative variance of the design effect
    # of 2 · (2 / 2.4)² · (1/4 + 1/5), so 1 / ((5/6)² · 0.45) = 3.2 degrees of freedom: fewer
    # than the design's 4, which stay.
    assert design_effect_df(successes, trials, np.zeros(5), np.array([4.0]))[0] == 4.0
    # Three of five scenarios split and one passes and one fails both (SS_W / SS_T =
    # 1.5 / 2.5): 1 / (0.6² · 0.45) = 6.2, under the cap of twice the 5 minority rows.
    mixed = np.array([[1.0], [1.0], [2.0], [0.0], [1.0]])
    assert design_effect_df(mixed, trials, np.zeros(5), np.array([4.0]))[0] == pytest.approx(
        1 / (0.6**2 * 0.45))


def test_scenarios_that_never_split_take_at_most_twice_their_minority_rows():
    # Three scenarios pass both rows, two fail both: no spread within scenarios, so the design
    # effect's own degrees of freedom are unbounded; the 4 failing rows bound them at 8.
    successes = np.array([[2.0], [2.0], [2.0], [0.0], [0.0]])
    trials = np.full((5, 1), 2.0)
    assert design_effect_df(successes, trials, np.zeros(5), np.array([4.0]))[0] == 8.0


def test_a_rate_over_several_metrics_keeps_the_designs_degrees_of_freedom():
    successes = np.array([[1.0], [1.0], [1.0], [1.0], [1.0], [1.0]])
    trials = np.full((6, 1), 2.0)
    strata = np.array([0, 0, 0, 1, 1, 1])
    assert design_effect_df(successes, trials, strata, np.array([3.7]))[0] == 3.7


def test_a_barely_clustered_metrics_interval_is_narrower_than_on_the_designs_degrees():
    # Four of eight scenarios split, two pass and two fail both: 1 / (0.5² · (1/7 + 1/8)) =
    # 14.9 degrees of freedom instead of 7.
    successes = np.array([[1.0], [1.0], [1.0], [1.0], [2.0], [2.0], [0.0], [0.0]])
    trials = np.full((8, 1), 2.0)
    boot = ClusterBootstrap(np.zeros(8, dtype=int), np.arange(8), resamples=1)
    (est,) = estimate_rates(boot, successes, trials, np.zeros(1), 0.95)
    design = stratified_variance(rate_z(successes, trials), trials > 0, np.zeros(8), rule=RATE)
    rate = est.rate
    on_design = wilson_t_effective(np.array([rate]), rate * (1 - rate) / design.variance,
                                   design.df, 0.95)
    assert est.ci_method == methods.CLUSTER_T_WILSON
    assert on_design[0][0] < est.ci_low < rate < est.ci_high < on_design[1][0]
