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

import numpy as np

from . import methods
from .cluster_t import (
    DesignVariance,
    pooled_correlation,
    pooled_design_effects,
    rate_z,
    strata_indicator,
    stratified_variance,
    t_quantile,
    welch_df,
    wilson_t_effective,
    wilson_t_interval,
)
from .estimates import Difference
from .interval_rules import IntervalRule
from .intervals import newcombe_interval, wilson_interval

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
    confidence_level: float,
) -> tuple[np.ndarray, np.ndarray]:
    """MOVER interval of p_a − p_b from each rate's Wilson-t interval (`stats.cluster_t`) and
    their correlation; a side whose variance is 0 (every row passing, say) takes the Wilson
    interval with each of its `k` base scenarios counted once, as its rate does."""
    assert design.sides is not None, "the designs of differences carry their sides"
    var_a, var_b, covariance = design.sides
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


def pooled_mover_interval(
    successes_a: np.ndarray,
    trials_a: np.ndarray,
    successes_b: np.ndarray,
    trials_b: np.ndarray,
    strata: np.ndarray,
    pool: np.ndarray,
    confidence_level: float,
) -> tuple[np.ndarray, np.ndarray]:
    """MOVER interval of each group's p_a − p_b lying in one metric, from both rates' Wilson-t
    intervals on the design effects and the correlation of the pool's group (`pool`: the
    column of a group over several metrics, −1 for none), t on the pool's degrees of freedom
    (`cluster_t.pooled_design_effects`); NaN where the group has no such pool.

    One metric's few base scenarios estimate neither side's design effect nor
    their correlation: at 3–8 of them the MOVER interval on its own estimates
    covers 0.89–0.93 at some designs and 1.00 at others (docs/interval_coverage.md).
    """
    pool = np.asarray(pool, dtype=np.int64)
    indicator = strata_indicator(strata)
    active = (trials_a > 0) | (trials_b > 0)
    metrics = (indicator @ active.astype(float) > 0).sum(axis=0)
    deff_a, df_a = pooled_design_effects(successes_a, trials_a, strata)
    deff_b, df_b = pooled_design_effects(successes_b, trials_b, strata)
    rho = pooled_correlation(successes_a, trials_a, successes_b, trials_b, strata)
    j = np.where(pool >= 0, pool, 0)
    usable = (pool >= 0) & (metrics == 1) & (metrics[j] >= 2)
    usable &= np.isfinite(deff_a[j]) & np.isfinite(deff_b[j]) & (deff_a[j] > 0) & (deff_b[j] > 0)
    n_a, n_b = trials_a.sum(axis=0), trials_b.sum(axis=0)
    usable &= (n_a > 0) & (n_b > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_a = np.where(usable, successes_a.sum(axis=0) / np.where(usable, n_a, 1.0), 0.5)
        p_b = np.where(usable, successes_b.sum(axis=0) / np.where(usable, n_b, 1.0), 0.5)
        e_a = np.where(usable, n_a / np.where(usable, deff_a[j], 1.0), np.nan)
        e_b = np.where(usable, n_b / np.where(usable, deff_b[j], 1.0), np.nan)
    df = np.minimum(df_a[j], df_b[j])
    l_a, u_a = wilson_t_effective(p_a, e_a, df, confidence_level, modified=False)
    l_b, u_b = wilson_t_effective(p_b, e_b, df, confidence_level, modified=False)
    return _mover(p_a, l_a, u_a, p_b, l_b, u_b, rho[j])


def _mover(p_a, l_a, u_a, p_b, l_b, u_b, rho) -> tuple[np.ndarray, np.ndarray]:
    """Zou & Donner's MOVER limits of p_a − p_b from each rate's interval and their
    correlation."""
    d = p_a - p_b
    below = (p_a - l_a) ** 2 + (u_b - p_b) ** 2 - 2 * rho * (p_a - l_a) * (u_b - p_b)
    above = (u_a - p_a) ** 2 + (p_b - l_b) ** 2 - 2 * rho * (u_a - p_a) * (p_b - l_b)
    low = np.maximum(d - np.sqrt(np.maximum(below, 0.0)), -1.0)
    high = np.minimum(d + np.sqrt(np.maximum(above, 0.0)), 1.0)
    return low, high


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
    pool: np.ndarray | None = None,
    strata: np.ndarray | None = None,
) -> list[Difference]:
    """One Difference (a − b) per group, from (clusters, groups) pass tables of both sides and
    the `design` variance of their difference (`paired_design` or `independent_design`).

    The interval is d ± t · √variance, clipped to [−1, 1], or with a MOVER
    `method` (`MOVER_METHODS`) the MOVER interval of the two rates. Where the design
    gives a reason (too few base scenarios, a metric with a single one) there
    is no interval. Where the variance is 0 (both sides all pass, say) it is
    Newcombe's interval from the two rates' Wilson intervals with each side's
    base scenarios counted once: it ignores the pairing and so errs on the
    wide side. With a paired MOVER `method`, a group lying in one metric whose
    `pool` names a group over several metrics (the same two sides on all of
    them; `strata` gives each cluster's metric) takes that group's design
    effects and correlation (`pooled_mover_interval`,
    `cluster-t-mover-wilson-pooled-design-effect`).
    """
    x_a, n_a, k_a = successes_a.sum(axis=0), trials_a.sum(axis=0), (trials_a > 0).sum(axis=0)
    x_b, n_b, k_b = successes_b.sum(axis=0), trials_b.sum(axis=0), (trials_b > 0).sum(axis=0)
    half = t_quantile(design.df, confidence_level) * np.sqrt(design.variance)
    mover_low = mover_high = np.full(len(labels), np.nan)
    if method in MOVER_METHODS:
        with np.errstate(divide="ignore", invalid="ignore"):
            p_a_all, p_b_all = x_a / n_a, x_b / n_b
        mover_low, mover_high = mover_interval(
            p_a_all, p_b_all, k_a, k_b, design, confidence_level
        )
    pooled_low = pooled_high = np.full(len(labels), np.nan)
    if pool is not None and method == methods.CLUSTER_T_MOVER:
        if strata is None:
            raise ValueError("a pooled interval needs each cluster's stratum (strata)")
        pooled_low, pooled_high = pooled_mover_interval(
            successes_a, trials_a, successes_b, trials_b, strata, pool, confidence_level
        )
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
        p_a, p_b = x_a[g] / n_a[g], x_b[g] / n_b[g]
        d = p_a - p_b
        reason = design.reason[g]
        if reason is not None:
            lo, hi, how = None, None, methods.NONE
        elif np.isfinite(pooled_low[g]):
            lo, hi, how = pooled_low[g], pooled_high[g], methods.CLUSTER_T_MOVER_POOLED
        elif design.variance[g] > 0 and method in MOVER_METHODS:
            lo, hi, how = mover_low[g], mover_high[g], method
        elif design.variance[g] > 0:
            lo, hi, how = max(d - half[g], -1.0), min(d + half[g], 1.0), method
        else:
            low_a, high_a = wilson_interval(p_a * k_a[g], k_a[g], confidence_level)
            low_b, high_b = wilson_interval(p_b * k_b[g], k_b[g], confidence_level)
            lo, hi = newcombe_interval(p_a, float(low_a), float(high_a),
                                       p_b, float(low_b), float(high_b))
            how = methods.NEWCOMBE_CLUSTERS
        out.append(
            Difference(
                **common,
                rate_a=float(p_a),
                rate_b=float(p_b),
                difference=float(d),
                ci_low=None if lo is None else float(lo),
                ci_high=None if hi is None else float(hi),
                ci_method=how,
                reason=reason,
            )
        )
    return out
