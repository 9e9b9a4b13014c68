"""User-model bias: paired by scenario row; a planted shift is flagged, no shift rarely is, unpaired
rows are left out and counted, and flips and rank correlations come from the paired replicates."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from arm_data import paired_arms
from scipy import stats as scipy_stats

from pressurebench.params import Statistics
from pressurebench.stats import methods
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.validation.paired import paired_rows
from pressurebench.validation.user_model_bias import compare_user_arm

RATES = {"a": 0.3, "b": 0.45, "c": 0.6, "d": 0.75}
STATS = Statistics(resamples=1000, confidence_level=0.95, seed=9)


def compare(main, arm, statistics=STATS, targets=None):
    return compare_user_arm(
        main,
        arm,
        arm_name="user/other",
        user_model="other",
        scenario_ids=sorted(main["scenario_id"].unique()),
        targets=targets or sorted(RATES),
        statistics=statistics,
    )


def test_a_target_shifted_under_the_other_user_is_flagged_with_a_paired_interval():
    main, arm = paired_arms(RATES, {**RATES, "b": RATES["b"] + 0.2}, seed=1)
    result = compare(main, arm)
    diffs = {d.target: d for d in result.comparison.differences}
    assert result.comparison.paired
    assert {d.ci_method for d in diffs.values()} == {methods.CLUSTER_T_MOVER}
    assert diffs["b"].ci_low > 0 and (diffs["b"].a, diffs["b"].b) == ("user/other", "main")
    assert result.n_base_scenarios == 40 and result.n_scenarios == 80


def test_without_bias_the_paired_interval_covers_zero_for_at_least_90_percent_of_seeds():
    statistics = Statistics(resamples=400, confidence_level=0.95, seed=2)
    covered = []
    for seed in range(50):
        main, arm = paired_arms(RATES, RATES, metrics=4, base_per_metric=22, seed=seed)
        result = compare(main, arm, statistics)
        covered += [d.ci_low <= 0 <= d.ci_high for d in result.comparison.differences]
        covered += [d.ci_low <= 0 <= d.ci_high for d in result.metric_differences]
    assert np.mean(covered) >= 0.9


def test_rows_without_a_verdict_in_either_arm_are_left_out_and_counted():
    main, arm = paired_arms(RATES, RATES, metrics=2, base_per_metric=4, seed=3)
    arm_errors = (arm["target"] == "a") & (arm["sample"] == 1)
    arm = arm.assign(
        status=np.where(arm_errors, "error", arm["status"]).astype(object),
        passed=np.where(arm_errors, None, arm["passed"]).astype(object),
    )
    missing = (main["target"] == "b") & (main["scenario_id"] == "m01_s001_v01")
    arm = arm[~missing.to_numpy()]
    result = compare(main, arm)
    pairing = {p.target: p for p in result.pairing}
    assert pairing["a"].model_dump() == {
        "target": "a",
        "n_main": 32,
        "n_error_main": 0,
        "n_arm": 32,
        "n_error_arm": 16,
        "n_paired": 16,
        "n_unpaired_main": 16,
        "n_unpaired_arm": 0,
    }
    assert (pairing["b"].n_arm, pairing["b"].n_paired, pairing["b"].n_unpaired_main) == (30, 30, 2)
    diffs = {d.target: d for d in result.comparison.differences}
    assert diffs["a"].n_a == diffs["a"].n_b == 16
    paired_main = main[(main["target"] == "a") & (main["sample"] == 0)]
    assert diffs["a"].rate_b == pytest.approx(paired_main["passed"].astype(float).mean())
    # the arm's own rate is over all its valid rows, with its errors counted beside it
    assert result.rates_arm["a"].n == 16 and result.rates_arm["a"].n_error == 16
    assert result.rates_main["a"].n == 32


def test_a_target_with_no_paired_row_has_no_difference_but_keeps_its_place():
    main, arm = paired_arms(RATES, RATES, metrics=2, base_per_metric=3, seed=4)
    gone = arm["target"] == "d"
    arm = arm.assign(
        status=np.where(gone, "error", arm["status"]).astype(object),
        passed=np.where(gone, None, arm["passed"]).astype(object),
    )
    result = compare(main, arm)
    d = {x.target: x for x in result.comparison.differences}["d"]
    assert d.difference is None and d.ci_method == methods.NONE and d.reason
    assert result.rates_arm["d"].rate is None
    assert [p.n_paired for p in result.pairing if p.target == "d"] == [0]


def test_a_swapped_pair_is_a_likely_flip_and_a_kept_order_is_not():
    main, arm = paired_arms(RATES, {**RATES, "a": 0.75, "d": 0.3}, seed=5)
    flips = {(f.target_1, f.target_2): f for f in compare(main, arm).comparison.order_flips}
    assert flips[("a", "d")].flipped and flips[("a", "d")].probability > 0.95
    assert not flips[("b", "c")].flipped and flips[("b", "c")].probability < 0.2


def test_paired_rank_correlation_interval_matches_an_independent_computation():
    # Targets far enough apart for the design that two halves of the main arm rank them alike:
    # the noise ceiling allows the interval (stats.rank_ceiling).
    rates = {"a": 0.15, "b": 0.32, "c": 0.5, "d": 0.68, "e": 0.85}
    main, arm = paired_arms(rates, {**rates, "a": 0.55}, metrics=3, base_per_metric=12, seed=6)
    statistics = Statistics(resamples=300, confidence_level=0.9, seed=23)
    result = compare(main, arm, statistics, targets=sorted(rates))
    # one bootstrap over both arms' base scenarios: every replicate draws the same ones for both
    both = pd.concat([arm[["metric_id", "base_id"]], main[["metric_id", "base_id"]]])
    bootstrap = ClusterBootstrap.from_scores(both, resamples=300, seed=statistics.seed)
    weights = np.vstack(list(bootstrap.weights()))

    def replicate_rates(frame):
        table = frame.assign(p=frame["passed"].astype(float)).pivot_table(
            index="base_id", columns="target", values="p", aggfunc=["sum", "count"]
        )
        passes = table["sum"].reindex(list(bootstrap.clusters)).to_numpy()
        trials = table["count"].reindex(list(bootstrap.clusters)).to_numpy()
        return (weights @ passes) / (weights @ trials)

    reps_arm, reps_main = replicate_rates(arm), replicate_rates(main)
    tau = [scipy_stats.kendalltau(x, y).statistic for x, y in zip(reps_arm, reps_main)]
    rho = [scipy_stats.spearmanr(x, y).statistic for x, y in zip(reps_arm, reps_main)]
    for got, values in (
        (result.comparison.kendall_tau, tau),
        (result.comparison.spearman_rho, rho),
    ):
        low, high = np.nanquantile(values, [0.05, 0.95])
        assert (got.ci_low, got.ci_high) == (
            pytest.approx(low, abs=1e-9),
            pytest.approx(high, abs=1e-9),
        )
    flip = {(f.target_1, f.target_2): f for f in result.comparison.order_flips}[("a", "b")]
    swapped = (reps_arm[:, 0] - reps_arm[:, 1]) * (reps_main[:, 0] - reps_main[:, 1]) < 0
    assert flip.probability == pytest.approx(swapped.mean())


def test_rows_repeated_in_one_arm_are_refused():
    main, arm = paired_arms(RATES, RATES, metrics=1, base_per_metric=2, seed=7)
    with pytest.raises(ValueError, match="repeat"):
        paired_rows(main, pd.concat([arm, arm.iloc[:1]]))
