"""Pass rates: bookkeeping of n and errors, null where there is no data, and the fallbacks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2
from score_rows import clusters, frame, row
from statsmodels.stats.proportion import proportion_confint

from pressurebench.stats import methods
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.frame import check_scores
from pressurebench.stats.interval_rules import RATE
from pressurebench.stats.rates import rate_estimate, rates_by, target_rates
from pressurebench.stats.sweeps.synthetic import synthetic_scores

Z95 = 1.959963984540054


def estimate(scores: pd.DataFrame, **kw):
    return rate_estimate(scores, ClusterBootstrap.from_scores(scores, resamples=500, seed=1), **kw)


def test_rows_without_a_verdict_are_counted_but_not_in_the_denominator():
    scores = frame(
        clusters({1: [True, False, None], 2: [True, True, False], 3: [False, None, True]})
        + [row("m01", 4, 1, passed=None, status="ok")]  # undetermined verdict on an ok row
        + [row("m01", 4, 2, passed=np.nan)]
    )
    est = estimate(scores)
    assert (est.n, est.n_error, est.n_clusters) == (7, 4, 3)
    assert est.rate == pytest.approx(4 / 7)
    # three base scenarios with valid rows in one metric: below the rate rule, no interval
    assert est.ci_method == methods.NONE and est.ci_low is None and est.ci_high is None
    assert "3 with valid rows in one metric" in est.reason


def test_a_verdict_on_an_error_row_is_not_counted():
    scores = frame(
        clusters({1: [True, False], 2: [False, False]})
        + [row("m01", 3, passed=True, status="error")]
    )
    est = estimate(scores)
    assert (est.n, est.n_error, est.rate) == (4, 1, 0.25)


def test_no_valid_rows_is_null_not_zero():
    est = estimate(frame(clusters({1: [None, None], 2: [None]})))
    assert est.model_dump() == {
        "rate": None,
        "n": 0,
        "n_error": 3,
        "ci_low": None,
        "ci_high": None,
        "ci_method": "none",
        "n_clusters": 0,
        "reason": None,
    }


def test_the_rate_pools_rows_rather_than_averaging_scenarios():
    # 1 of 1 and 1 of 4: pooled 2/5, not the mean of scenario rates (0.625).
    est = estimate(frame(clusters({1: [True], 2: [True, False, False, False]})))
    assert est.rate == pytest.approx(0.4)


def test_all_pass_falls_back_to_wilson_with_each_scenario_counted_once():
    est = estimate(frame(clusters({b: [True] * 4 for b in range(1, 22)})))
    assert est.rate == 1.0 and est.n == 84 and est.n_clusters == 21
    assert est.ci_method == methods.WILSON_CLUSTERS
    # Wilson at p = 1 with n = 21: [n / (n + z²), 1]
    assert est.ci_low == pytest.approx(21 / (21 + Z95**2))
    assert est.ci_high == 1.0


def test_all_fail_falls_back_to_wilson_with_each_scenario_counted_once():
    est = estimate(frame(clusters({b: [False] * 3 for b in range(1, 23)})))
    assert est.rate == 0.0 and est.ci_method == methods.WILSON_CLUSTERS
    assert est.ci_low == 0.0
    assert est.ci_high == pytest.approx(Z95**2 / (22 + Z95**2))


def test_a_rate_too_close_to_one_for_the_variance_counts_scenarios_once():
    # 24 base scenarios, one failing row among 96: less than one scenario's worth of failures.
    pattern = {b: [True] * 4 for b in range(1, 25)}
    pattern[24] = [True, True, True, False]
    est = estimate(frame(clusters(pattern)))
    assert est.ci_method == methods.WILSON_CLUSTERS
    low, high = proportion_confint(est.rate * 24, 24, alpha=0.05, method="wilson")
    # a quarter of a scenario's worth of failures: the upper bound is the Poisson one where
    # that is higher (Brown, Cai & DasGupta), 1 − χ²(0.05; 2 · 0.25) / (2 · 24)
    poisson = 1 - chi2.ppf(0.05, 2 * (1 - est.rate) * 24) / 48
    assert (est.ci_low, est.ci_high) == pytest.approx((low, max(high, poisson)))


def test_one_base_scenario_per_metric_has_no_interval_and_says_why():
    scores = frame(
        clusters({1: [True, False, True]}, "m01")
        + clusters({1: [False, False]}, "m02")
        + clusters({1: [True, True]}, "m03")
    )
    est = estimate(scores)
    assert est.rate == pytest.approx(4 / 7) and est.n_clusters == 3
    assert est.ci_method == methods.NONE and est.ci_low is None
    assert "single base scenario" in est.reason


def test_a_single_base_scenario_has_no_interval():
    est = estimate(frame(clusters({1: [True, False, True, True, False, True]})))
    assert est.ci_method == methods.NONE and est.n_clusters == 1
    assert "single base scenario" in est.reason


def test_confidence_level_changes_the_width():
    scores = synthetic_scores(target_rates={"t": 0.6}, seed=2)
    boot = ClusterBootstrap.from_scores(scores, resamples=1000, seed=1)
    narrow = rate_estimate(scores, boot, confidence_level=0.8)
    wide = rate_estimate(scores, boot, confidence_level=0.99)
    assert wide.ci_low < narrow.ci_low < narrow.rate < narrow.ci_high < wide.ci_high


def test_the_cluster_interval_widens_by_the_design_effect():
    # Scenarios of 5 rows with an intra-scenario correlation of 1/2: the design
    # effect is 1 + 4 · 1/2 = 3, so the interval is about √3 times wider than one
    # that treats rows as independent.
    scores = synthetic_scores(target_rates={"t": 0.6}, concentration=1.0, samples=5, seed=3)
    est = estimate(scores)
    naive_low, naive_high = proportion_confint(est.rate * est.n, est.n, method="wilson")
    ratio = (est.ci_high - est.ci_low) / (naive_high - naive_low)
    assert 1.4 < ratio < 2.1


def test_rates_by_a_column_share_one_bootstrap():
    scores = frame(
        clusters({1: [True, False], 2: [True, True], 3: [False, False]}, "m01")
        + clusters({1: [None, None]}, "m02")
    )
    boot = ClusterBootstrap.from_scores(scores, resamples=300, seed=4)
    by_metric = rates_by(scores, boot, "metric_id")
    assert set(by_metric) == {"m01", "m02"}
    assert by_metric["m01"] == rate_estimate(scores[scores["metric_id"] == "m01"], boot)
    assert by_metric["m02"].rate is None and by_metric["m02"].n_error == 2


def test_target_breakdowns_agree_with_a_direct_count():
    scores = synthetic_scores(
        target_rates={"a": 0.7, "b": 0.5},
        metrics=4,
        base_per_metric=6,
        axes={"age": ["old", "young"], "region": ["n", "s", "w"]},
        samples=2,
        error_rate=0.1,
        seed=8,
    )
    boot = ClusterBootstrap.from_scores(scores, resamples=300, seed=1)
    result = target_rates(scores, boot)
    assert set(result) == {"a", "b"}
    ok = scores[scores["status"] == "ok"].assign(passed=lambda f: f["passed"].astype(bool))
    for target, tr in result.items():
        mine = ok[ok["target"] == target]
        errors = scores[(scores["target"] == target) & (scores["status"] == "error")]
        assert tr.overall.rate == pytest.approx(mine["passed"].mean())
        assert (tr.overall.n, tr.overall.n_error) == (len(mine), len(errors))
        assert tr.positive.rate == pytest.approx(
            mine[mine["metric_type"] == "positive"]["passed"].mean()
        )
        assert tr.negative.rate == pytest.approx(
            mine[mine["metric_type"] == "negative"]["passed"].mean()
        )
        for metric, rate in mine.groupby("metric_id")["passed"].mean().items():
            assert tr.by_metric[metric].rate == pytest.approx(rate)
            assert tr.by_metric[metric].n_clusters == 6
            # 6 base scenarios in one metric: reported from RATE.single on
            assert (tr.by_metric[metric].ci_low is None) == (RATE.single > 6)
        for axis in ("age", "region"):
            expected = mine.groupby(f"demo:{axis}")["passed"].agg(["mean", "size"])
            assert set(tr.by_demographic[axis]) == set(expected.index)
            for value, (rate, n) in expected.iterrows():
                est = tr.by_demographic[axis][value]
                assert (est.rate, est.n) == (pytest.approx(rate), n)
                assert est.ci_method == methods.CLUSTER_T_WILSON
        assert len(tr.by_base_scenario) == 24 and len(tr.by_variant) == 24 * 6
        for variant, rate in mine.groupby("scenario_id")["passed"].mean().items():
            est = tr.by_variant[variant]
            assert est.rate == pytest.approx(rate)
            assert est.ci_method == methods.WILSON_ROWS_SINGLE_CLUSTER
            assert est.ci_low <= est.rate <= est.ci_high


def test_a_target_without_negative_metrics_has_a_null_negative_rate():
    scores = frame(clusters({1: [True, False], 2: [True, True]}, "m01"))
    tr = target_rates(scores, ClusterBootstrap.from_scores(scores, resamples=100, seed=1))["t"]
    assert tr.negative.rate is None and tr.negative.n == 0 and tr.negative.ci_method == "none"
    assert tr.positive == tr.overall
    assert tr.by_demographic == {}


def test_malformed_frames_are_refused():
    with pytest.raises(ValueError, match=r"lack column.*passed"):
        check_scores(frame([row()]).drop(columns=["passed"]))
    crossed = frame([row("m01", 1), {**row("m02", 1), "base_id": "m01_s001"}])
    with pytest.raises(ValueError, match="more than one metric"):
        check_scores(crossed)


def test_wilson_bounds_are_exact_at_the_edges():
    from pressurebench.stats.intervals import wilson_interval

    low, high = wilson_interval(np.array([0.0, 7.0, 3.0]), np.array([7.0, 7.0, 0.0]), 0.95)
    assert low[0] == 0.0 and high[1] == 1.0
    assert 0 < high[0] < 1 and 0 < low[1] < 1
    assert np.isnan(low[2]) and np.isnan(high[2])


def test_a_rate_far_from_0_and_1_that_falls_back_to_wilson_is_labelled_for_what_it_is():
    """Every scenario passing one row in three: no spread between scenarios, so cluster-t has
    no variance and Wilson on scenarios is used; the label must not claim a rate near 0 or 1."""
    from pressurebench.reports.tables import method_label

    est = estimate(frame(clusters({b: [True, False, False] for b in range(1, 22)})))
    assert est.rate == pytest.approx(1 / 3) and est.ci_method == methods.WILSON_CLUSTERS
    label = method_label(est.ci_method)
    assert label.startswith("Wilson, scenarios as n") and "0 or 1" not in label
