"""The change between two runs on planted data: a known shift is recovered within its interval,
and a comparison of two runs with the same true rate covers 0 about as often as it claims."""

from __future__ import annotations

import numpy as np
import pytest

from pressurebench.compare.differences import compare_frames
from pressurebench.stats import methods
from pressurebench.stats.interval_rules import DIFFERENCE
from pressurebench.stats.sweeps.synthetic import synthetic_scores

SHIFT = 0.10


def paired_runs(rate_a: float, rate_b: float, *, base_per_metric: int, seed: int, **kw):
    """Two runs on the same scenarios: each scenario's difficulty is shared, every verdict is
    drawn on its own (the two 'targets' of one synthetic frame, renamed to one target)."""
    frame = synthetic_scores(target_rates={"a": rate_a, "b": rate_b}, metrics=4,
                             base_per_metric=base_per_metric, seed=seed, **kw)
    run_a = frame[frame["target"] == "a"].assign(target="t")
    run_b = frame[frame["target"] == "b"].assign(target="t")
    return run_a, run_b


def unpaired_runs(rate_a: float, rate_b: float, *, base_per_metric: int, seed: int, **kw):
    """Two runs on unrelated scenarios (a regenerated benchmark reusing the same ids)."""
    seeds = np.random.SeedSequence(seed).spawn(2)
    return tuple(
        synthetic_scores(target_rates={"t": rate}, metrics=4, base_per_metric=base_per_metric,
                         seed=np.random.default_rng(s), **kw)
        for rate, s in ((rate_a, seeds[0]), (rate_b, seeds[1]))
    )


def overall(run_a, run_b, *, paired: bool):
    (change,) = [c for c in compare_frames(run_a, run_b, paired=paired) if c.kind == "overall"]
    return change.change


@pytest.mark.parametrize("paired", [True, False])
def test_a_planted_shift_is_recovered_within_its_interval(paired):
    make = paired_runs if paired else unpaired_runs
    run_a, run_b = make(0.5, 0.5 + SHIFT, base_per_metric=40, seed=3, samples=2)
    change = overall(run_a, run_b, paired=paired)
    assert change.ci_method == (methods.CLUSTER_T_MOVER if paired else methods.CLUSTER_T_WELCH_MOVER)
    assert change.ci_low < SHIFT < change.ci_high
    assert change.ci_low > 0, "a shift of 0.10 on 160 base scenarios is beyond the noise"
    assert change.difference == pytest.approx(change.rate_a - change.rate_b)


def test_pairing_narrows_the_interval_of_the_same_runs():
    run_a, run_b = paired_runs(0.5, 0.5 + SHIFT, base_per_metric=12, seed=5, samples=2)
    paired = overall(run_a, run_b, paired=True)
    unpaired = overall(run_a, run_b, paired=False)
    assert paired.difference == unpaired.difference
    assert paired.ci_high - paired.ci_low < 0.8 * (unpaired.ci_high - unpaired.ci_low)


def test_too_few_base_scenarios_withhold_the_interval_with_the_reason():
    run_a, run_b = paired_runs(
        0.5, 0.6, base_per_metric=DIFFERENCE.pooled - 1, seed=1, samples=2
    )
    change = overall(run_a, run_b, paired=True)
    assert change.difference is not None
    assert change.ci_low is None and change.ci_method == methods.NONE
    assert "too few base scenarios" in change.reason


def coverage(make, rate_a, rate_b, truth, *, paired, reps, base_per_metric):
    covered = 0
    for seed in range(reps):
        run_a, run_b = make(rate_a, rate_b, base_per_metric=base_per_metric, seed=seed, samples=2)
        change = overall(run_a, run_b, paired=paired)
        covered += change.ci_low <= truth <= change.ci_high
    return covered / reps


@pytest.mark.slow
@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("rate_b, truth", [(0.5, 0.0), (0.5 + SHIFT, SHIFT)])
def test_intervals_cover_the_planted_change_at_about_95_percent(paired, rate_b, truth):
    """600 planted pairs of runs at 8 base scenarios per metric (28 degrees of freedom): the
    Monte-Carlo error of a 0.95 share is ±0.009, so [0.925, 0.97] is about ±2.5 of it."""
    make = paired_runs if paired else unpaired_runs
    share = coverage(make, 0.5, rate_b, truth, paired=paired, reps=600, base_per_metric=8)
    assert 0.925 <= share <= 0.97, share
