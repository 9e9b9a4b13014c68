"""One rule per statistic: where each interval is withheld, what the reason advises, and the
methods the rules were measured with (MOVER differences, the cluster-t contrast)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from pressurebench.stats import methods
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.differences import estimate_differences, paired_design
from pressurebench.stats.interval_rules import (
    DIFFERENCE,
    RATE,
    planned_design,
    with_margin,
)
from pressurebench.stats.rates import estimate_rates, rate_estimate, rates_by
from pressurebench.stats.sweeps.synthetic import synthetic_scores
from pressurebench.validation.contrast import arm_replicates, contrast_of_changes


def _scores(base_per_metric: int, metrics: int = 4, seed: int = 1):
    return synthetic_scores(target_rates={"a": 0.7}, metrics=metrics,
                            base_per_metric=base_per_metric, samples=2, seed=seed)


def test_a_metrics_rate_and_the_pooled_rate_follow_their_own_rules():
    """4 metrics, one base scenario per metric below each rate rule: the pooled rate and each
    metric's are withheld, each naming its own rule; at the rules both are reported."""
    small = _scores(min(RATE.pooled, RATE.single) - 1)
    boot = ClusterBootstrap.from_scores(small)
    assert f"the coverage grids need {RATE.pooled} per metric" in rate_estimate(small, boot).reason
    for estimate in rates_by(small, boot, "metric_id").values():
        assert estimate.ci_low is None
        assert f"the coverage grids need {RATE.single} per metric" in estimate.reason
    enough = _scores(max(RATE.pooled, RATE.single))
    boot = ClusterBootstrap.from_scores(enough)
    assert rate_estimate(enough, boot).ci_low is not None
    for estimate in rates_by(enough, boot, "metric_id").values():
        assert estimate.ci_low is not None and estimate.reason is None


def test_the_advice_asks_for_the_rule_plus_a_margin_when_the_plan_was_too_small():
    scores = _scores(RATE.pooled - 1)
    with planned_design(RATE.pooled - 1):
        estimate = rate_estimate(scores, ClusterBootstrap.from_scores(scores))
    assert estimate.ci_low is None
    assert f"set generation.scenarios_per_metric: {with_margin(RATE.pooled)}" in estimate.reason


def test_the_advice_names_lost_scenarios_when_the_plan_was_large_enough():
    """Six base scenarios per metric planned, two of one metric's lost: the reason says so
    rather than asking for the six that are already set."""
    strata = np.repeat(np.arange(1), 6)
    successes = np.array([[1.0], [2.0], [1.0], [2.0], [0.0], [0.0]])
    trials = np.array([[2.0], [2.0], [2.0], [2.0], [0.0], [0.0]])  # two scenarios lost
    boot = ClusterBootstrap(strata, np.arange(6), resamples=1)
    with planned_design(6):
        (estimate,) = estimate_rates(boot, successes, trials, np.zeros(1), 0.95)
    assert estimate.ci_low is None and estimate.n_clusters == 4
    assert "generation.scenarios_per_metric is already 6" in estimate.reason
    assert "2 of the 6 planned base scenarios" in estimate.reason
    assert "set generation.scenarios_per_metric: 6" not in estimate.reason


def test_a_difference_near_one_gets_a_skewed_mover_interval():
    """Rates of 0.95 and 0.75: the MOVER interval reaches further down than up from the
    difference, as the rates' own Wilson intervals do; the symmetric t interval cannot."""
    k = DIFFERENCE.pooled + 3
    rng = np.random.default_rng(5)
    strata = np.repeat(np.arange(4), k)
    s_a = rng.binomial(4, 0.95, size=(4 * k, 1)).astype(float)
    s_b = rng.binomial(4, 0.75, size=(4 * k, 1)).astype(float)
    t = np.full_like(s_a, 4.0)
    design = paired_design(s_a, t, s_b, t, strata, rule=DIFFERENCE)
    (mover,) = estimate_differences([("a", "b")], s_a, t, s_b, t, design,
                                    method=methods.CLUSTER_T_MOVER, confidence_level=0.95)
    (symmetric,) = estimate_differences([("a", "b")], s_a, t, s_b, t, design,
                                        method=methods.CLUSTER_T, confidence_level=0.95)
    assert mover.ci_method == methods.CLUSTER_T_MOVER
    assert mover.ci_low < mover.difference < mover.ci_high
    d = mover.difference
    assert d - mover.ci_low > mover.ci_high - d
    assert symmetric.ci_high - d == pytest.approx(d - symmetric.ci_low)


def test_the_self_preference_contrast_follows_the_same_rule_as_a_difference():
    """Below the contrast's rule the contrast is withheld with the reason a difference gets;
    at it, it is a cluster-t interval (Welch df for unrelated scenarios), not a percentile
    bootstrap that no rule governs."""
    rates = {"a": 0.5, "b": 0.6, "c": 0.7}
    for k, reported in ((DIFFERENCE.pooled - 1, False), (DIFFERENCE.pooled + 5, True)):
        main = synthetic_scores(target_rates=rates, metrics=4, base_per_metric=k, seed=1)
        arm = synthetic_scores(target_rates={**rates, "a": 0.7}, metrics=4, base_per_metric=k,
                               seed=2)
        reps = arm_replicates(arm, main, ["target"], paired=False, resamples=50, seed=0)
        contrast = contrast_of_changes(reps, ["a"], 0.95)
        assert contrast.value is not None
        if reported:
            assert contrast.ci_method == methods.CLUSTER_T_WELCH and contrast.reason is None
            assert contrast.ci_low < contrast.value < contrast.ci_high
        else:
            assert contrast.ci_low is None and contrast.ci_method == methods.NONE
            assert "too few base scenarios for a contrast interval" in contrast.reason


def test_the_sizing_recipe_in_the_docs_runs_and_prints_the_rules(capsys):
    """docs/intervals.md's example, run as written."""
    page = (Path(__file__).parents[2] / "docs" / "intervals.md").read_text(encoding="utf-8")
    code = next(block for block in re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
                if "scenarios_for_intervals" in block)
    exec(compile(code, "docs/intervals.md", "exec"), {})
    out = capsys.readouterr().out
    assert f"{RATE.pooled} base scenarios per metric; generate {with_margin(RATE.pooled)}" in out
    assert f"difference: {DIFFERENCE.pooled} pooled, {DIFFERENCE.single} on one metric" in out
    assert "with 20 metrics, 2 variants and 2 samples" in page.lower()
    assert f"{20 * with_margin(RATE.pooled) * 2 * 2} conversations" in page


def test_the_coverage_recipe_in_the_docs_prints_the_grids_coverage_at_a_design(capsys):
    """docs/intervals.md's reading of both grids' coverage at 10 metrics × 6 base scenarios:
    the 4-metric design of 5 base scenarios, the largest not above it, and the stress grid's
    lowest there."""
    page = (Path(__file__).parents[2] / "docs" / "intervals.md").read_text(encoding="utf-8")
    code = next(block for block in re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
                if "grid_coverage" in block)
    exec(compile(code, "docs/intervals.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.count("at 4 metrics x 5 base scenarios") == 4, out
    assert out.count("in the stress grid at least 0.9") == 4, out


def test_plan_lists_the_measured_rules_and_sizes_for_the_curve_difference_when_asked():
    """`plan` prints every rule in RULES; its floor (every pooled interval a study reports)
    leaves out the curve difference's, which only a study comparing targets turn by turn needs."""
    from pressurebench.stats.interval_rules import (
        CAPITULATION,
        CURVE_DIFFERENCE,
        RULES,
        SENSITIVITY,
        scenarios_for_intervals,
    )

    assert [RULES[r.statistic] for r in (CAPITULATION, CURVE_DIFFERENCE, SENSITIVITY)] == [
        CAPITULATION, CURVE_DIFFERENCE, SENSITIVITY]
    assert scenarios_for_intervals(4) == max(
        rule.per_metric(4) for rule in RULES.values()
        if rule.statistic not in ("curve difference", "corrected rate", "corrected difference"))
    assert scenarios_for_intervals(4, (CURVE_DIFFERENCE,)) == CURVE_DIFFERENCE.pooled
