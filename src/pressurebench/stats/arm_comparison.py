"""Comparing two arms of a study: do pass rates and rankings hold when one ingredient changes?

An arm might use scenarios written by another generator model, or another
model playing the user.

Given the score rows of arm A and arm B, it reports per target the difference
in pass rate (A − B), the rank correlation of the targets between the arms
(Kendall's tau-b and Spearman's rho), and for each pair of targets how often
their order flips between the arms. Differences get cluster-t intervals
(`stats.cluster_t`); correlations and flips come from the bootstrap replicates.

When the arms play the same base scenarios (the user-model arm replays the
main arm's scenarios with another simulated user), both arms' rates in a
replicate come from the same resampled scenarios: a paired bootstrap. When
they do not (another generator wrote other scenarios), each arm is resampled
on its own. By default the arms are paired when they hold the same set of
base ids. Ids alone cannot tell that a regenerated benchmark reuses the names
`m01_s001`... for different scenarios, so callers that know the arms are
unrelated pass `paired=False`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pydantic import Field
from scipy.stats import rankdata

from ..schemas import Row
from . import methods
from .bootstrap import ClusterBootstrap, check_confidence_level, percentile_interval
from .cluster_t import DesignVariance
from .differences import estimate_differences, independent_design, paired_design
from .estimates import Difference
from .frame import check_scores, cluster_ids, cluster_strata
from .grouping import pass_tables
from .interval_rules import DIFFERENCE, INDEPENDENT_DIFFERENCE

MIN_TARGETS_FOR_CORRELATION = 3


class ArmDifference(Difference):
    """Pass rate of one target in arm `a` minus its pass rate in arm `b`."""

    target: str


class RankCorrelation(Row):
    """Rank correlation of the targets' pass rates between the two arms.

    When every bootstrap replicate orders the targets alike, the interval is a
    point: the bootstrap saw no other ordering.
    """

    value: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    n_targets: int = Field(ge=0)
    reason: str | None = None


class OrderFlip(Row):
    """Whether two targets swap places between the arms."""

    target_1: str
    target_2: str
    flipped: bool | None = Field(description="the point estimates order the pair oppositely")
    probability: float | None = Field(
        description="share of bootstrap replicates in which the arms order the pair strictly "
        "oppositely (a tie in either arm is not a flip)"
    )


class ArmComparison(Row):
    arm_a: str
    arm_b: str
    paired: bool
    targets: list[str] = Field(description="targets present in both arms")
    differences: list[ArmDifference]
    kendall_tau: RankCorrelation
    spearman_rho: RankCorrelation
    order_flips: list[OrderFlip]


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b along the last axis, vectorised over the leading ones; NaN when undefined."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    i, j = np.triu_indices(x.shape[-1], k=1)
    sx, sy = np.sign(x[..., i] - x[..., j]), np.sign(y[..., i] - y[..., j])
    pairs = len(i)
    tied_x, tied_y = (sx == 0).sum(axis=-1), (sy == 0).sum(axis=-1)
    den = np.sqrt((pairs - tied_x) * (pairs - tied_y))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (sx * sy).sum(axis=-1) / den, np.nan)


def spearman_rho(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho (correlation of average ranks) along the last axis; NaN where undefined."""
    rx = rankdata(np.asarray(x, dtype=float), axis=-1)
    ry = rankdata(np.asarray(y, dtype=float), axis=-1)
    rx -= rx.mean(axis=-1, keepdims=True)
    ry -= ry.mean(axis=-1, keepdims=True)
    den = np.sqrt((rx**2).sum(axis=-1) * (ry**2).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (rx * ry).sum(axis=-1) / den, np.nan)


def _correlation(
    statistic: Callable[[np.ndarray, np.ndarray], np.ndarray],
    point_a: np.ndarray,
    point_b: np.ndarray,
    reps_a: np.ndarray,
    reps_b: np.ndarray,
    method: str,
    confidence_level: float,
) -> RankCorrelation:
    n = point_a.shape[-1]

    def without_interval(reason: str, value: float | None = None) -> RankCorrelation:
        return RankCorrelation(
            value=value, ci_low=None, ci_high=None, ci_method=methods.NONE, n_targets=n,
            reason=reason,
        )

    if n < MIN_TARGETS_FOR_CORRELATION:
        return without_interval(
            f"a rank correlation needs at least {MIN_TARGETS_FOR_CORRELATION} targets "
            "with valid rows in both arms"
        )
    value = float(statistic(point_a, point_b))
    if not np.isfinite(value):
        return without_interval("all targets tie in one arm")
    low, high, _ = percentile_interval(statistic(reps_a, reps_b), confidence_level)
    if not np.isfinite(low[0]):
        return without_interval("all targets tie in one arm in every bootstrap replicate", value)
    return RankCorrelation(
        value=value, ci_low=float(low[0]), ci_high=float(high[0]), ci_method=method, n_targets=n
    )


def _order_flips(
    targets: list[str],
    point_a: np.ndarray,
    point_b: np.ndarray,
    reps_a: np.ndarray,
    reps_b: np.ndarray,
) -> list[OrderFlip]:
    out = []
    for i, j in itertools.combinations(range(len(targets)), 2):
        point = (point_a[i] - point_a[j]) * (point_b[i] - point_b[j])
        reps = (reps_a[:, i] - reps_a[:, j]) * (reps_b[:, i] - reps_b[:, j])
        reps = reps[np.isfinite(reps)]
        out.append(
            OrderFlip(
                target_1=targets[i],
                target_2=targets[j],
                flipped=bool(point < 0) if np.isfinite(point) else None,
                probability=float((reps < 0).mean()) if len(reps) else None,
            )
        )
    return out


def arm_bootstraps(
    arm_a: pd.DataFrame, arm_b: pd.DataFrame, *, paired: bool, resamples: int, seed: int
) -> tuple[ClusterBootstrap, ClusterBootstrap, str]:
    """The bootstraps two arms are resampled with, and the name of that method.

    Paired: one bootstrap over the union of both arms' base scenarios, so a
    replicate draws the same scenarios for both and their difference keeps the
    pairing. Independent: each arm on its own, from two streams spawned from `seed`.
    """
    if paired:
        both = pd.concat(
            [
                pd.DataFrame({"metric_id": cluster_strata(arm), "base_id": cluster_ids(arm)})
                for arm in (arm_a, arm_b)
            ]
        )
        boot = ClusterBootstrap.from_scores(both, resamples=resamples, seed=seed)
        return boot, boot, methods.CLUSTER_BOOTSTRAP
    seed_a, seed_b = np.random.SeedSequence(seed).spawn(2)
    return (
        ClusterBootstrap.from_scores(arm_a, resamples=resamples, seed=seed_a),
        ClusterBootstrap.from_scores(arm_b, resamples=resamples, seed=seed_b),
        methods.INDEPENDENT_CLUSTER_BOOTSTRAP,
    )


@dataclass(frozen=True)
class ArmTables:
    """Two arms' (successes, trials) pass tables per group, with the bootstraps their clusters
    were counted on (`arm_bootstraps`) and whether the arms are paired."""

    boot_a: ClusterBootstrap
    boot_b: ClusterBootstrap
    tables_a: tuple[np.ndarray, np.ndarray]
    tables_b: tuple[np.ndarray, np.ndarray]
    paired: bool

    def replicate_ratios(self) -> tuple[np.ndarray, np.ndarray]:
        """Replicate pass rates of both arms' groups.

        Paired arms are drawn in one pass, so replicate r of both uses the same draw.
        """
        (s_a, t_a), (s_b, t_b) = self.tables_a, self.tables_b
        if not self.paired:
            return self.boot_a.replicate_ratios(s_a, t_a), self.boot_b.replicate_ratios(s_b, t_b)
        reps = self.boot_a.replicate_ratios(np.hstack([s_a, s_b]), np.hstack([t_a, t_b]))
        return reps[:, : s_a.shape[1]], reps[:, s_a.shape[1] :]

    def design(self) -> tuple[DesignVariance, str]:
        """The cluster-t variance of both arms' differences per group, and the name of its
        interval.

        Paired arms share clusters (one bootstrap over their union); independent
        ones each bring their own clusters and strata.
        """
        (s_a, t_a), (s_b, t_b) = self.tables_a, self.tables_b
        if self.paired:
            return (
                paired_design(s_a, t_a, s_b, t_b, self.boot_a.strata_codes, rule=DIFFERENCE),
                methods.CLUSTER_T_MOVER,
            )
        return (
            independent_design(
                s_a, t_a, self.boot_a.strata_codes, s_b, t_b, self.boot_b.strata_codes,
                rule=INDEPENDENT_DIFFERENCE,
            ),
            methods.CLUSTER_T_WELCH_MOVER,
        )


def compare_arms(
    arm_a: pd.DataFrame,
    arm_b: pd.DataFrame,
    *,
    arm_names: tuple[str, str] = ("a", "b"),
    resamples: int = 2000,
    confidence_level: float = 0.95,
    seed: int = 0,
    paired: bool | None = None,
) -> ArmComparison:
    """Differences, rank correlations and order flips between two arms, over their common targets.

    A target without valid rows in an arm gets a None difference and is left
    out of the correlations and flips.
    """
    check_scores(arm_a)
    check_scores(arm_b)
    check_confidence_level(confidence_level)
    if paired is None:
        paired = set(cluster_ids(arm_a)) == set(cluster_ids(arm_b))
    targets = sorted(set(arm_a["target"].astype(str)) & set(arm_b["target"].astype(str)))
    arm_a = arm_a[arm_a["target"].astype(str).isin(targets)]
    arm_b = arm_b[arm_b["target"].astype(str).isin(targets)]
    boot_a, boot_b, method = arm_bootstraps(
        arm_a, arm_b, paired=paired, resamples=resamples, seed=seed
    )
    s_a, t_a = _target_tables(arm_a, boot_a, targets)
    s_b, t_b = _target_tables(arm_b, boot_b, targets)
    tables = ArmTables(boot_a, boot_b, (s_a, t_a), (s_b, t_b), paired)
    reps_a, reps_b = tables.replicate_ratios()
    design, difference_method = tables.design()
    differences = estimate_differences(
        [arm_names] * len(targets),
        s_a,
        t_a,
        s_b,
        t_b,
        design,
        method=difference_method,
        confidence_level=confidence_level,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        point_a, point_b = s_a.sum(axis=0) / t_a.sum(axis=0), s_b.sum(axis=0) / t_b.sum(axis=0)
    rated = np.isfinite(point_a) & np.isfinite(point_b)
    ranked = [t for t, r in zip(targets, rated) if r]
    point_a, point_b, reps_a, reps_b = (
        point_a[rated],
        point_b[rated],
        reps_a[:, rated],
        reps_b[:, rated],
    )
    complete = np.isfinite(reps_a).all(axis=1) & np.isfinite(reps_b).all(axis=1)

    def correlation(statistic: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> RankCorrelation:
        return _correlation(
            statistic, point_a, point_b, reps_a[complete], reps_b[complete], method,
            confidence_level,
        )

    return ArmComparison(
        arm_a=arm_names[0],
        arm_b=arm_names[1],
        paired=paired,
        targets=targets,
        differences=[
            ArmDifference(target=t, **d.model_dump()) for t, d in zip(targets, differences)
        ],
        kendall_tau=correlation(kendall_tau_b),
        spearman_rho=correlation(spearman_rho),
        order_flips=_order_flips(ranked, point_a, point_b, reps_a, reps_b),
    )


def _target_tables(
    arm: pd.DataFrame, bootstrap: ClusterBootstrap, targets: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """(clusters, targets) tables of passes and valid rows, columns in the order of `targets`."""
    arm = arm.assign(target=arm["target"].astype(str))
    tables = pass_tables(arm, bootstrap.codes(cluster_ids(arm)), bootstrap.n_clusters, [["target"]])
    columns = [tables.keys[0].index((t,)) for t in targets]
    return tables.successes[:, columns], tables.trials[:, columns]
