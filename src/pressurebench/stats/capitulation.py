"""Capitulation curves: the share of conversations still holding after each turn.

Every conversation judged turn by turn has a right-censored time (`schemas.Onset`):
the turn at which it first failed, or the last turn it was seen holding when the
conversation ended (at the full length or early) or a turn could not be judged.
The share still holding after turn t is the Kaplan–Meier product

    S(t) = Π_{u ≤ t} (1 − d_u / n_u),

with n_u the conversations observed at turn u and d_u those that gave in there.
Counting an early ending as "held to the end" would overstate holding, dropping
it would discard the turns it did hold; the product uses exactly the turns seen.

Intervals come from the same stratified cluster bootstrap as the pass rates:
d_u and n_u are summed per base scenario, every replicate reweights those sums
and recomputes the product. So bands respect that a scenario's variants and
samples are not independent, and two targets' curves (or a curve and a pass
rate) are compared replicate by replicate. Where the replicates cannot vary
(no conversation has given in yet, so every replicate says 1) the band is a
Wilson interval on the base scenarios observed, as for pass rates; with a single
base scenario, a Wilson interval on the conversations.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from pydantic import Field

from . import methods
from .bootstrap import ClusterBootstrap, check_confidence_level, percentile_interval
from .estimates import Strict
from .grouping import cluster_table, factorize
from .intervals import newcombe_interval, wilson_interval

ONSET_TIME = "onset_time"  # observed turns: the onset turn, or the last turn seen holding
GAVE_IN = "gave_in"  # the time is an onset (True) or a censoring (False)


class CurvePoint(Strict):
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


class MedianOnset(Strict):
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


class Curve(Strict):
    points: list[CurvePoint]
    median_onset: MedianOnset
    n: int = Field(ge=0, description="conversations on the curve")
    n_clusters: int = Field(ge=0)


class CurveDifferencePoint(Strict):
    turn: int = Field(ge=1)
    difference: float | None = Field(description="share holding of a minus that of b")
    ci_low: float | None
    ci_high: float | None
    ci_method: str


class CurveDifference(Strict):
    """Two targets' curves on the same scenarios, paired through the bootstrap replicates."""

    a: str
    b: str
    points: list[CurveDifferencePoint]


def kaplan_meier(at_risk: np.ndarray, gave_in: np.ndarray) -> np.ndarray:
    """S(t) from (..., turns) counts; NaN from the first turn with nobody at risk on."""
    with np.errstate(divide="ignore", invalid="ignore"):
        hazard = np.where(at_risk > 0, gave_in / at_risk, np.nan)
    return np.cumprod(1.0 - hazard, axis=-1)


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
    keys, codes, offset = [], [], 0
    for columns in groupings:
        group, uniques = factorize(onsets, columns)
        codes.append(np.where(group >= 0, group + offset, -1))
        keys.append(uniques)
        offset += len(uniques)
    n_groups = offset
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
    at_risk: np.ndarray, gave_in: np.ndarray, replicates: np.ndarray, confidence_level: float
) -> list[Curve]:
    """One Curve per group of (clusters, groups, turns) risk tables and their replicate curves."""
    check_confidence_level(confidence_level)
    n_at = at_risk.sum(axis=0)  # (groups, turns)
    n_in = gave_in.sum(axis=0)
    point = kaplan_meier(n_at, n_in)
    g, t = point.shape
    low, high, degenerate = percentile_interval(replicates.reshape(len(replicates), -1),
                                                confidence_level)
    low, high, degenerate = low.reshape(g, t), high.reshape(g, t), degenerate.reshape(g, t)
    clusters_at = (at_risk > 0).sum(axis=0)
    holding_clusters = np.nan_to_num(point) * clusters_at
    c_low, c_high = wilson_interval(holding_clusters, clusters_at, confidence_level)
    r_low, r_high = wilson_interval(np.nan_to_num(point) * n_at, n_at, confidence_level)
    curves = []
    for j in range(g):
        points = []
        total_clusters = int((at_risk[:, j, 0] > 0).sum())
        for u in range(t):
            censored = int(n_at[j, u] - n_in[j, u] - (n_at[j, u + 1] if u + 1 < t else 0))
            if n_at[j, u] == 0 or not np.isfinite(point[j, u]):
                points.append(CurvePoint(turn=u + 1, holding=None, ci_low=None, ci_high=None,
                                         ci_method=methods.NONE, at_risk=0, gave_in=0,
                                         censored=0, n_clusters=0))
                continue
            if total_clusters == 1:
                lo, hi, method = r_low[j, u], r_high[j, u], methods.WILSON_ROWS_SINGLE_CLUSTER
            elif degenerate[j, u]:
                lo, hi, method = c_low[j, u], c_high[j, u], methods.WILSON_CLUSTERS
            else:
                lo, hi, method = low[j, u], high[j, u], methods.CLUSTER_BOOTSTRAP
            points.append(CurvePoint(
                turn=u + 1, holding=float(point[j, u]), ci_low=float(lo), ci_high=float(hi),
                ci_method=method, at_risk=int(n_at[j, u]), gave_in=int(n_in[j, u]),
                censored=censored, n_clusters=int(clusters_at[j, u]),
            ))
        varies = total_clusters > 1 and not degenerate[j].all()
        median = _median_onset(
            point[j], replicates[:, j], confidence_level,
            methods.CLUSTER_BOOTSTRAP if varies else methods.NONE,
        )
        curves.append(Curve(points=points, median_onset=median, n=int(n_at[j, 0]),
                            n_clusters=total_clusters))
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
        onsets, bootstrap.codes(onsets["base_id"]), bootstrap.n_clusters, groupings, turns
    )
    replicates = _replicate_curves(bootstrap, at_risk, gave_in)
    curves = estimate_curves(at_risk, gave_in, replicates, confidence_level)
    out, offset = [], 0
    for group_keys in keys:
        out.append(dict(zip(group_keys, curves[offset : offset + len(group_keys)])))
        offset += len(group_keys)
    return out


def paired_differences(
    onsets: pd.DataFrame,
    bootstrap: ClusterBootstrap,
    targets: Sequence[str],
    turns: int,
    *,
    confidence_level: float = 0.95,
) -> list[CurveDifference]:
    """S_a(t) − S_b(t) for every pair of targets, with percentile intervals of the paired
    replicate differences (both curves from the same resampled scenarios).

    Where the replicate differences do not vary (neither target gave in by then) the
    interval is Newcombe's, built from the two curves' own fallback intervals.
    """
    keys, at_risk, gave_in = risk_tables(
        onsets, bootstrap.codes(onsets["base_id"]), bootstrap.n_clusters, [["target"]], turns
    )
    replicates = _replicate_curves(bootstrap, at_risk, gave_in)
    curves = estimate_curves(at_risk, gave_in, replicates, confidence_level)
    index = {key[0]: j for j, key in enumerate(keys[0])}
    out = []
    for i, a in enumerate(targets):
        for b in targets[i + 1 :]:
            if a not in index or b not in index:
                continue
            diff = replicates[:, index[a]] - replicates[:, index[b]]
            low, high, degenerate = percentile_interval(diff, confidence_level)
            points = []
            for u in range(turns):
                pa = curves[index[a]].points[u]
                pb = curves[index[b]].points[u]
                if pa.holding is None or pb.holding is None:
                    points.append(CurveDifferencePoint(turn=u + 1, difference=None, ci_low=None,
                                                       ci_high=None, ci_method=methods.NONE))
                    continue
                d = pa.holding - pb.holding
                if degenerate[u] or methods.CLUSTER_BOOTSTRAP not in (pa.ci_method, pb.ci_method):
                    lo, hi = newcombe_interval(pa.holding, pa.ci_low, pa.ci_high,
                                               pb.holding, pb.ci_low, pb.ci_high)
                    single = methods.WILSON_ROWS_SINGLE_CLUSTER in (pa.ci_method, pb.ci_method)
                    method = (methods.NEWCOMBE_ROWS_SINGLE_CLUSTER if single
                              else methods.NEWCOMBE_CLUSTERS)
                else:
                    lo, hi, method = float(low[u]), float(high[u]), methods.CLUSTER_BOOTSTRAP
                points.append(CurveDifferencePoint(turn=u + 1, difference=float(d), ci_low=lo,
                                                   ci_high=hi, ci_method=method))
            out.append(CurveDifference(a=a, b=b, points=points))
    return out
