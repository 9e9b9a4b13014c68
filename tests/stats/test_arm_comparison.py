"""Two arms of a study: per-target differences, rank correlations and order flips."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from pressurebench.stats import methods
from pressurebench.stats.arm_comparison import compare_arms, kendall_tau_b, spearman_rho
from pressurebench.stats.sweeps.synthetic import synthetic_scores

RATES = {"a": 0.3, "b": 0.5, "c": 0.7, "d": 0.8}


@pytest.mark.parametrize("seed", range(6))
def test_rank_correlations_match_scipy_including_ties(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, size=(20, 7)).astype(float)
    y = x + rng.integers(-2, 3, size=x.shape)
    tau, rho = kendall_tau_b(x, y), spearman_rho(x, y)
    for i in range(len(x)):
        assert tau[i] == pytest.approx(stats.kendalltau(x[i], y[i]).statistic, abs=1e-12)
        assert rho[i] == pytest.approx(stats.spearmanr(x[i], y[i]).statistic, abs=1e-12)
    assert np.isnan(kendall_tau_b(np.ones(4), np.arange(4.0)))
    assert np.isnan(spearman_rho(np.ones(4), np.arange(4.0)))


def test_arms_with_the_same_scenarios_are_paired_and_a_shift_is_measured():
    arm_a = synthetic_scores(target_rates=RATES, samples=2, seed=3)
    # the same scenarios replayed: same difficulties, every target 0.1 lower
    arm_b = synthetic_scores(target_rates={t: r - 0.1 for t, r in RATES.items()}, samples=2, seed=3)
    result = compare_arms(arm_a, arm_b, arm_names=("main", "users-other"), resamples=1000, seed=1)
    assert result.paired and result.targets == ["a", "b", "c", "d"]
    for diff in result.differences:
        assert (diff.a, diff.b) == ("main", "users-other")
        assert diff.ci_method == methods.CLUSTER_T_MOVER
        assert diff.ci_low > 0 and diff.difference == pytest.approx(diff.rate_a - diff.rate_b)
    assert result.kendall_tau.value == 1.0 and result.spearman_rho.value == 1.0
    assert result.kendall_tau.ci_low > 0.3
    flips = {(f.target_1, f.target_2): f for f in result.order_flips}
    assert len(flips) == 6 and not any(f.flipped for f in flips.values())
    assert all(flips[pair].probability < 0.01 for pair in (("a", "c"), ("a", "d"), ("b", "d")))
    assert 0 < flips[("c", "d")].probability < 0.3  # 0.1 apart: the order is less certain


def test_pairing_narrows_the_interval_when_scenarios_correspond():
    arm_a = synthetic_scores(target_rates=RATES, samples=2, seed=4)
    arm_b = synthetic_scores(target_rates=RATES, samples=2, seed=4)
    arm_b["passed"] = np.where(  # a few verdicts differ between the arms
        np.random.default_rng(0).uniform(size=len(arm_b)) < 0.1,
        ~arm_b["passed"].astype(bool),
        arm_b["passed"],
    ).astype(object)
    paired = compare_arms(arm_a, arm_b, resamples=800, seed=2)
    independent = compare_arms(arm_a, arm_b, resamples=800, seed=2, paired=False)
    assert paired.paired and not independent.paired
    assert independent.differences[0].ci_method == methods.CLUSTER_T_WELCH_MOVER
    for p, i in zip(paired.differences, independent.differences):
        assert p.difference == i.difference
        assert p.ci_high - p.ci_low < 0.6 * (i.ci_high - i.ci_low)


def test_arms_with_other_scenarios_are_resampled_independently():
    arm_a = synthetic_scores(target_rates=RATES, base_per_metric=10, seed=5)
    arm_b = synthetic_scores(target_rates=RATES, base_per_metric=7, seed=6)
    result = compare_arms(arm_a, arm_b, resamples=500, seed=1)
    assert not result.paired
    assert {d.ci_method for d in result.differences} == {methods.CLUSTER_T_WELCH_MOVER}
    assert result.differences[0].n_clusters_a == 60 and result.differences[0].n_clusters_b == 42


def test_a_swapped_pair_is_reported_as_a_likely_flip():
    arm_a = synthetic_scores(target_rates=RATES, samples=2, seed=7)
    arm_b = synthetic_scores(target_rates={**RATES, "a": 0.8, "d": 0.3}, samples=2, seed=8)
    result = compare_arms(arm_a, arm_b, resamples=800, seed=1, paired=False)
    flips = {(f.target_1, f.target_2): f for f in result.order_flips}
    assert flips[("a", "d")].flipped and flips[("a", "d")].probability > 0.95
    assert not flips[("b", "c")].flipped and flips[("b", "c")].probability < 0.05
    assert result.kendall_tau.value < 0.5


def test_fewer_than_three_common_targets_have_no_rank_correlation():
    arm_a = synthetic_scores(target_rates={"a": 0.4, "b": 0.6, "c": 0.5}, seed=1)
    arm_b = synthetic_scores(target_rates={"a": 0.4, "b": 0.6}, seed=2)
    result = compare_arms(arm_a, arm_b, resamples=200)
    assert result.targets == ["a", "b"]
    assert result.kendall_tau.value is None and "at least 3 targets" in result.kendall_tau.reason
    assert result.spearman_rho.value is None
    assert len(result.order_flips) == 1


def test_same_seed_same_comparison():
    arm_a = synthetic_scores(target_rates=RATES, seed=1)
    arm_b = synthetic_scores(target_rates=RATES, seed=2)
    first = compare_arms(arm_a, arm_b, resamples=300, seed=9, paired=False)
    assert first == compare_arms(arm_a, arm_b, resamples=300, seed=9, paired=False)
    # Differences have closed-form intervals: another resampling seed leaves them as they are.
    other = compare_arms(arm_a, arm_b, resamples=300, seed=10, paired=False)
    assert first.differences == other.differences
