"""One metric's rate and paired difference rest on that metric's own base scenarios: its own
design effect, its own correlation, its own degrees of freedom. A design effect pooled over
the metrics assumed they cluster alike; where one clusters more, its interval was too narrow
(docs/stress_coverage.md)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from pressurebench.stats import methods
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.cluster_t import wilson_t_effective
from pressurebench.stats.differences import estimate_differences, paired_design
from pressurebench.stats.interval_rules import DIFFERENCE, RATE
from pressurebench.stats.rates import target_rates
from pressurebench.stats.sweeps.synthetic import synthetic_scores


def test_a_metrics_rate_is_the_rate_of_its_rows_alone():
    """Every metric's interval is the one its own rows give as a benchmark of their own,
    whatever the other metrics hold: with others that cluster far more, it does not move."""
    scores = synthetic_scores(target_rates={"a": 0.7}, metrics=4, base_per_metric=RATE.single,
                              samples=2, seed=2)

    def by_metric(frame):
        return target_rates(frame, ClusterBootstrap.from_scores(frame))["a"].by_metric

    shown = by_metric(scores)
    for metric, estimate in shown.items():
        alone = by_metric(scores[scores["metric_id"] == metric])[metric]
        assert estimate.ci_method == alone.ci_method
        assert (estimate.ci_low, estimate.ci_high) == pytest.approx((alone.ci_low, alone.ci_high))
    clustered = synthetic_scores(target_rates={"a": 0.7}, metrics=4,
                                 base_per_metric=RATE.single, samples=2, concentration=0.25,
                                 seed=9)
    mixed = scores.copy()
    others = (mixed["metric_id"] != "m01").to_numpy()
    mixed.loc[others, "passed"] = clustered.loc[others, "passed"].to_numpy()
    again = by_metric(mixed)["m01"]
    assert (again.ci_low, again.ci_high) == pytest.approx((shown["m01"].ci_low, shown["m01"].ci_high))
    assert shown["m01"].ci_method == methods.CLUSTER_T_WILSON


def test_a_metrics_paired_difference_is_the_one_of_its_base_scenarios_alone():
    """Two metrics of DIFFERENCE.single base scenarios: the first metric's difference, taken
    with the second metric's clusters in the tables, equals the one on the first alone."""
    rng = np.random.default_rng(4)
    k = DIFFERENCE.single
    strata = np.repeat([0, 1], k)
    s_a, s_b = rng.binomial(4, 0.7, 2 * k).astype(float), rng.binomial(4, 0.5, 2 * k).astype(float)
    rows = np.full(2 * k, 4.0)
    mask = (strata == 0).astype(float)

    def interval(strata_codes, *tables):
        s_a, t_a, s_b, t_b = (x[:, None] for x in tables)
        design = paired_design(s_a, t_a, s_b, t_b, strata_codes, rule=DIFFERENCE)
        (d,) = estimate_differences([("a", "b")], s_a, t_a, s_b, t_b, design,
                                    method=methods.CLUSTER_T_MOVER, confidence_level=0.95)
        return d.ci_low, d.ci_high

    within = interval(strata, s_a * mask, rows * mask, s_b * mask, rows * mask)
    alone = interval(strata[:k], s_a[:k], rows[:k], s_b[:k], rows[:k])
    assert within == pytest.approx(alone)


def test_two_failures_in_ten_rows_keep_a_bound_above_a_true_rate_of_095():
    """Wilson's upper bound at 8 of 10 is 0.94, so a true rate of 0.95 is missed whenever two
    rows fail (8.6% of the time); Brown, Cai & DasGupta's Poisson bound for one or two
    failures, 1 − χ²₄(0.05) / 20, keeps 0.95 inside. A MOVER side is left as Wilson's."""
    n, df = np.array([10.0]), np.array([1000.0])
    plain = wilson_t_effective(np.array([0.8]), n, df, 0.95, modified=False)[1][0]
    high = wilson_t_effective(np.array([0.8]), n, df, 0.95)[1][0]
    assert plain < 0.95 < high
    assert high == pytest.approx(1 - chi2.ppf(0.05, 4) / 20)
    assert wilson_t_effective(np.array([0.5]), n, df, 0.95)[1][0] == pytest.approx(
        wilson_t_effective(np.array([0.5]), n, df, 0.95, modified=False)[1][0])

