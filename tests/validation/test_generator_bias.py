"""Generator bias: a planted shift is flagged, no shift rarely is, the rank-correlation interval is
what an independent computation gives, and self-preference is measured against the other targets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from pressurebench.params import Statistics
from pressurebench.reports.validation_tables import generator_arms_frame
from pressurebench.schemas import Benchmark, GenerationError, Metric
from pressurebench.stats import methods
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.rank_ceiling import CEILING_FOR_INTERVAL
from pressurebench.stats.results import StatisticsSettings
from pressurebench.stats.sweeps.synthetic import synthetic_scores
from pressurebench.validation.generator_bias import base_scenario_losses, compare_generator_arm
from pressurebench.validation.inputs import shared_metrics
from pressurebench.validation.studies import GeneratorBiasStudy

RATES = {"a": 0.35, "b": 0.5, "c": 0.6, "d": 0.7}
FAMILIES = {"gen": "gpt", "a": "gpt", "b": "claude", "c": "llama", "d": "qwen"}
STATS = Statistics(resamples=1000, confidence_level=0.95, seed=5)


def compare(main, arm, *, families=FAMILIES, statistics=STATS, metrics=("m01", "m02")):
    return compare_generator_arm(
        main,
        arm,
        arm_name="generator/gen",
        generator="gen",
        families=families,
        main_generator_family="claude",
        metrics=list(metrics),
        metrics_handwritten=True,
        targets=sorted(RATES),
        statistics=statistics,
    )


def test_a_target_shifted_in_the_arm_is_flagged():
    main = synthetic_scores(target_rates=RATES, samples=2, seed=1)
    arm = synthetic_scores(target_rates={**RATES, "c": RATES["c"] + 0.2}, samples=2, seed=2)
    result = compare(main, arm)
    diffs = {d.target: d for d in result.comparison.differences}
    assert not result.comparison.paired
    assert diffs["c"].ci_low > 0
    assert diffs["c"].difference == pytest.approx(diffs["c"].rate_a - diffs["c"].rate_b)
    assert (diffs["c"].a, diffs["c"].b) == ("generator/gen", "main")
    assert {d.ci_method for d in diffs.values()} == {methods.CLUSTER_T_WELCH_MOVER}
    assert result.rates_arm["c"].rate == pytest.approx(diffs["c"].rate_a)
    assert result.rates_main["c"].n == diffs["c"].n_b and result.rates_main["c"].n_error == 0


def test_without_bias_the_interval_covers_zero_for_at_least_90_percent_of_seeds():
    statistics = Statistics(resamples=400, confidence_level=0.95, seed=1)
    covered = []
    for seed in range(50):
        main = synthetic_scores(
            target_rates=RATES, metrics=4, base_per_metric=8, samples=2, seed=seed
        )
        arm = synthetic_scores(
            target_rates=RATES, metrics=4, base_per_metric=8, samples=2, seed=1000 + seed
        )
        result = compare(main, arm, statistics=statistics)
        covered += [d.ci_low <= 0 <= d.ci_high for d in result.comparison.differences]
        s = result.self_preference
        covered.append(s.ci_low <= 0 <= s.ci_high)
    assert np.mean(covered) >= 0.9


def replicate_rates(
    frame: pd.DataFrame, bootstrap: ClusterBootstrap, targets: list[str]
) -> np.ndarray:
    """Each replicate's pass rate per target, straight from the clusters' replicate weights."""
    valid = frame[frame["status"] == "ok"]
    passes = valid.assign(p=valid["passed"].astype(float)).pivot_table(
        index="base_id", columns="target", values="p", aggfunc="sum", fill_value=0.0
    )
    trials = valid.pivot_table(
        index="base_id", columns="target", values="sample", aggfunc="count", fill_value=0.0
    )
    clusters = list(bootstrap.clusters)
    passes = passes.reindex(index=clusters, columns=targets, fill_value=0.0).to_numpy()
    trials = trials.reindex(index=clusters, columns=targets, fill_value=0.0).to_numpy()
    weights = np.vstack(list(bootstrap.weights()))
    return (weights @ passes) / (weights @ trials)


def percentiles(values: list[float], level: float) -> tuple[float, float]:
    alpha = 1 - level
    low, high = np.nanquantile(np.array(values), [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def test_rank_correlation_interval_matches_an_independent_computation():
    # Targets far enough apart for the design that two halves of the main arm rank them alike:
    # the noise ceiling allows the interval (stats.rank_ceiling).
    rates = {"a": 0.2, "b": 0.35, "c": 0.5, "d": 0.65, "e": 0.8}
    main = synthetic_scores(target_rates=rates, metrics=3, base_per_metric=12, samples=2,
                            seed=21)
    arm = synthetic_scores(
        target_rates={**rates, "b": 0.6}, metrics=3, base_per_metric=12, samples=2, seed=22
    )
    statistics = Statistics(resamples=300, confidence_level=0.9, seed=17)
    result = compare_generator_arm(
        main,
        arm,
        arm_name="generator/gen",
        generator="gen",
        families={"gen": "gpt", **dict.fromkeys(rates, "other")},
        main_generator_family=None,
        metrics=[],
        metrics_handwritten=False,
        targets=sorted(rates),
        statistics=statistics,
    )
    # The arms are resampled independently, from the two streams spawned from the seed.
    seed_arm, seed_main = np.random.SeedSequence(statistics.seed).spawn(2)
    targets = sorted(rates)
    reps_arm = replicate_rates(
        arm, ClusterBootstrap.from_scores(arm, resamples=300, seed=seed_arm), targets
    )
    reps_main = replicate_rates(
        main, ClusterBootstrap.from_scores(main, resamples=300, seed=seed_main), targets
    )
    tau = [scipy_stats.kendalltau(x, y).statistic for x, y in zip(reps_arm, reps_main)]
    rho = [scipy_stats.spearmanr(x, y).statistic for x, y in zip(reps_arm, reps_main)]
    for got, values in (
        (result.comparison.kendall_tau, tau),
        (result.comparison.spearman_rho, rho),
    ):
        low, high = percentiles(values, 0.9)
        assert got.ci_low == pytest.approx(low, abs=1e-9)
        assert got.ci_high == pytest.approx(high, abs=1e-9)
        assert got.n_targets == 5 and got.ci_low < got.value <= 1
    assert result.tau_noise_ceiling.value >= CEILING_FOR_INTERVAL
    main_point = main.groupby("target")["passed"].mean()[targets]
    arm_point = arm.groupby("target")["passed"].mean()[targets]
    assert result.comparison.kendall_tau.value == pytest.approx(
        scipy_stats.kendalltau(arm_point, main_point).statistic
    )


def test_self_preference_flags_a_gain_of_the_generators_family():
    main = synthetic_scores(target_rates=RATES, samples=2, seed=3)
    arm = synthetic_scores(target_rates={**RATES, "a": RATES["a"] + 0.2}, samples=2, seed=4)
    s = compare(main, arm).self_preference
    assert s.generator_family == "gpt" and s.main_generator_family == "claude"
    assert s.in_family == ["a"] and s.out_of_family == ["b", "c", "d"]
    assert s.ci_low > 0 and s.ci_method == methods.CLUSTER_T_WELCH


def test_self_preference_is_not_flagged_when_the_family_does_not_gain():
    main = synthetic_scores(target_rates=RATES, samples=2, seed=3)
    arm = synthetic_scores(target_rates={**RATES, "c": RATES["c"] + 0.2}, samples=2, seed=4)
    result = compare(main, arm)
    s = result.self_preference
    diffs = {d.target: d.difference for d in result.comparison.differences}
    assert s.value == pytest.approx(diffs["a"] - np.mean([diffs["b"], diffs["c"], diffs["d"]]))
    assert s.ci_low <= 0  # the others gained: no sign of the family being favoured


def test_self_preference_needs_targets_inside_and_outside_the_family():
    main = synthetic_scores(target_rates=RATES, samples=1, seed=3)
    arm = synthetic_scores(target_rates=RATES, samples=1, seed=4)
    inside = compare(
        main, arm, families={"gen": "gpt", **dict.fromkeys(RATES, "gpt")}
    ).self_preference
    assert inside.value is None and inside.ci_method == methods.NONE
    assert "outside the family" in inside.reason
    outside = compare(
        main, arm, families={"gen": "phi", **dict.fromkeys(RATES, "gpt")}
    ).self_preference
    assert outside.value is None and "inside the family" in outside.reason


def test_per_metric_differences_cover_shared_metrics_only():
    # 22 base scenarios per metric: 21 degrees of freedom per arm, enough for an interval
    main = synthetic_scores(target_rates=RATES, metrics=3, base_per_metric=22, samples=1, seed=8)
    arm = synthetic_scores(target_rates=RATES, metrics=3, base_per_metric=22, samples=1, seed=9)
    result = compare(main, arm, metrics=["m01", "m03"])
    assert [(d.target, d.metric_id) for d in result.metric_differences] == [
        (t, m) for t in sorted(RATES) for m in ("m01", "m03")
    ]
    assert all(d.ci_low <= d.difference <= d.ci_high for d in result.metric_differences)
    first = result.metric_differences[0]
    of_group = (main["metric_id"] == "m01") & (main["target"] == first.target)
    assert first.rate_b == pytest.approx(main[of_group]["passed"].astype(float).mean())
    none = compare(main, arm, metrics=[])
    assert none.metric_differences == [] and "no metric" in none.metric_note
    assert none.multiplicity.n_comparisons == len(none.target_differences)


def test_an_arm_without_rows_for_a_target_reports_no_data_not_zero():
    main = synthetic_scores(target_rates=RATES, samples=1, seed=10)
    arm = synthetic_scores(target_rates=RATES, samples=1, seed=11)
    arm = arm.assign(
        status=np.where(arm["target"] == "d", "error", arm["status"]).astype(object),
        passed=np.where(arm["target"] == "d", None, arm["passed"]).astype(object),
    )
    result = compare(main, arm)
    d = {x.target: x for x in result.comparison.differences}["d"]
    assert d.difference is None and d.rate_a is None and "no valid rows" in d.reason
    assert result.rates_arm["d"].rate is None and result.rates_arm["d"].n == 0
    assert result.rates_arm["d"].n_error == (arm["target"] == "d").sum()
    assert result.comparison.kendall_tau.n_targets == 3


def metric(id_, definition="The assistant holds its ground.", type_="positive") -> Metric:
    return Metric(id=id_, name=f"Metric {id_}", type=type_, definition=definition)


def test_shared_metrics_need_the_same_id_type_and_definition():
    main = Benchmark(
        name="b", description="d", metrics=[metric("m01"), metric("m02"), metric("m03")]
    )
    arm = Benchmark(
        name="b",
        description="d",
        metrics=[
            metric("m01"),
            metric("m02", definition="Something else."),
            metric("m03", type_="negative"),
            metric("m04"),
        ],
    )
    assert shared_metrics(main, arm) == ["m01"]


def test_base_scenarios_lost_in_generation_are_counted_with_their_reasons():
    """An arm missing three of its planned base scenarios shows 3 lost and why, though every
    row it has is valid (n_error 0): losses never reach a score row."""
    main = synthetic_scores(target_rates=RATES, metrics=4, base_per_metric=8, samples=1, seed=1)
    arm = synthetic_scores(target_rates=RATES, metrics=4, base_per_metric=8, samples=1, seed=2)
    lost_ids = sorted(arm["base_id"].unique())[:3]
    arm = arm[~arm["base_id"].isin(lost_ids)]
    errors = [GenerationError(stage="gen_scenarios", base_id=b, reason="near-duplicate of m01_s002")
              for b in lost_ids]
    losses = base_scenario_losses(main, arm, planned=32, errors=errors)
    assert (losses.planned, losses.scored_main, losses.scored_arm, losses.lost) == (32, 32, 29, 3)
    result = compare(main, arm).model_copy(update={"losses": losses})
    study = GeneratorBiasStudy(benchmark="b", statistics=StatisticsSettings(
        resamples=10, confidence_level=0.95, seed=0), main_generator=None,
        targets=sorted(RATES), arms=[result])
    row = generator_arms_frame(study).iloc[0]
    assert row["base scenarios (planned / main / arm)"] == "32 / 32 / 29"
    assert row["lost in the arm"].startswith("3 (") and "near-duplicate" in row["lost in the arm"]
    assert all(r.n_error == 0 for r in result.rates_arm.values())
