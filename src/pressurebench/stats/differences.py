"""Differences of pass rates with cluster-t intervals, paired or independent.

A paired difference takes both rates from the same base scenarios, and its
variance from the per-scenario difference of their linearized contributions
(`stats.cluster_t`), so whatever makes a scenario hard for both sides cancels
and the interval is as narrow as the design allows. Independent differences
(two arms whose scenarios do not correspond) add the two rates' variances and
use Welch–Satterthwaite degrees of freedom.

Two ways of making the interval from that variance, chosen per statistic by
the coverage grid (`stats.interval_rules`): d ± t·√variance (`cluster-t`,
demographic gaps, whose true value is near 0), or MOVER (Zou & Donner 2008,
"method of variance estimates recovery"): each rate's Wilson-t interval on
its design-effective n, combined with the estimated correlation of the two
rates. Near 0 or 1 a rate's interval is skewed, and the symmetric t interval
of a difference of two such rates then misses on the side the skew points
away from (0.90–0.93 at 3 base scenarios per metric, rate 0.85, ICC 0.5, in
the grid); MOVER inherits the skew and keeps its coverage there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from . import methods
from .cluster_t import (
    DesignVariance,
    rate_z,
    stratified_variance,
    t_quantile,
    welch_df,
    wilson_t_interval,
)
from .estimates import Difference
from .interval_rules import IntervalRule
from .intervals import newcombe_interval, wilson_interval
from .inverted_tests import inverted_p_values
from .power import minimum_detectable_effect

MOVER_METHODS = frozenset({methods.CLUSTER_T_MOVER, methods.CLUSTER_T_WELCH_MOVER})


def paired_design(
    successes_a: np.ndarray,
    trials_a: np.ndarray,
    successes_b: np.ndarray,
    trials_b: np.ndarray,
    strata: np.ndarray,
    *,
    rule: IntervalRule,
) -> DesignVariance:
    """Variance of each group's a − b when both sides lie on the same clusters, withheld
    below the statistic's `rule`."""
    z_a, z_b = rate_z(successes_a, trials_a), rate_z(successes_b, trials_b)
    active = (trials_a > 0) | (trials_b > 0)
    design = stratified_variance(z_a - z_b, active, strata, rule=rule)
    var_a = stratified_variance(z_a, active, strata, min_df=0).variance
    var_b = stratified_variance(z_b, active, strata, min_df=0).variance
    covariance = (var_a + var_b - design.variance) / 2
    return design._replace(sides=(var_a, var_b, covariance))


def independent_design(
    successes_a: np.ndarray,
    trials_a: np.ndarray,
    strata_a: np.ndarray,
    successes_b: np.ndarray,
    trials_b: np.ndarray,
    strata_b: np.ndarray,
    *,
    rule: IntervalRule,
) -> DesignVariance:
    """Variance of each group's a − b when the sides lie on unrelated clusters (Welch df);
    withheld when either side is smaller than the statistic's `rule`."""
    va = stratified_variance(rate_z(successes_a, trials_a), trials_a > 0, strata_a, rule=rule)
    vb = stratified_variance(rate_z(successes_b, trials_b), trials_b > 0, strata_b, rule=rule)
    return DesignVariance(
        variance=va.variance + vb.variance,
        df=welch_df(va.variance, va.df, vb.variance, vb.df),
        reason=[ra or rb for ra, rb in zip(va.reason, vb.reason)],
        sides=(va.variance, vb.variance, np.zeros_like(va.variance)),
    )


def mover_interval(
    p_a: np.ndarray,
    p_b: np.ndarray,
    k_a: np.ndarray,
    k_b: np.ndarray,
    design: DesignVariance,
    confidence_level: float | np.ndarray,
    rows: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """MOVER interval of p_a − p_b from each rate's Wilson-t interval (`stats.cluster_t`) and
    their correlation; a side whose variance is 0 (every row passing, say) takes the Wilson
    interval with each of its `k` base scenarios counted once, as its rate does.

    A positive covariance is first reduced by half a step of its lattice, 1 / (2 k² m) on the
    rates' scale with k base scenarios of m rows (`rows`: the fewer valid rows of the two
    sides), as Newcombe's (1998, method 10) continuity-corrected correlation of paired
    proportions does. Where the two targets find the same scenarios hard and the scenarios
    cluster strongly (an ICC of 0.9), the difference rests on the few scenarios where they
    part, the estimated correlation is near 1 and the uncorrected MOVER interval collapses:
    it covered 0.89-0.91 on one metric at 20-30 base scenarios in the stress grid."""
    assert design.sides is not None, "the designs of differences carry their sides"
    var_a, var_b, covariance = design.sides
    k = np.maximum(np.minimum(k_a, k_b), 1)
    step = 1 / (2 * k**2 * np.maximum(rows / k, 1))
    covariance = np.where(covariance > 0, np.maximum(covariance - step, 0.0), covariance)
    sides = []
    for p, var, k in ((p_a, var_a, k_a), (p_b, var_b, k_b)):
        low, high = wilson_t_interval(p, var, design.df, confidence_level)
        c_low, c_high = wilson_interval(p * k, k, confidence_level)
        sides.append((np.where(np.isfinite(low), low, c_low),
                      np.where(np.isfinite(high), high, c_high)))
    (l_a, u_a), (l_b, u_b) = sides
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(var_a * var_b > 0, covariance / np.sqrt(var_a * var_b), 0.0)
    rho = np.clip(np.nan_to_num(rho), -1.0, 1.0)
    return _mover(p_a, l_a, u_a, p_b, l_b, u_b, rho)


def _mover(p_a, l_a, u_a, p_b, l_b, u_b, rho) -> tuple[np.ndarray, np.ndarray]:
    """Zou & Donner's MOVER limits of p_a − p_b from each rate's interval and their
    correlation."""
    d = p_a - p_b
    below = (p_a - l_a) ** 2 + (u_b - p_b) ** 2 - 2 * rho * (p_a - l_a) * (u_b - p_b)
    above = (u_a - p_a) ** 2 + (p_b - l_b) ** 2 - 2 * rho * (u_a - p_a) * (p_b - l_b)
    low = np.maximum(d - np.sqrt(np.maximum(below, 0.0)), -1.0)
    high = np.minimum(d + np.sqrt(np.maximum(above, 0.0)), 1.0)
    return low, high


class SideTotals(NamedTuple):
    """Per group of one side's (clusters, groups) tables: passes, valid rows, and base
    scenarios with a valid row."""

    passes: np.ndarray
    rows: np.ndarray
    clusters: np.ndarray


def side_totals(successes: np.ndarray, trials: np.ndarray) -> SideTotals:
    """One side's `SideTotals` from its (clusters, groups) tables."""
    return SideTotals(successes.sum(axis=0), trials.sum(axis=0), (trials > 0).sum(axis=0))


class DifferenceBounds(NamedTuple):
    """Per group: the difference, its interval (NaN where none) and how it is made."""

    difference: np.ndarray
    low: np.ndarray
    high: np.ndarray
    method: list[str]


def difference_bounds(
    side_a: SideTotals,
    side_b: SideTotals,
    design: DesignVariance,
    *,
    method: str,
    confidence_level: float | np.ndarray,
) -> DifferenceBounds:
    """Each group's a − b, from both sides' totals, and its interval at `confidence_level`
    (one level, or one per group: how a p-value inverts the interval, `inverted_tests`). The MOVER correlation takes
    its continuity correction (`mover_interval`) for every pairing, the nested subsets of the
    fidelity sensitivity difference included: without it that difference covered 0.89-0.91 on
    one metric at 20-30 base scenarios per metric where one metric's breaking clusters far
    more than the others' (the stress grid).

    The interval is d ± t · √variance, clipped to [−1, 1], or with a MOVER
    `method` (`MOVER_METHODS`) the MOVER interval of the two rates. Where the design
    gives a reason (too few base scenarios, a metric with a single one) or a side has no
    valid rows there is none. Where the variance is 0 (both sides all pass, say) it is
    Newcombe's interval from the two rates' Wilson intervals with each side's
    base scenarios counted once: it ignores the pairing and so errs on the
    wide side. A group lying in one metric is made from that metric's base
    scenarios alone, its design effects and correlation its own.
    """
    (x_a, n_a, k_a), (x_b, n_b, k_b) = side_a, side_b
    level = np.broadcast_to(np.asarray(confidence_level, dtype=float), x_a.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_a, p_b = x_a / n_a, x_b / n_b
    d = p_a - p_b
    half = t_quantile(design.df, level) * np.sqrt(design.variance)
    if method in MOVER_METHODS:
        low, high = mover_interval(p_a, p_b, k_a, k_b, design, level, np.minimum(n_a, n_b))
    else:
        low, high = np.maximum(d - half, -1.0), np.minimum(d + half, 1.0)
    low_a, high_a = wilson_interval(p_a * k_a, k_a, level)
    low_b, high_b = wilson_interval(p_b * k_b, k_b, level)
    n_low, n_high = newcombe_interval(p_a, low_a, high_a, p_b, low_b, high_b)
    flat = ~(design.variance > 0)
    drawn = (n_a > 0) & (n_b > 0) & np.array([r is None for r in design.reason], dtype=bool)
    how = [methods.NONE if not drawn[g] else methods.NEWCOMBE_CLUSTERS if flat[g] else method
           for g in range(len(d))]
    return DifferenceBounds(
        difference=d,
        low=np.where(drawn, np.where(flat, n_low, low), np.nan),
        high=np.where(drawn, np.where(flat, n_high, high), np.nan),
        method=how,
    )


def estimate_differences(
    labels: Sequence[tuple[str, str]],
    successes_a: np.ndarray,
    trials_a: np.ndarray,
    successes_b: np.ndarray,
    trials_b: np.ndarray,
    design: DesignVariance,
    *,
    method: str,
    confidence_level: float,
) -> list[Difference]:
    """One Difference (a − b) per group, from (clusters, groups) pass tables of both sides and
    the `design` variance of their difference (`paired_design` or `independent_design`): its
    interval (`difference_bounds`), the p-value of "no difference" that inverts that interval
    (`inverted_tests.inverted_p_values`), and the smallest difference the design detects
    with 80% power (`power.minimum_detectable_effect`)."""
    side_a, side_b = side_totals(successes_a, trials_a), side_totals(successes_b, trials_b)
    shown = difference_bounds(side_a, side_b, design, method=method,
                              confidence_level=confidence_level)
    p_values = inverted_p_values(
        lambda levels: difference_bounds(side_a, side_b, design, method=method,
                                         confidence_level=levels)[1:3],
        len(labels), confidence_level,
    )
    mde = minimum_detectable_effect(np.sqrt(design.variance), design.df, confidence_level)
    (x_a, n_a, k_a), (x_b, n_b, k_b) = side_a, side_b
    out = []
    for g, (a, b) in enumerate(labels):
        common = {
            "a": a,
            "b": b,
            "n_a": int(n_a[g]),
            "n_b": int(n_b[g]),
            "n_clusters_a": int(k_a[g]),
            "n_clusters_b": int(k_b[g]),
        }
        if n_a[g] == 0 or n_b[g] == 0:
            missing = " and ".join(s for s, n in ((a, n_a[g]), (b, n_b[g])) if n == 0)
            out.append(
                Difference(
                    **common,
                    rate_a=float(x_a[g] / n_a[g]) if n_a[g] else None,
                    rate_b=float(x_b[g] / n_b[g]) if n_b[g] else None,
                    difference=None,
                    ci_low=None,
                    ci_high=None,
                    ci_method=methods.NONE,
                    reason=f"no valid rows for {missing} among the compared scenarios",
                )
            )
            continue
        drawn = bool(np.isfinite(shown.low[g]))
        out.append(
            Difference(
                **common,
                rate_a=float(x_a[g] / n_a[g]),
                rate_b=float(x_b[g] / n_b[g]),
                difference=float(shown.difference[g]),
                ci_low=float(shown.low[g]) if drawn else None,
                ci_high=float(shown.high[g]) if drawn else None,
                ci_method=shown.method[g],
                p_value=float(p_values[g]) if drawn else None,
                mde=float(mde[g]) if drawn and np.isfinite(mde[g]) else None,
                reason=design.reason[g],
            )
        )
    return out
