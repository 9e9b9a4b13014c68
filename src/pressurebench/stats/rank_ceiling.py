"""The rank correlation expected when an arm changes nothing: a noise ceiling for Kendall's τ.

Kendall's τ-b between the targets' pass rates in the main arm and in an arm is below 1 for
two reasons: the arm reorders targets, or the rates are noisy enough that close targets swap
by chance. Its interval alone cannot tell the two apart; a ceiling can: τ between two halves
of the main arm itself, where nothing changed but the draw. Each split puts half of each
block's units in one half and the rest in the other, the targets' rates are taken in each
half, and τ-b between them; over many seeded splits, their mean is the ceiling and the
2.5–97.5% spread of the splits its range.

The unit follows what the arms share. Arms on the same scenarios (user-model and evaluator
studies, the judge probes) differ in their conversations or verdicts, not in their scenarios:
there a split divides each scenario row's samples (with two samples, one per half), so both
halves play the same scenarios, as the arms do. Arms on unrelated scenarios (another
generator) differ in their scenarios too: there a split divides each metric's base scenarios.
A main arm of one sample per scenario row is split by base scenarios whatever the pairing,
and says so. Each half holds half the rows, so the ceiling is that of a study half the size:
an arm τ at or above it is what a change-nothing arm of the full size would give, or more.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import Field

from ..schemas import Row
from . import methods
from .arm_comparison import (
    MIN_TARGETS_FOR_CORRELATION,
    ArmComparison,
    RankCorrelation,
    kendall_tau_b,
)
from .frame import cluster_ids, cluster_strata, passes, valid_mask

SPLITS = 200
# Kendall's τ-b and Spearman's ρ between arms get their percentile interval only where the noise
# ceiling is at least this: the coverage sweep (docs/validation_coverage.md) found the interval
# missing the true rankings' agreement far more often than it claims where targets are close
# for the design (the interval follows the agreement noise leaves, not the true one), and
# covering where half the main arm already ranks the targets alike.
CEILING_FOR_INTERVAL = 0.95
SAMPLE_SPLIT = "each scenario row's samples split in halves (the arms share the scenarios)"
SCENARIO_SPLIT = "each metric's base scenarios split in halves"


class NoiseCeiling(Row):
    """Kendall's τ-b between two halves of the main arm: what an arm that changes nothing
    would show at half the main arm's size."""

    value: float | None = Field(description="mean τ-b over the seeded splits")
    low: float | None = Field(description="2.5% of the splits' τ-b")
    high: float | None = Field(description="97.5% of the splits' τ-b")
    split: str | None = Field(description="what each split divides")
    splits: int = Field(ge=0, description="splits with a τ-b (no half ties every target)")
    n_targets: int = Field(ge=0)
    reason: str | None = None


def half_masks(blocks: np.ndarray, splits: int, rng: np.random.Generator) -> np.ndarray:
    """(splits, units) 0/1: in each split, a random half of each block's units (the smaller
    half when a block is odd) is 1. Blocks of one unit are in neither half."""
    blocks = np.asarray(blocks)
    masks = np.zeros((splits, len(blocks)))
    for block in np.unique(blocks):
        members = np.flatnonzero(blocks == block)
        if len(members) < 2:
            continue
        half = len(members) // 2
        order = np.argsort(rng.uniform(size=(splits, len(members))), axis=1)
        chosen = members[order[:, :half]]
        np.put_along_axis(masks, chosen, 1.0, axis=1)
    return masks


def split_taus(successes: np.ndarray, trials: np.ndarray, blocks: np.ndarray, *,
               targets: int, splits: int, rng: np.random.Generator) -> np.ndarray:
    """(splits, groups) τ-b between the halves, from (units, groups × targets) pass tables
    whose columns run targets-fastest (NaN where a half ties every target or has no rows)."""
    masks = half_masks(blocks, splits, rng)
    used = np.zeros(len(blocks))
    for block in np.unique(blocks):
        if (blocks == block).sum() >= 2:
            used[blocks == block] = 1.0
    other = used[None, :] - masks
    with np.errstate(divide="ignore", invalid="ignore"):
        rate_a = (masks @ successes) / (masks @ trials)
        rate_b = (other @ successes) / (other @ trials)
    shape = (splits, -1, targets)
    return kendall_tau_b(rate_a.reshape(shape), rate_b.reshape(shape))


def rank_noise_ceiling(main: pd.DataFrame, *, paired: bool, seed: int,
                       splits: int = SPLITS) -> NoiseCeiling:
    """τ-b between two halves of the main arm's valid rows (`main`: the planned rows the arms
    are compared on), over `splits` seeded splits: of each scenario row's samples when the
    arms share the scenarios and the rows have two samples or more, else of each metric's
    base scenarios."""
    valid = main[valid_mask(main)]
    targets = sorted(valid["target"].astype(str).unique())
    none = {"value": None, "low": None, "high": None, "splits": 0, "n_targets": len(targets)}
    if len(targets) < MIN_TARGETS_FOR_CORRELATION:
        return NoiseCeiling(**none, split=None, reason=f"a rank correlation needs at least "
                            f"{MIN_TARGETS_FOR_CORRELATION} targets with valid rows")
    by_sample = paired and valid["sample"].nunique() >= 2
    if by_sample:
        unit = valid["scenario_id"].astype(str) + "\x00" + valid["sample"].astype(str)
        block_of = valid["scenario_id"].astype(str)
    else:
        unit = cluster_ids(valid).astype(str)
        block_of = cluster_strata(valid).astype(str)
    unit_codes, units = pd.factorize(unit)
    blocks = pd.Series(block_of.to_numpy()).groupby(unit_codes).first().to_numpy()
    target_codes = pd.Index(targets).get_indexer(valid["target"].astype(str))
    flat = unit_codes * len(targets) + target_codes
    size = len(units) * len(targets)
    successes = np.bincount(flat, weights=passes(valid), minlength=size).reshape(-1, len(targets))
    trials = np.bincount(flat, minlength=size).astype(float).reshape(-1, len(targets))
    if not (pd.Series(blocks).value_counts() >= 2).any():
        return NoiseCeiling(**none, split=None, reason="no metric has two base scenarios (nor a "
                            "scenario row two samples) to split in halves")
    taus = split_taus(successes, trials, blocks, targets=len(targets), splits=splits,
                      rng=np.random.default_rng(seed))[:, 0]
    taus = taus[np.isfinite(taus)]
    how = SAMPLE_SPLIT if by_sample else SCENARIO_SPLIT
    if paired and not by_sample:
        how += " (one sample per scenario row: its samples cannot be split)"
    if not len(taus):
        return NoiseCeiling(**none, split=how, reason="every split ties all targets in a half")
    low, high = np.quantile(taus, [0.025, 0.975])
    return NoiseCeiling(value=float(taus.mean()), low=float(low), high=float(high), split=how,
                        splits=len(taus), n_targets=len(targets))


def _checked(correlation: RankCorrelation, ceiling: NoiseCeiling) -> RankCorrelation:
    """The correlation with its interval withheld, with the reason, where the ceiling is below
    `CEILING_FOR_INTERVAL` or missing."""
    if correlation.ci_low is None or (ceiling.value is not None
                                      and ceiling.value >= CEILING_FOR_INTERVAL):
        return correlation
    why = (f"the noise ceiling is {ceiling.value:.2f}, below {CEILING_FOR_INTERVAL}"
           if ceiling.value is not None else f"there is no noise ceiling ({ceiling.reason})")
    return correlation.model_copy(update={
        "ci_low": None, "ci_high": None, "ci_method": methods.NONE,
        "reason": f"no interval: {why}. Where two halves of the main arm rank the targets this "
                  "differently, the percentile interval follows the agreement noise leaves, and "
                  "the coverage sweep found it missing the true rank agreement far more often "
                  "than it claims (docs/validation_coverage.md); read the value against the "
                  "ceiling"})


def with_ceiling(comparison: ArmComparison, ceiling: NoiseCeiling) -> ArmComparison:
    """The comparison with τ-b's and ρ's intervals kept only where the ceiling allows them."""
    return comparison.model_copy(update={
        "kendall_tau": _checked(comparison.kendall_tau, ceiling),
        "spearman_rho": _checked(comparison.spearman_rho, ceiling)})
