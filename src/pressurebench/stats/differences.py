"""Differences of pass rates with bootstrap intervals, paired or independent.

A paired difference takes both rates from the same resampled base scenarios
in every replicate, so whatever makes a scenario hard for both sides cancels
and the interval is as narrow as the design allows. Independent differences
(two arms whose scenarios do not correspond) take each rate from its own
bootstrap.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import methods
from .bootstrap import percentile_interval
from .estimates import Difference
from .intervals import newcombe_interval, wilson_interval


def estimate_differences(
    labels: Sequence[tuple[str, str]],
    successes_a: np.ndarray,
    trials_a: np.ndarray,
    successes_b: np.ndarray,
    trials_b: np.ndarray,
    replicates_a: np.ndarray,
    replicates_b: np.ndarray,
    *,
    method: str,
    confidence_level: float,
) -> list[Difference]:
    """One Difference (a − b) per group, from (clusters, groups) pass tables of both sides and
    their (replicates, groups) replicate rates.

    The interval is the percentile interval of the replicate differences,
    replicates in which either side drew no rows being left out. When the
    replicate differences do not vary (both sides all pass, say) it is
    Newcombe's interval from the two rates' Wilson intervals, each side's base
    scenarios counted once (or its rows, when both sides lie in one base
    scenario): it ignores the pairing and so errs on the wide side.
    """
    x_a, n_a, k_a = successes_a.sum(axis=0), trials_a.sum(axis=0), (trials_a > 0).sum(axis=0)
    x_b, n_b, k_b = successes_b.sum(axis=0), trials_b.sum(axis=0), (trials_b > 0).sum(axis=0)
    low, high, degenerate = percentile_interval(replicates_a - replicates_b, confidence_level)
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
        if not degenerate[g]:
            lo, hi, how = low[g], high[g], method
        else:
            single = k_a[g] == 1 and k_b[g] == 1
            size_a, size_b = (n_a[g], n_b[g]) if single else (k_a[g], k_b[g])
            low_a, high_a = wilson_interval(p_a * size_a, size_a, confidence_level)
            low_b, high_b = wilson_interval(p_b * size_b, size_b, confidence_level)
            lo, hi = newcombe_interval(p_a, low_a, high_a, p_b, low_b, high_b)
            how = methods.NEWCOMBE_ROWS_SINGLE_CLUSTER if single else methods.NEWCOMBE_CLUSTERS
        out.append(
            Difference(
                **common,
                rate_a=float(p_a),
                rate_b=float(p_b),
                difference=float(p_a - p_b),
                ci_low=float(lo),
                ci_high=float(hi),
                ci_method=how,
            )
        )
    return out
