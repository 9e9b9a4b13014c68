"""Demographic gaps: paired within base scenarios, found when planted, rarely found when absent."""

from __future__ import annotations

import numpy as np
import pytest
from score_rows import frame, row

from pressurebench.stats import methods
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.gaps import demographic_gaps
from pressurebench.stats.rates import rates_by
from pressurebench.stats.sweeps.synthetic import synthetic_scores

AXES = {"age": ["adult", "senior", "teen"], "gender": ["f", "m"]}


def gaps_of(scores, resamples=1000, seed=1):
    return demographic_gaps(
        scores, ClusterBootstrap.from_scores(scores, resamples=resamples, seed=seed)
    )


def test_a_planted_gap_is_detected_for_every_target():
    scores = synthetic_scores(
        target_rates={"a": 0.6, "b": 0.5},
        axes=AXES,
        samples=2,
        demographic_effects={"age": {"teen": -0.15}},
        seed=21,
    )
    gaps = gaps_of(scores)
    for target in ("a", "b"):
        by_pair = {(g.axis, g.a, g.b): g for g in gaps[target]}
        assert set(by_pair) == {
            ("age", "adult", "senior"),
            ("age", "adult", "teen"),
            ("age", "senior", "teen"),
            ("gender", "f", "m"),
        }
        for pair in (("age", "adult", "teen"), ("age", "senior", "teen")):
            gap = by_pair[pair]
            assert gap.ci_method == methods.CLUSTER_T
            assert gap.ci_low > 0  # teen passes less, so adult − teen > 0
            assert gap.difference == pytest.approx(gap.rate_a - gap.rate_b)
        assert by_pair[("gender", "f", "m")].ci_low < 0 < by_pair[("gender", "f", "m")].ci_high
        # three comparisons on the age axis, one on gender, each with Holm's adjustment
        assert [by_pair[p].n_comparisons for p in sorted(by_pair)] == [3, 3, 3, 1]
        for gap in by_pair.values():
            assert gap.p_holm >= gap.p_value
        assert by_pair[("age", "adult", "teen")].holm_significant
        assert by_pair[("gender", "f", "m")].p_holm == by_pair[("gender", "f", "m")].p_value


def test_a_gap_in_a_small_design_has_no_interval_and_no_test():
    scores = synthetic_scores(
        target_rates={"a": 0.6}, axes={"g": ["f", "m"]}, base_per_metric=2, metrics=3, seed=4
    )
    (gap,) = gaps_of(scores)["a"]
    assert gap.difference is not None and gap.ci_low is None
    assert "too few base scenarios for a demographic gap interval" in gap.reason
    assert gap.p_value is None and gap.holm_significant is None and gap.n_comparisons == 0


def test_without_a_gap_intervals_usually_include_zero():
    included = total = 0
    for seed in range(15):
        scores = synthetic_scores(target_rates={"a": 0.6}, axes=AXES, samples=2, seed=100 + seed)
        for gap in gaps_of(scores, resamples=400, seed=seed)["a"]:
            included += gap.ci_low <= 0 <= gap.ci_high
            total += 1
    assert total == 60
    assert included / total >= 0.85


def test_pairing_makes_the_interval_narrower_than_the_rates_alone_suggest():
    # Scenario difficulty varies a lot and hits both values alike: the paired
    # interval of the gap must be much narrower than the two rates' spreads.
    scores = synthetic_scores(
        target_rates={"a": 0.5}, axes={"g": ["f", "m"]}, samples=4, concentration=1.0, seed=5
    )
    boot = ClusterBootstrap.from_scores(scores, resamples=1000, seed=2)
    (gap,) = demographic_gaps(scores, boot)["a"]
    rates = rates_by(scores, boot, "demo:g")
    widths = [rates[v].ci_high - rates[v].ci_low for v in ("f", "m")]
    unpaired = (widths[0] ** 2 + widths[1] ** 2) ** 0.5
    assert gap.ci_high - gap.ci_low < 0.6 * unpaired


def test_a_gap_uses_only_base_scenarios_where_both_values_have_valid_rows():
    scores = frame(
        [
            row("m01", 1, 1, passed=True, **{"demo:g": "f"}),
            row("m01", 1, 2, passed=False, **{"demo:g": "m"}),
            row("m01", 2, 1, passed=True, **{"demo:g": "f"}),
            row("m01", 2, 2, passed=True, **{"demo:g": "m"}),
            row("m01", 3, 1, passed=False, **{"demo:g": "f"}),
            row("m01", 3, 2, passed=None, **{"demo:g": "m"}),
            row("m01", 4, 1, passed=True, **{"demo:g": "f"}),
            row("m01", 4, 2, passed=False, **{"demo:g": "m"}),
        ]
    )
    (gap,) = gaps_of(scores, resamples=300)["t"]
    # base 3 has no valid "m" row, so its failing "f" row is left out of the gap
    assert (gap.a, gap.b, gap.n_a, gap.n_b) == ("f", "m", 3, 3)
    assert (gap.rate_a, gap.rate_b) == (1.0, pytest.approx(1 / 3))
    assert gap.n_clusters_a == gap.n_clusters_b == 3


def test_values_that_never_share_a_scenario_have_a_null_gap():
    scores = frame(
        [
            row("m01", 1, 1, passed=True, **{"demo:g": "f"}),
            row("m01", 2, 1, passed=False, **{"demo:g": "m"}),
        ]
    )
    (gap,) = gaps_of(scores, resamples=100)["t"]
    assert gap.difference is None and gap.ci_low is None and gap.reason is not None


def test_equal_rates_that_cannot_vary_fall_back_to_newcombe():
    scores = frame(
        [
            row("m01", b, v, passed=True, **{"demo:g": g})
            for b in range(1, 22)
            for v, g in ((1, "f"), (2, "m"))
        ]
    )
    (gap,) = gaps_of(scores, resamples=200)["t"]
    assert gap.difference == 0.0 and gap.ci_method == methods.NEWCOMBE_CLUSTERS
    assert gap.ci_low < 0 < gap.ci_high


def test_no_demographic_axes_no_gaps():
    scores = synthetic_scores(target_rates={"a": 0.6, "b": 0.4}, seed=1)
    assert gaps_of(scores, resamples=100) == {"a": [], "b": []}


@pytest.mark.slow
def test_holm_keeps_the_chance_of_any_false_gap_on_an_axis_at_the_level():
    """A target with no gap on a three-valued axis: three intervals per benchmark. Some
    interval excludes 0 far more often than 5% of the time; Holm's decision does not."""
    rng = np.random.default_rng(2026)
    any_interval = any_holm = 0
    replications = 1000
    for _ in range(replications):
        scores = synthetic_scores(
            target_rates={"a": 0.6}, axes={"age": ["adult", "senior", "teen"]}, samples=2, seed=rng
        )
        gaps = gaps_of(scores, resamples=1)["a"]
        assert len(gaps) == 3 and all(g.n_comparisons == 3 for g in gaps)
        any_interval += any(not g.ci_low <= 0 <= g.ci_high for g in gaps)
        any_holm += any(g.holm_significant for g in gaps)
    unadjusted, holm = any_interval / replications, any_holm / replications
    print(f"\nany of 3 intervals excludes 0: {unadjusted:.3f}; any Holm rejection: {holm:.3f}")
    assert unadjusted > 0.08
    assert holm <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / replications)
