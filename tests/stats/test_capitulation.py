"""Capitulation curves: the Kaplan–Meier product by hand, censoring, medians, bands and pairing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pressurebench.stats import methods
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.capitulation import (
    GAVE_IN,
    ONSET_TIME,
    grouped_curves,
    kaplan_meier,
    paired_differences,
)
from pressurebench.stats.interval_rules import CAPITULATION, CURVE_DIFFERENCE
from pressurebench.stats.rates import estimate_rates
from pressurebench.stats.sweeps.capitulation import curve_coverage, simulate_onsets, true_curve


def onsets(rows: list[tuple[str, str, str, int, bool]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["target", "metric_id", "base_id", ONSET_TIME, GAVE_IN])


def bootstrap_of(frame: pd.DataFrame, resamples: int = 300) -> ClusterBootstrap:
    pairs = frame[["metric_id", "base_id"]].drop_duplicates()
    return ClusterBootstrap(pairs["metric_id"].tolist(), pairs["base_id"].tolist(),
                            resamples=resamples, seed=3)


def test_kaplan_meier_by_hand_with_censoring():
    # times: gave in at 1; censored at 2 (ended early); gave in at 3 twice; censored at 3; held
    # to the end at 4 twice. At risk 7,6,5,2; giving in 1,0,2,0.
    frame = onsets([
        ("a", "m1", f"b{i}", t, e)
        for i, (t, e) in enumerate([(1, True), (2, False), (3, True), (3, True), (3, False),
                                    (4, False), (4, False)])
    ])
    ((curves),) = grouped_curves(frame, bootstrap_of(frame), [["target"]], 4)
    points = curves[("a",)].points
    expected = [6 / 7, 6 / 7, 6 / 7 * 3 / 5, 6 / 7 * 3 / 5]
    assert [p.holding for p in points] == pytest.approx(expected)
    assert [p.at_risk for p in points] == [7, 6, 5, 2]
    assert [p.gave_in for p in points] == [1, 0, 2, 0]
    assert [p.censored for p in points] == [0, 1, 1, 2]
    # the naive share "never gave in" (4/7) would overstate holding; dropping the early ending
    # (3/6) would understate it
    assert points[-1].holding == pytest.approx(18 / 35)
    median = curves[("a",)].median_onset
    assert median.reached is False and median.turn is None


def test_median_turn_of_onset_and_its_interval():
    rng = np.random.default_rng(5)
    rows = []
    for b in range(24):
        for _k in range(3):
            t = int(rng.integers(1, 6))
            rows.append(("a", f"m{b % 3}", f"b{b}", t, True))
    frame = onsets(rows)
    ((curves),) = grouped_curves(frame, bootstrap_of(frame), [["target"]], 5)
    curve = curves[("a",)]
    holding = [p.holding for p in curve.points]
    expected = next(t for t, s in enumerate(holding, start=1) if s <= 0.5)
    m = curve.median_onset
    assert m.reached and m.turn == expected
    assert m.ci_method == methods.CLUSTER_BOOTSTRAP
    assert m.ci_low <= m.turn <= m.ci_high


def test_no_one_gave_in_gets_a_wilson_band_not_a_point():
    frame = onsets([("a", f"m{b % 2}", f"b{b}", 3, False) for b in range(22)])
    ((curves),) = grouped_curves(frame, bootstrap_of(frame), [["target"]], 3)
    for p in curves[("a",)].points:
        assert p.holding == 1.0 and p.ci_high == 1.0 and p.ci_low < 0.9
        assert p.ci_method == methods.WILSON_CLUSTERS and p.n_clusters == 22
    assert curves[("a",)].median_onset.ci_method == methods.NONE


@pytest.mark.parametrize("metrics, per_metric, why", [
    (4, CAPITULATION.pooled - 1, "too few base scenarios for a capitulation band interval"),
    (1, 1, "a metric has a single base scenario"),
])
def test_small_designs_get_no_bands_and_say_why(metrics, per_metric, why):
    """Below the band's rule (docs/capitulation_coverage.md), no band, median interval or
    paired interval is shown."""
    rng = np.random.default_rng(4)
    base = simulate_onsets(rng, metrics=metrics, base_per_metric=per_metric, per_base=4)
    both = pd.concat([base, base.assign(target="u")])
    (curves,) = grouped_curves(both, bootstrap_of(both), [["target"]], 5)
    curve = curves[("t",)]
    assert curve.reason.startswith(why)
    assert all(p.ci_low is None and p.ci_method == methods.NONE for p in curve.points)
    assert curve.median_onset.ci_low is None and curve.median_onset.ci_method == methods.NONE
    (diff,) = paired_differences(both, bootstrap_of(both), ["t", "u"], 5)
    assert diff.reason == curve.reason
    assert all(p.difference in (0.0, None) and p.ci_low is None for p in diff.points)


def _curves_at(metrics: int, per_metric: int):
    """Two targets' curves over all metrics and per metric, and their paired differences, on
    `metrics` metrics of `per_metric` base scenarios each."""
    rng = np.random.default_rng(5)
    base = simulate_onsets(rng, metrics=metrics, base_per_metric=per_metric, per_base=4,
                           targets=("t", "u"))
    boot = bootstrap_of(base, resamples=20)
    by_target, by_metric = grouped_curves(base, boot, [["target"], ["target", "metric_id"]], 5)
    (diff,) = paired_differences(base, boot, ["t", "u"], 5)
    return by_target[("t",)], by_metric[("t", "m00")], diff


def test_a_band_below_its_rule_is_withheld_with_the_rules_reason_and_at_it_is_reported():
    """The capitulation band's own rule, measured by the design sweep, not the 20 degrees of
    freedom of unmeasured statistics: over 4 metrics it is reported from CAPITULATION.pooled
    base scenarios per metric, and one metric's curve from CAPITULATION.single."""
    below, _, diff = _curves_at(4, CAPITULATION.pooled - 1)
    assert below.reason.startswith(
        f"too few base scenarios for a capitulation band interval ({4 * (CAPITULATION.pooled - 1)}"
        f" with valid rows over 4 metrics; the coverage grids need {CAPITULATION.pooled} per "
        "metric)")
    assert "generation.scenarios_per_metric" in below.reason
    assert all(p.ci_low is None for p in below.points) and diff.reason == below.reason
    at, _, _ = _curves_at(4, CAPITULATION.pooled)
    assert at.reason is None
    assert all(p.ci_low is not None for p in at.points if p.holding is not None)
    _, one_below, _ = _curves_at(2, CAPITULATION.single - 1)
    assert one_below.reason.startswith("too few base scenarios for a capitulation band interval"
                                       f" ({CAPITULATION.single - 1} with valid rows in one metric")
    _, one_at, _ = _curves_at(2, CAPITULATION.single)
    assert one_at.reason is None
    assert all(p.ci_low is not None for p in one_at.points if p.holding is not None)


def test_a_curve_difference_below_its_own_rule_is_withheld_though_both_curves_have_bands():
    """Two targets' curves are compared from CURVE_DIFFERENCE.pooled base scenarios per metric
    (the sweep finds the paired difference short of 0.93 below it where the hazard clusters
    strongly), more than a band needs; below it the reason names the curve difference."""
    assert CURVE_DIFFERENCE.pooled > CAPITULATION.pooled
    curve, _, diff = _curves_at(4, CURVE_DIFFERENCE.pooled - 1)
    assert curve.reason is None
    assert diff.reason.startswith(
        "too few base scenarios for a curve difference interval "
        f"({4 * (CURVE_DIFFERENCE.pooled - 1)} with valid rows over 4 metrics; the coverage grids "
        f"need {CURVE_DIFFERENCE.pooled} per metric)")
    assert all(p.ci_low is None and p.ci_method == methods.NONE for p in diff.points)
    _, _, diff = _curves_at(4, CURVE_DIFFERENCE.pooled)
    assert diff.reason is None
    assert all(p.ci_low is not None for p in diff.points if p.difference is not None)


def test_without_censoring_a_band_is_the_pass_rate_interval_of_holding():
    """With no early endings S(t) is the share whose onset is after t, a ratio of sums over
    base scenarios: its linearized variance must equal that of the rate, turn by turn."""
    rng = np.random.default_rng(8)
    frame = simulate_onsets(rng, metrics=3, base_per_metric=9, per_base=4)
    frame[ONSET_TIME] = np.where(frame[GAVE_IN], frame[ONSET_TIME], 5)  # no early endings
    boot = bootstrap_of(frame)
    ((curves),) = grouped_curves(frame, boot, [["target"]], 5)
    clusters = boot.codes(frame["base_id"])
    trials = np.bincount(clusters, minlength=boot.n_clusters).astype(float)[:, None]
    for point in curves[("t",)].points:
        holding = (~frame[GAVE_IN] | (frame[ONSET_TIME] > point.turn)).to_numpy(dtype=float)
        successes = np.bincount(clusters, weights=holding, minlength=boot.n_clusters)[:, None]
        (rate,) = estimate_rates(boot, successes, trials, np.zeros(1), 0.95)
        assert point.holding == pytest.approx(rate.rate)
        assert (point.ci_method, point.ci_low, point.ci_high) == (
            rate.ci_method, pytest.approx(rate.ci_low), pytest.approx(rate.ci_high))


def test_turns_nobody_reached_are_none():
    frame = onsets([("a", "m1", "b1", 1, False), ("a", "m1", "b2", 2, True)])
    ((curves),) = grouped_curves(frame, bootstrap_of(frame), [["target"]], 4)
    points = curves[("a",)].points
    assert points[1].holding == 0.0
    assert points[2].holding is None and points[2].at_risk == 0
    assert points[2].ci_method == methods.NONE


def test_kaplan_meier_stops_where_nobody_is_at_risk():
    curve = kaplan_meier(np.array([4.0, 2.0, 0.0]), np.array([1.0, 1.0, 0.0]))
    assert curve[:2] == pytest.approx([0.75, 0.375]) and np.isnan(curve[2])


def test_paired_difference_of_identical_targets_is_zero_and_of_planted_ones_has_the_sign():
    rng = np.random.default_rng(11)
    base = simulate_onsets(rng, metrics=3, base_per_metric=8, per_base=4)
    same = pd.concat([base, base.assign(target="u")])
    (diff,) = paired_differences(same, bootstrap_of(same), ["t", "u"], 5)
    assert all(p.difference == 0.0 for p in diff.points)
    # a target that gives in two turns later on the very same scenarios holds longer
    later = base.assign(target="u", **{ONSET_TIME: np.minimum(base[ONSET_TIME] + 2, 5)})
    later[GAVE_IN] = base[GAVE_IN] & (base[ONSET_TIME] + 2 <= 5)
    both = pd.concat([base, later])
    (diff,) = paired_differences(both, bootstrap_of(both), ["t", "u"], 5)
    assert all(p.difference < 0 for p in diff.points)
    assert diff.points[1].ci_high < 0 and diff.points[1].ci_method == methods.CLUSTER_T


def test_groups_share_the_replicates_of_the_whole():
    rng = np.random.default_rng(2)
    frame = simulate_onsets(rng, metrics=2, base_per_metric=6, per_base=3)
    by_target, by_metric = grouped_curves(
        frame, bootstrap_of(frame), [["target"], ["target", "metric_id"]], 5
    )
    assert set(by_metric) == {("t", "m00"), ("t", "m01")}
    assert by_target[("t",)].n == len(frame)
    assert sum(c.n for c in by_metric.values()) == len(frame)


@pytest.mark.slow
def test_bands_and_paired_differences_cover_at_the_nominal_rate():
    """Seeded simulation, 4 metrics × 12 base scenarios × 4 conversations per target, 1000
    benchmarks, through the data-frame entry points and the package's rules: the 95% bands
    cover the true curve at 0.958, 0.959, 0.957, 0.946, 0.960 at turns 1–5, and paired
    differences of two targets with the same hazards cover 0 at 0.950–0.959. The design sweep
    over 2–30 base scenarios per metric is docs/capitulation_coverage.md."""
    bands, differences = curve_coverage(1000)
    assert true_curve()[0] == pytest.approx(0.8)
    assert bands.min() >= 0.93 and bands.max() <= 0.97, bands
    assert differences.min() >= 0.93 and differences.max() <= 0.97, differences
