"""Capitulation curves: the share of conversations still holding after each turn.

Every conversation judged turn by turn has a right-censored time (`schemas.Onset`):
the turn at which it first failed, or the last turn it was seen holding when the
conversation ended (at the full length or early) or a turn could not be judged.
The share still holding after turn t is the Kaplan–Meier product

    S(t) = Π_{u ≤ t} (1 − d_u / n_u),

with n_u the conversations observed at turn u and d_u those that gave in there.
Counting an early ending as "held to the end" would overstate holding, dropping
it would discard the turns it did hold; the product uses exactly the turns seen.

Bands are cluster-t intervals, as for pass rates (`stats.cluster_t`): each
hazard d_u / n_u is a ratio of sums over base scenarios, so log S(t) is
linearized into one contribution per base scenario,
−Σ_{u ≤ t} (d_cu − h_u n_cu) / (n_u (1 − h_u)), whose stratified variance over
base scenarios within metrics (times S²) is the variance of S(t); Wilson's
interval on the design-effective n with the t quantile keeps the band inside
[0, 1]. This is Greenwood's variance made to respect that a scenario's variants
and samples are not independent. Two targets' curves on the same scenarios are
compared through the difference of their contributions, scenario by scenario,
so what makes a scenario hard for both cancels. Where almost nothing has given
in (or everything has), the band is a Wilson interval on the base scenarios
observed, as for rates. The median turn of onset has no such linearization
and takes a percentile interval of the stratified cluster bootstrap. Below the
capitulation band's rule (`interval_rules.CAPITULATION`), or with a metric of
a single base scenario, a curve has no bands, its median no interval and its
differences none either, with the reason; a pair of curves is compared below
the curve difference's own rule (`interval_rules.CURVE_DIFFERENCE`) neither.
Both rules are measured, per turn and design, by the sweep in
`pressurebench.stats.sweeps.capitulation` (docs/capitulation_coverage.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field

from ..schemas import Row
from . import methods
from .bootstrap import ClusterBootstrap, check_confidence_level, percentile_interval
from .cluster_t import DesignVariance, stratified_variance, t_quantile, wilson_t_interval
from .frame import GAVE_IN, ONSET_TIME, cluster_ids
from .grouping import by_grouping, cluster_table, grouping_codes
from .interval_rules import CAPITULATION, CURVE_DIFFERENCE, IntervalRule
from .intervals import newcombe_interval, wilson_interval
from .inverted_tests import inverted_p_values
from .multiplicity import Corrected, holm_by_family
from .power import minimum_detectable_effect


class CurvePoint(Row):
    """The share still holding after `turn`, with the conversations it rests on."""

    turn: int = Field(ge=1)
    holding: float | None = Field(description="Kaplan–Meier share still holding; None unobserved")
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    at_risk: int = Field(ge=0, description="conversations observed holding up to this turn")
    gave_in: int = Field(ge=0, description="of those, the ones that gave in at this turn")
    censored: int = Field(ge=0, description="observed through this turn and no further")
    n_clusters: int = Field(ge=0, description="base scenarios with a conversation at risk")


class MedianOnset(Row):
    """The first turn by which half the conversations had given in.

    `reached` is False when the curve never falls to one half within the turns
    observed: the median is then later than the last turn, and `turn` is None.
    A None `ci_high` likewise means the interval runs past the last turn.
    """

    turn: int | None
    reached: bool
    ci_low: int | None
    ci_high: int | None
    ci_method: str


class Curve(Row):
    points: list[CurvePoint]
    median_onset: MedianOnset
    n: int = Field(ge=0, description="conversations on the curve")
    n_clusters: int = Field(ge=0)
    reason: str | None = Field(default=None, description="why the curve has no bands")


class CurveDifferencePoint(Corrected):
    """One turn of two curves' difference; Holm's family is the turns of the pair."""

    turn: int = Field(ge=1)
    difference: float | None = Field(description="share holding of a minus that of b")
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    p_value: float | None = Field(
        default=None, description="two-sided p-value of no difference at this turn, from "
        "inverting the cluster-t interval shown (none beside a Newcombe interval)")
    mde: float | None = Field(
        default=None, description="minimum detectable difference at 80% power (`stats.power`)")


class CurveDifference(Row):
    """Two targets' curves on the same scenarios, paired through the bootstrap replicates."""

    a: str
    b: str
    points: list[CurveDifferencePoint]
    reason: str | None = Field(default=None, description="why the differences have no intervals")


def kaplan_meier(at_risk: np.ndarray, gave_in: np.ndarray) -> np.ndarray:
    """S(t) from (..., turns) counts; NaN from the first turn with nobody at risk on."""
    with np.errstate(divide="ignore", invalid="ignore"):
        hazard = np.where(at_risk > 0, gave_in / at_risk, np.nan)
    return np.cumprod(1.0 - hazard, axis=-1)


def linearized_curves(at_risk: np.ndarray, gave_in: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """S(t) per (group, turn) and each base scenario's linearized contribution to it,
    (clusters, groups, turns); NaN where the curve has reached 0 (a hazard of 1)."""
    n_at = at_risk.sum(axis=0)
    n_in = gave_in.sum(axis=0)
    point = kaplan_meier(n_at, n_in)
    with np.errstate(divide="ignore", invalid="ignore"):
        hazard = np.where(n_at > 0, n_in / n_at, np.nan)
        z = np.where(n_at > 0, (gave_in - hazard * at_risk) / np.where(n_at > 0, n_at, 1.0), 0.0)
        log_terms = np.where(hazard < 1, z / (1.0 - hazard), np.nan)
    return point, -point * np.cumsum(log_terms, axis=-1)


def _curve_design(
    z: np.ndarray, active: np.ndarray, strata: np.ndarray, rule: IntervalRule
) -> DesignVariance:
    """Stratified variance of every (group, turn) of (clusters, groups, turns) contributions,
    each group counting the base scenarios `active` (clusters, groups) marks, withheld below
    the statistic's `rule`."""
    k, g, t = z.shape
    on = np.broadcast_to(active[:, :, None], z.shape).reshape(k, g * t)
    design = stratified_variance(np.nan_to_num(z).reshape(k, g * t), on, strata, rule=rule)
    return DesignVariance(design.variance.reshape(g, t), design.df.reshape(g, t),
                          design.reason[::t])


def risk_tables(
    onsets: pd.DataFrame,
    cluster: np.ndarray,
    n_clusters: int,
    groupings: Sequence[Sequence[str]],
    turns: int,
) -> tuple[list[list[tuple]], np.ndarray, np.ndarray]:
    """Per base scenario, group and turn: conversations at risk and conversations giving in.

    Returns the group keys of every grouping and two (clusters, groups, turns) tables.
    """
    time = onsets[ONSET_TIME].to_numpy(dtype=int)
    event = onsets[GAVE_IN].to_numpy(dtype=bool)
    codes, keys, n_groups = grouping_codes(onsets, groupings)
    at_risk = np.zeros((n_clusters, n_groups, turns))
    gave_in = np.zeros((n_clusters, n_groups, turns))
    for group in codes:
        for t in range(1, turns + 1):
            at_risk[:, :, t - 1] += cluster_table(
                cluster, group, n_clusters, n_groups, (time >= t).astype(float)
            )
            gave_in[:, :, t - 1] += cluster_table(
                cluster, group, n_clusters, n_groups, ((time == t) & event).astype(float)
            )
    return keys, at_risk, gave_in


def _replicate_curves(
    bootstrap: ClusterBootstrap, at_risk: np.ndarray, gave_in: np.ndarray
) -> np.ndarray:
    """(resamples, groups, turns) curves, one per bootstrap replicate."""
    k, g, t = at_risk.shape
    sums = bootstrap.replicate_sums(np.concatenate([at_risk, gave_in], axis=1).reshape(k, -1))
    sums = sums.reshape(-1, 2 * g, t)
    return kaplan_meier(sums[:, :g], sums[:, g:])


def _median(curves: np.ndarray) -> np.ndarray:
    """First turn (1-based) with S ≤ 1/2 along the last axis; inf where never."""
    below = np.nan_to_num(curves, nan=1.0) <= 0.5
    first = np.argmax(below, axis=-1) + 1.0
    return np.where(below.any(axis=-1), first, np.inf)


def _median_onset(point: np.ndarray, replicates: np.ndarray, level: float, method: str):
    """Median turn of onset with a percentile interval over the replicate medians."""
    turn = float(_median(point))
    alpha = 1.0 - level
    if method == methods.CLUSTER_BOOTSTRAP:
        reps = _median(replicates)
        low = float(np.quantile(reps, alpha / 2, method="inverted_cdf"))
        high = float(np.quantile(reps, 1 - alpha / 2, method="inverted_cdf"))
    else:  # no resampling variation: the interval cannot be estimated
        low, high, method = np.inf, np.inf, methods.NONE

    def finite(x: float) -> int | None:
        return int(x) if np.isfinite(x) else None

    return MedianOnset(
        turn=finite(turn),
        reached=bool(np.isfinite(turn)),
        ci_low=finite(low) if method != methods.NONE else None,
        ci_high=finite(high),
        ci_method=method,
    )


def estimate_curves(
    at_risk: np.ndarray,
    gave_in: np.ndarray,
    replicates: np.ndarray,
    strata: np.ndarray,
    confidence_level: float,
) -> list[Curve]:
    """One Curve per group of (clusters, groups, turns) risk tables; `strata` gives each
    cluster's metric (`ClusterBootstrap.strata_codes`), `replicates` the bootstrap curves
    the median onset's interval comes from."""
    check_confidence_level(confidence_level)
    n_at = at_risk.sum(axis=0)  # (groups, turns)
    n_in = gave_in.sum(axis=0)
    point, z = linearized_curves(at_risk, gave_in)
    g, t = point.shape
    started = at_risk[:, :, 0] > 0
    design = _curve_design(z, started, strata, CAPITULATION)
    low, high = wilson_t_interval(point, design.variance, design.df, confidence_level)
    clusters_at = (at_risk > 0).sum(axis=0)
    holding_clusters = np.nan_to_num(point) * clusters_at
    c_low, c_high = wilson_interval(holding_clusters, clusters_at, confidence_level)
    curves = []
    for j in range(g):
        points = []
        total_clusters = int(started[:, j].sum())
        reason = design.reason[j]
        for u in range(t):
            censored = int(n_at[j, u] - n_in[j, u] - (n_at[j, u + 1] if u + 1 < t else 0))
            if n_at[j, u] == 0 or not np.isfinite(point[j, u]):
                points.append(CurvePoint(turn=u + 1, holding=None, ci_low=None, ci_high=None,
                                         ci_method=methods.NONE, at_risk=0, gave_in=0,
                                         censored=0, n_clusters=0))
                continue
            s_ju = point[j, u]
            if reason is not None:
                lo, hi, method = None, None, methods.NONE
            elif not np.isfinite(low[j, u]) or total_clusters * min(s_ju, 1 - s_ju) < 1:
                lo, hi, method = c_low[j, u], c_high[j, u], methods.WILSON_CLUSTERS
            else:
                lo, hi, method = low[j, u], high[j, u], methods.CLUSTER_T_WILSON
            points.append(CurvePoint(
                turn=u + 1, holding=float(s_ju),
                ci_low=None if lo is None else float(lo), ci_high=None if hi is None else float(hi),
                ci_method=method, at_risk=int(n_at[j, u]), gave_in=int(n_in[j, u]),
                censored=censored, n_clusters=int(clusters_at[j, u]),
            ))
        _, _, degenerate = percentile_interval(replicates[:, j], confidence_level)
        varies = reason is None and not degenerate.all()
        median = _median_onset(
            point[j], replicates[:, j], confidence_level,
            methods.CLUSTER_BOOTSTRAP if varies else methods.NONE,
        )
        curves.append(Curve(points=points, median_onset=median, n=int(n_at[j, 0]),
                            n_clusters=total_clusters, reason=reason))
    return curves


def grouped_curves(
    onsets: pd.DataFrame,
    bootstrap: ClusterBootstrap,
    groupings: Sequence[Sequence[str]],
    turns: int,
    *,
    confidence_level: float = 0.95,
) -> list[dict[tuple, Curve]]:
    """Curves for several groupings of the conversations from one pass over the replicates."""
    keys, at_risk, gave_in = risk_tables(
        onsets, bootstrap.codes(cluster_ids(onsets)), bootstrap.n_clusters, groupings, turns
    )
    replicates = _replicate_curves(bootstrap, at_risk, gave_in)
    curves = estimate_curves(at_risk, gave_in, replicates, bootstrap.strata_codes, confidence_level)
    return by_grouping(keys, curves)


def paired_differences(
    onsets: pd.DataFrame,
    bootstrap: ClusterBootstrap,
    targets: Sequence[str],
    turns: int,
    *,
    confidence_level: float = 0.95,
) -> list[CurveDifference]:
    """S_a(t) − S_b(t) for every pair of targets, with paired cluster-t intervals
    (`curve_differences`)."""
    keys, at_risk, gave_in = risk_tables(
        onsets, bootstrap.codes(cluster_ids(onsets)), bootstrap.n_clusters, [["target"]], turns
    )
    replicates = _replicate_curves(bootstrap, at_risk, gave_in)
    strata = bootstrap.strata_codes
    curves = estimate_curves(at_risk, gave_in, replicates, strata, confidence_level)
    index = {key[0]: j for j, key in enumerate(keys[0])}
    pairs = [
        (a, b, index[a], index[b])
        for i, a in enumerate(targets)
        for b in targets[i + 1 :]
        if a in index and b in index
    ]
    return curve_differences(at_risk, gave_in, strata, curves, pairs, confidence_level)


def curve_differences(
    at_risk: np.ndarray,
    gave_in: np.ndarray,
    strata: np.ndarray,
    curves: Sequence[Curve],
    pairs: Sequence[tuple[str, str, int, int]],
    confidence_level: float,
) -> list[CurveDifference]:
    """S_a(t) − S_b(t) for each (a, b, group of a, group of b) of `pairs`, from the
    (clusters, groups, turns) risk tables and the groups' `curves`: the two curves' linearized
    contributions are differenced base scenario by base scenario.

    Where that difference does not vary (neither target gave in by then) the interval is
    Newcombe's, built from the two curves' own intervals. Where either curve has no bands,
    or the pair's design is smaller than the curve difference's rule, the differences have
    no intervals, with the reason.
    """
    if not pairs:
        return []
    turns = at_risk.shape[2]
    _, z = linearized_curves(at_risk, gave_in)
    ja, jb = (np.array([p[k] for p in pairs]) for k in (2, 3))
    active = (at_risk[:, ja, 0] > 0) | (at_risk[:, jb, 0] > 0)
    design = _curve_design(z[:, ja] - z[:, jb], active, strata, CURVE_DIFFERENCE)
    se = np.sqrt(design.variance).ravel()
    df = design.df.ravel()
    point = np.array([[np.nan if pa.holding is None or pb.holding is None
                       else pa.holding - pb.holding
                       for pa, pb in zip(curves[i].points, curves[j].points)]
                      for _, _, i, j in pairs]).ravel()

    def bounds(levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        half = t_quantile(df, levels) * se
        return np.maximum(point - half, -1.0), np.minimum(point + half, 1.0)

    low, high = bounds(np.full(point.shape, confidence_level))
    p_values = inverted_p_values(bounds, len(point), confidence_level).reshape(len(pairs), -1)
    mde = minimum_detectable_effect(se, df, confidence_level).reshape(len(pairs), -1)
    low, high = low.reshape(len(pairs), -1), high.reshape(len(pairs), -1)
    out = []
    for n, (a, b, i, j) in enumerate(pairs):
        reason = curves[i].reason or curves[j].reason or design.reason[n]
        points: list[dict[str, Any]] = []
        for u in range(turns):
            pa, pb = curves[i].points[u], curves[j].points[u]
            if pa.holding is None or pb.holding is None:
                points.append({"turn": u + 1, "difference": None, "ci_low": None,
                               "ci_high": None, "ci_method": methods.NONE})
                continue
            d = pa.holding - pb.holding
            shown: dict[str, Any] = {"turn": u + 1, "difference": float(d)}
            if reason is not None:
                shown |= {"ci_low": None, "ci_high": None, "ci_method": methods.NONE}
            elif not np.isfinite(high[n, u]) or se.reshape(len(pairs), -1)[n, u] <= 0:
                assert pa.ci_low is not None and pa.ci_high is not None \
                    and pb.ci_low is not None and pb.ci_high is not None, \
                    "a curve without a reason has a band at every turn it holds a share"
                lo, hi = newcombe_interval(pa.holding, pa.ci_low, pa.ci_high,
                                           pb.holding, pb.ci_low, pb.ci_high)
                shown |= {"ci_low": lo, "ci_high": hi, "ci_method": methods.NEWCOMBE_CLUSTERS}
            else:
                shown |= {"ci_low": float(low[n, u]), "ci_high": float(high[n, u]),
                          "ci_method": methods.CLUSTER_T, "p_value": float(p_values[n, u]),
                          "mde": float(mde[n, u])}
            points.append(shown)
        tests, _ = holm_by_family([pt.get("p_value") for pt in points], [0] * len(points),
                                  confidence_level)
        out.append(CurveDifference(a=a, b=b, reason=reason, points=[
            CurveDifferencePoint(**pt, **t) for pt, t in zip(points, tests)]))
    return out
