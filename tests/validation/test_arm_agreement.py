"""Agreement of paired arms' verdicts and Holm's correction of their differences.

Differences of rates hide verdicts that part in both directions: an inverted
judge and a user model that flips verdicts both ways must show it in the
agreement, whatever the difference of rates says.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from arm_data import paired_arms

from pressurebench.params import Statistics
from pressurebench.stats.coefficients import cohen_from_sums, scott_from_sums
from pressurebench.stats.multiplicity import holm_adjust
from pressurebench.validation.evaluator_bias import EvaluatorArmResult, evaluator_arm

STATS = Statistics(resamples=500, confidence_level=0.95, seed=3)


def compare(main, arm, targets) -> EvaluatorArmResult:
    return evaluator_arm(main, arm, arm_name="evaluator/other", evaluator="other",
                         scenario_ids=sorted(main["scenario_id"].unique()), targets=targets,
                         statistics=STATS)


def overall(result, target):
    (row,) = [a for a in result.agreement if a.target == target and a.metric_id is None]
    return row


def inverted(frame):
    return frame.assign(passed=(~frame["passed"].astype(bool)).astype(object))


def test_an_inverted_judge_agrees_on_no_row_and_has_pi_minus_1_whatever_the_rates():
    main, _ = paired_arms({"half": 0.5, "most": 0.8}, {"half": 0.5, "most": 0.8}, seed=2)
    always = main[main["target"] == "half"].assign(target="always", passed=True)
    main = pd.concat([main, always.astype({"passed": object})], ignore_index=True)
    result = compare(main, inverted(main), ["always", "half", "most"])
    for target in ("always", "half", "most"):
        row = overall(result, target)
        passes = main.loc[main["target"] == target, "passed"].astype(bool)
        a, b = int(passes.sum()), int((~passes).sum())
        assert (row.main_pass_arm_fail, row.main_fail_arm_pass) == (a, b)
        assert row.main_pass_arm_pass == row.main_fail_arm_fail == 0
        assert row.share_agreeing.value == 0.0
        assert row.scott_pi.value == pytest.approx(-1.0)
        # Cohen's kappa takes each arm's own shares as chance: −2ab / (a² + b²), so −1 only
        # at equal shares and 0 when one arm passes everything and the other nothing
        assert row.cohen_kappa.value == pytest.approx(-2 * a * b / (a * a + b * b))
    assert overall(result, "always").cohen_kappa.value == pytest.approx(0.0)
    for row in result.agreement:  # per target × metric too
        assert row.share_agreeing.value in (0.0, None)


def test_verdicts_changed_both_ways_on_half_the_rows_give_no_difference_and_half_agreement():
    rates = {"a": 0.4, "b": 0.6}
    main, _ = paired_arms(rates, rates, seed=5)
    rng = np.random.default_rng(0)
    arm = main.copy()
    for target in rates:
        of_target = main["target"] == target
        passing = np.flatnonzero(of_target & main["passed"].astype(bool))
        failing = np.flatnonzero(of_target & ~main["passed"].astype(bool))
        k = int(of_target.sum()) // 4  # half the rows flip: a quarter each way
        flips = np.concatenate([rng.choice(passing, k, replace=False),
                                rng.choice(failing, k, replace=False)])
        arm.loc[flips, "passed"] = ~arm.loc[flips, "passed"].astype(bool)
    result = compare(main, arm, list(rates))
    for d in result.comparison.differences:
        assert d.difference == pytest.approx(0.0)
        assert d.ci_low < 0 < d.ci_high
    for target in rates:
        row = overall(result, target)
        assert row.share_agreeing.value == pytest.approx(0.5)
        assert row.share_agreeing.ci_low < 0.5 < row.share_agreeing.ci_high
        assert row.cohen_kappa.value == pytest.approx(0.0, abs=0.05)
        assert row.cohen_kappa.ci_low < row.cohen_kappa.value < row.cohen_kappa.ci_high


def test_agreeing_arms_agree_fully():
    main, _ = paired_arms({"a": 0.5, "b": 0.7}, {"a": 0.5, "b": 0.7}, seed=1)
    result = compare(main, main.copy(), ["a", "b"])
    for target in ("a", "b"):
        row = overall(result, target)
        assert row.share_agreeing.value == 1.0
        assert row.cohen_kappa.value == pytest.approx(1.0)
        assert row.scott_pi.value == pytest.approx(1.0)


def test_metric_differences_are_per_target_not_pooled():
    # one target goes 100 → 0 on m01, the other 40 → 60: pooled, that would be one −30 pp
    main, _ = paired_arms({"x": 0.5, "y": 0.5}, {"x": 0.5, "y": 0.5}, metrics=2, seed=4)
    arm = main.copy()
    m01 = main["metric_id"] == "m01"
    main.loc[m01 & (main["target"] == "x"), "passed"] = True
    arm.loc[m01 & (arm["target"] == "x"), "passed"] = False
    result = compare(main, arm, ["x", "y"])
    by_key = {(d.target, d.metric_id): d for d in result.metric_differences}
    assert sorted(by_key) == [("x", "m01"), ("x", "m02"), ("y", "m01"), ("y", "m02")]
    assert by_key["x", "m01"].difference == pytest.approx(-1.0)
    for (target, metric), d in by_key.items():
        rows = (main["target"] == target) & (main["metric_id"] == metric)
        assert d.rate_b == pytest.approx(main.loc[rows, "passed"].astype(float).mean())
        assert d.rate_a == pytest.approx(arm.loc[rows, "passed"].astype(float).mean())


def test_holm_runs_over_every_difference_of_the_arm_and_says_so():
    main, arm = paired_arms({"a": 0.3, "b": 0.5, "c": 0.7}, {"a": 0.3, "b": 0.9, "c": 0.7},
                            metrics=2, base_per_metric=22, seed=6)
    result = compare(main, arm, ["a", "b", "c"])
    tests = [*result.target_differences, *result.metric_differences]
    assert len(tests) == 3 + 3 * 2
    p = np.array([np.nan if t.p_value is None else t.p_value for t in tests])
    assert result.multiplicity.n_comparisons == int(np.isfinite(p).sum()) == len(tests)
    assert "per target and per target × metric" in result.multiplicity.family
    expected = holm_adjust(p)
    for t, adjusted in zip(tests, expected):
        assert t.p_holm == pytest.approx(adjusted) and t.p_holm >= t.p_value
        assert t.holm_significant == (t.p_holm < result.multiplicity.alpha)
    # the per-target differences are the comparison's
    for mine, theirs in zip(result.target_differences, result.comparison.differences):
        assert (mine.target, mine.difference, mine.ci_low) == (
            theirs.target, theirs.difference, theirs.ci_low)
    (shifted,) = [t for t in result.target_differences if t.target == "b"]
    assert shifted.holm_significant


def test_scott_pi_takes_chance_from_the_pooled_shares():
    # Scott (1955): pi = (p_o − p_e) / (1 − p_e), p_e = Σ_k ((row_k + col_k) / 2n)²
    table = np.array([[20.0, 5.0], [10.0, 15.0]])
    n = table.sum()
    pooled = (table.sum(axis=1) + table.sum(axis=0)) / (2 * n)
    expected = (np.trace(table) / n - (pooled**2).sum()) / (1 - (pooled**2).sum())
    assert scott_from_sums(table.ravel()) == pytest.approx(expected)
    assert scott_from_sums(np.array([0.0, 30.0, 0.0, 0.0])) == pytest.approx(-1.0)
    assert cohen_from_sums(np.array([0.0, 30.0, 0.0, 0.0])) == pytest.approx(0.0)
