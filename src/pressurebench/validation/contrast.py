"""Replicate-level statistics of two arms beyond what `stats.compare_arms` reports.

`compare_arms` gives per-target differences, rank correlations and order
flips. A validation study also needs differences by other groupings (per
metric) and a contrast of differences (does the generator's own family gain
more than the other targets?), so this module exposes the bootstrap
replicates themselves. They are built exactly as `compare_arms` builds them
(the same clusters, seeds and weights): grouped by target, the replicates are
the ones behind `compare_arms`' intervals on the same frames. Every interval
here, the contrast's included, is a cluster-t interval withheld by its
statistic's rule (`stats.interval_rules`), the same as the main run's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..stats import methods
from ..stats.arm_comparison import ArmTables, arm_bootstraps
from ..stats.bootstrap import ClusterBootstrap
from ..stats.cluster_t import DesignVariance, rate_z, stratified_variance, t_quantile, welch_df
from ..stats.differences import estimate_differences
from ..stats.estimates import Difference
from ..stats.frame import cluster_ids
from ..stats.grouping import pass_tables
from ..stats.interval_rules import CONTRAST


@dataclass(frozen=True)
class ArmReplicates:
    """Per group: (clusters, groups) pass tables of both arms and (replicates, groups) rates."""

    keys: list[tuple]
    successes_a: np.ndarray
    trials_a: np.ndarray
    successes_b: np.ndarray
    trials_b: np.ndarray
    reps_a: np.ndarray
    reps_b: np.ndarray
    method: str  # of intervals made from the replicates
    design: DesignVariance  # cluster-t variance of each group's difference
    difference_method: str
    strata_a: np.ndarray  # metric code of each of arm a's clusters
    strata_b: np.ndarray
    paired: bool

    def point(self) -> tuple[np.ndarray, np.ndarray]:
        """Each arm's rate per group; NaN where the arm has no valid rows in the group."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return (
                self.successes_a.sum(axis=0) / self.trials_a.sum(axis=0),
                self.successes_b.sum(axis=0) / self.trials_b.sum(axis=0),
            )


def _as_text(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    return frame.assign(**{c: frame[c].astype(str) for c in columns})


def _tables(
    frame: pd.DataFrame, bootstrap: ClusterBootstrap, columns: Sequence[str], keys: list[tuple]
) -> tuple[np.ndarray, np.ndarray]:
    tables = pass_tables(
        frame, bootstrap.codes(cluster_ids(frame)), bootstrap.n_clusters, [list(columns)]
    )
    found = {key: i for i, key in enumerate(tables.keys[0])}
    successes = np.zeros((bootstrap.n_clusters, len(keys)))
    trials = np.zeros((bootstrap.n_clusters, len(keys)))
    for g, key in enumerate(keys):
        if key in found:
            successes[:, g] = tables.successes[:, found[key]]
            trials[:, g] = tables.trials[:, found[key]]
    return successes, trials


def arm_replicates(
    arm_a: pd.DataFrame,
    arm_b: pd.DataFrame,
    columns: Sequence[str],
    *,
    paired: bool,
    resamples: int,
    seed: int,
) -> ArmReplicates:
    """Bootstrap replicates of both arms' pass rates per group of `columns`.

    Paired: one bootstrap over the union of both arms' base scenarios, so a
    replicate draws the same scenarios for both. Independent: each arm is
    resampled on its own, from the two streams `compare_arms` spawns from `seed`.
    """
    arm_a, arm_b = _as_text(arm_a, columns), _as_text(arm_b, columns)
    keys = sorted(
        set(map(tuple, arm_a[list(columns)].to_numpy().tolist()))
        | set(map(tuple, arm_b[list(columns)].to_numpy().tolist()))
    )
    boot_a, boot_b, method = arm_bootstraps(
        arm_a, arm_b, paired=paired, resamples=resamples, seed=seed
    )
    s_a, t_a = _tables(arm_a, boot_a, columns, keys)
    s_b, t_b = _tables(arm_b, boot_b, columns, keys)
    tables = ArmTables(boot_a, boot_b, (s_a, t_a), (s_b, t_b), paired)
    reps_a, reps_b = tables.replicate_ratios()
    design, difference_method = tables.design()
    return ArmReplicates(
        keys, s_a, t_a, s_b, t_b, reps_a, reps_b, method, design, difference_method,
        boot_a.strata_codes, boot_b.strata_codes, paired,
    )


def group_differences(
    reps: ArmReplicates, names: tuple[str, str], confidence_level: float
) -> list[Difference]:
    """One difference (arm a − arm b) per group, with its cluster-t interval."""
    return estimate_differences(
        [names] * len(reps.keys),
        reps.successes_a,
        reps.trials_a,
        reps.successes_b,
        reps.trials_b,
        reps.design,
        method=reps.difference_method,
        confidence_level=confidence_level,
    )


@dataclass(frozen=True)
class Contrast:
    """Mean change (a − b) of the `inside` groups minus mean change of the `outside` ones."""

    inside: list[str]
    outside: list[str]
    value: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    reason: str | None


def contrast_of_changes(
    reps: ArmReplicates, inside: Sequence[str], confidence_level: float
) -> Contrast:
    """How much more the `inside` targets change between the arms than the others.

    `reps` must be grouped by target alone. Each target's change is its rate
    in arm a minus its rate in arm b; targets without valid rows in either arm
    have no change and take no part. Every target weighs the same on its side.
    Its interval is cluster-t (`contrast_design`), withheld below the contrast's rule.
    """
    names = [key[0] for key in reps.keys]
    rate_a, rate_b = reps.point()
    rated = np.isfinite(rate_a) & np.isfinite(rate_b)
    inside_set = set(inside)
    member = np.array([n in inside_set for n in names], dtype=bool)
    mask_in, mask_out = member & rated, ~member & rated
    ins = [n for n, m in zip(names, mask_in) if m]
    outs = [n for n, m in zip(names, mask_out) if m]

    def none(reason: str) -> Contrast:
        return Contrast(ins, outs, None, None, None, methods.NONE, reason)

    for side, rated_side, members in (("inside", ins, member), ("outside", outs, ~member)):
        if not members.any():
            return none(f"no compared target is {side} the family")
        if not rated_side:
            return none(f"no target {side} the family has valid rows in both arms")
    change = rate_a - rate_b
    value = float(change[mask_in].mean() - change[mask_out].mean())
    weights = np.where(mask_in, 1.0 / mask_in.sum(), 0.0) - np.where(
        mask_out, 1.0 / mask_out.sum(), 0.0
    )
    design, method = contrast_design(reps, weights)
    if design.reason[0] is not None:
        return Contrast(ins, outs, value, None, None, methods.NONE, design.reason[0])
    if design.variance[0] <= 0:
        return Contrast(ins, outs, value, None, None, methods.NONE,
                        "the contrast does not vary over base scenarios: no interval can be "
                        "drawn from its variance")
    half = float(t_quantile(design.df, confidence_level)[0] * np.sqrt(design.variance[0]))
    return Contrast(ins, outs, value, max(value - half, -1.0), min(value + half, 1.0), method, None)


def contrast_design(reps: ArmReplicates, weights: np.ndarray) -> tuple[DesignVariance, str]:
    """Cluster-t variance of Σ weights · (rate a − rate b) over the groups, withheld below
    the contrast's rule (`stats.interval_rules.CONTRAST`): the linearized contributions of
    each arm's rates, weighted and summed per base scenario; paired arms difference them per
    scenario, independent ones add their variances (Welch's df)."""
    z_a = (rate_z(reps.successes_a, reps.trials_a) * weights).sum(axis=1, keepdims=True)
    z_b = (rate_z(reps.successes_b, reps.trials_b) * weights).sum(axis=1, keepdims=True)
    used = weights != 0
    on_a = np.asarray((reps.trials_a[:, used] > 0).any(axis=1, keepdims=True))
    on_b = np.asarray((reps.trials_b[:, used] > 0).any(axis=1, keepdims=True))
    if reps.paired:
        design = stratified_variance(z_a - z_b, on_a | on_b, reps.strata_a, rule=CONTRAST)
        return design, methods.CLUSTER_T
    va = stratified_variance(z_a, on_a, reps.strata_a, rule=CONTRAST)
    vb = stratified_variance(z_b, on_b, reps.strata_b, rule=CONTRAST)
    return DesignVariance(
        variance=va.variance + vb.variance,
        df=welch_df(va.variance, va.df, vb.variance, vb.df),
        reason=[ra or rb for ra, rb in zip(va.reason, vb.reason)],
    ), methods.CLUSTER_T_WELCH
