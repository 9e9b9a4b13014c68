"""Differences of pass rates with cluster-t intervals, paired or independent.

A paired difference takes both rates from the same base scenarios, and its
variance from the per-scenario difference of their linearized contributions
(`stats.cluster_t`), so whatever makes a scenario hard for both sides cancels
and the interval is as narrow as the design allows. Independent differences
(two arms whose scenarios do not correspond) add the two rates' variances and
use Welch–Satterthwaite degrees of freedom.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import methods
from .cluster_t import DesignVariance, rate_z, stratified_variance, t_quantile, welch_df
from .estimates import Difference
from .intervals import newcombe_interval, wilson_interval


def paired_design(
    successes_a: np.ndarray,
    trials_a: np.ndarray,
    successes_b: np.ndarray,
    trials_b: np.ndarray,
    strata: np.ndarray,
) -> DesignVariance:
    """Variance of each group's a − b when both sides lie on the same clusters."""
    z = rate_z(successes_a, trials_a) - rate_z(successes_b, trials_b)
    return stratified_variance(z, (trials_a > 0) | (trials_b > 0), strata)


def independent_design(
    successes_a: np.ndarray,
    trials_a: np.ndarray,
    strata_a: np.ndarray,
    successes_b: np.ndarray,
    trials_b: np.ndarray,
    strata_b: np.ndarray,
) -> DesignVariance:
    """Variance of each group's a − b when the sides lie on unrelated clusters (Welch df)."""
    va = stratified_variance(rate_z(successes_a, trials_a), trials_a > 0, strata_a)
    vb = stratified_variance(rate_z(successes_b, trials_b), trials_b > 0, strata_b)
    return DesignVariance(
        variance=va.variance + vb.variance,
        df=welch_df(va.variance, va.df, vb.variance, vb.df),
        reason=[ra or rb for ra, rb in zip(va.reason, vb.reason)],
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
    the `design` variance of their difference (`paired_design` or `independent_design`).

    The interval is d ± t · √variance, clipped to [−1, 1]. Where the design
    gives a reason (too few base scenarios, a metric with a single one) there
    is no interval. Where the variance is 0 (both sides all pass, say) it is
    Newcombe's interval from the two rates' Wilson intervals with each side's
    base scenarios counted once: it ignores the pairing and so errs on the
    wide side.
    """
    x_a, n_a, k_a = successes_a.sum(axis=0), trials_a.sum(axis=0), (trials_a > 0).sum(axis=0)
    x_b, n_b, k_b = successes_b.sum(axis=0), trials_b.sum(axis=0), (trials_b > 0).sum(axis=0)
    half = t_quantile(design.df, confidence_level) * np.sqrt(design.variance)
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
        elif design.variance[g] > 0:
            lo, hi, how = max(d - half[g], -1.0), min(d + half[g], 1.0), method
        else:
            low_a, high_a = wilson_interval(p_a * k_a[g], k_a[g], confidence_level)
            low_b, high_b = wilson_interval(p_b * k_b[g], k_b[g], confidence_level)
            lo, hi = newcombe_interval(p_a, low_a, high_a, p_b, low_b, high_b)
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
