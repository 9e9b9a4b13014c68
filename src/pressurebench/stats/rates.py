"""Pass rates with cluster-t intervals, and every breakdown of them a target gets.

A rate is total passes over total valid rows (a ratio estimator), so a base
scenario with more valid rows weighs more, in the replicates exactly as in the
point estimate. Rows without a verdict are counted in `n_error` of every group
they belong to.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..schemas import Row
from . import methods
from .bootstrap import ClusterBootstrap, check_confidence_level
from .cluster_t import design_effect_df, rate_z, stratified_variance, wilson_t_effective
from .estimates import RateEstimate
from .frame import (
    DEMOGRAPHIC_PREFIX,
    check_scores,
    cluster_ids,
    demographic_axes,
    passes,
    valid_mask,
)
from .grouping import by_grouping, factorize, group_sums, pass_tables
from .interval_rules import RATE
from .intervals import wilson_interval


class TargetRates(Row):
    """Every pass-rate breakdown of one target.

    `by_base_scenario` and `by_variant` cover one base scenario each, which
    cannot be resampled: their intervals are Wilson intervals on rows
    (`wilson-rows-single-cluster`) and describe verdict variation within the
    scenario only.
    """

    overall: RateEstimate
    positive: RateEstimate
    negative: RateEstimate
    by_metric: dict[str, RateEstimate]
    by_base_scenario: dict[str, RateEstimate]
    by_variant: dict[str, RateEstimate]
    by_demographic: dict[str, dict[str, RateEstimate]]


def no_data(n_error: float = 0) -> RateEstimate:
    """The estimate of a group without valid rows: None everywhere, its errors still counted."""
    return RateEstimate(
        rate=None,
        n=0,
        n_error=int(n_error),
        ci_low=None,
        ci_high=None,
        ci_method=methods.NONE,
        n_clusters=0,
    )


def estimate_rates(
    bootstrap: ClusterBootstrap,
    successes: np.ndarray,
    trials: np.ndarray,
    errors: np.ndarray,
    confidence_level: float,
) -> list[RateEstimate]:
    """One RateEstimate per column of (clusters, groups) tables of passes and valid rows.

    The interval is Wilson's score interval on the design-effective sample size with the t
    quantile (`stats.cluster_t`), over the base scenarios within metrics that `bootstrap`
    knows, each group on its own base scenarios: one metric's rate on that metric's, with its
    own design effect, its t quantile on the degrees of freedom of that design effect
    (`cluster_t.design_effect_df`: at least its base scenarios minus one). Metrics whose
    scenarios cluster differently (one at ICC 0.8 among metrics at 0.05) thus get intervals
    of their own width; a design effect pooled over the metrics covered the clustered one
    0.83-0.86 at 5-30 base scenarios per metric of 4 metrics (0.69-0.72 of 20) and the others
    0.99-1.00 (the stress grid, docs/stress_coverage.md). Where one or two rows' worth goes the
    other way, the bound on that side is Brown, Cai & DasGupta's Poisson one where it is
    wider (`cluster_t.wilson_t_effective`): a metric at 0.005 whose one passing scenario sets
    the rate has a Wilson lower bound above 0.005.

    Where the design has too few base scenarios for an interval, or a metric has a single
    one, it is withheld with the reason. Where the rate is so close to 0 or 1 that less than
    one base scenario's worth of rows goes the other way (every row passing included), the
    variance estimate says nothing (a rare failing scenario is usually not drawn at all) and
    the interval is a Wilson interval on the number of base scenarios, with the same Poisson
    bound: counting each scenario once is the upper bound of the design effect.
    """
    check_confidence_level(confidence_level)
    x = successes.sum(axis=0)
    n = trials.sum(axis=0)
    n_clusters = (trials > 0).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = x / n
    design = stratified_variance(
        rate_z(successes, trials), trials > 0, bootstrap.strata_codes, rule=RATE
    )
    inside = (rate > 0) & (rate < 1) & (design.variance > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        effective = np.where(inside, rate * (1 - rate) / np.where(inside, design.variance, 1.0),
                             np.nan)
    df = design_effect_df(successes, trials, bootstrap.strata_codes, design.df)
    low, high = wilson_t_effective(rate, effective, df, confidence_level)
    # Each base scenario counted once, with the Poisson bound where one or two scenarios go
    # the other way (four of five passing: Wilson's upper bound is 0.964, below a true 0.97).
    clusters_low, clusters_high = wilson_t_effective(
        rate, n_clusters.astype(float), np.full(rate.shape, np.inf), confidence_level)

    out = []
    for g in range(successes.shape[1]):
        if n[g] == 0:
            out.append(no_data(errors[g]))
            continue
        reason = design.reason[g]
        if reason is not None:
            lo, hi, method = None, None, methods.NONE
        elif not np.isfinite(low[g]) or n_clusters[g] * min(rate[g], 1 - rate[g]) < 1 - 1e-9:
            lo, hi, method = clusters_low[g], clusters_high[g], methods.WILSON_CLUSTERS
        else:
            lo, hi, method = low[g], high[g], methods.CLUSTER_T_WILSON
        out.append(
            RateEstimate(
                rate=float(rate[g]),
                n=int(n[g]),
                n_error=int(errors[g]),
                ci_low=None if lo is None else float(lo),
                ci_high=None if hi is None else float(hi),
                ci_method=method,
                n_clusters=int(n_clusters[g]),
                reason=reason,
            )
        )
    return out


def grouped_rates(
    scores: pd.DataFrame,
    bootstrap: ClusterBootstrap,
    groupings: Sequence[Sequence[str]],
    *,
    confidence_level: float = 0.95,
) -> list[dict[tuple, RateEstimate]]:
    """Rates for several groupings of the rows, all from one pass over the rows.

    Each grouping is a list of columns; its groups are the distinct value
    tuples (rows missing a value belong to none of them). An empty grouping is
    all rows.
    """
    tables = pass_tables(
        scores, bootstrap.codes(cluster_ids(scores)), bootstrap.n_clusters, groupings
    )
    estimates = estimate_rates(
        bootstrap, tables.successes, tables.trials, tables.errors, confidence_level
    )
    return by_grouping(tables.keys, estimates)


def rate_estimate(
    scores: pd.DataFrame, bootstrap: ClusterBootstrap, *, confidence_level: float = 0.95
) -> RateEstimate:
    """The pass rate of all rows of `scores`, with its cluster-t interval."""
    (estimates,) = grouped_rates(scores, bootstrap, [[]], confidence_level=confidence_level)
    return estimates[()]


def rates_by(
    scores: pd.DataFrame,
    bootstrap: ClusterBootstrap,
    column: str,
    *,
    confidence_level: float = 0.95,
) -> dict[str, RateEstimate]:
    """The pass rate of each value of `column`, over the same base scenarios."""
    (estimates,) = grouped_rates(scores, bootstrap, [[column]], confidence_level=confidence_level)
    return {str(key[0]): est for key, est in estimates.items()}


def within_scenario_rates(
    scores: pd.DataFrame, columns: Sequence[str], *, confidence_level: float = 0.95
) -> dict[tuple, RateEstimate]:
    """Rates of groups that each lie inside one base scenario, with Wilson intervals on rows.

    `columns` must identify at most one base scenario per group (e.g. target
    and base_id, or target and scenario_id).
    """
    check_confidence_level(confidence_level)
    group, keys = factorize(scores, columns)
    valid = valid_mask(scores).astype(float)
    x = group_sums(group, len(keys), passes(scores))
    n = group_sums(group, len(keys), valid)
    errors = group_sums(group, len(keys), 1.0 - valid)
    low, high = wilson_interval(x, n, confidence_level)
    out = {}
    for g, key in enumerate(keys):
        if n[g] == 0:
            out[key] = no_data(errors[g])
            continue
        out[key] = RateEstimate(
            rate=float(x[g] / n[g]),
            n=int(n[g]),
            n_error=int(errors[g]),
            ci_low=float(low[g]),
            ci_high=float(high[g]),
            ci_method=methods.WILSON_ROWS_SINGLE_CLUSTER,
            n_clusters=1,
        )
    return out


def target_rates(
    scores: pd.DataFrame, bootstrap: ClusterBootstrap, *, confidence_level: float = 0.95
) -> dict[str, TargetRates]:
    """Every breakdown of every target: overall, positive and negative metrics, per metric,
    per base scenario, per variant and per value of each demographic axis."""
    check_scores(scores)
    axes = demographic_axes(scores)
    overall, by_type, by_metric, *by_axis = grouped_rates(
        scores,
        bootstrap,
        [["target"], ["target", "metric_type"], ["target", "metric_id"]]
        + [["target", DEMOGRAPHIC_PREFIX + axis] for axis in axes],
        confidence_level=confidence_level,
    )
    by_base = within_scenario_rates(
        scores, ["target", "base_id"], confidence_level=confidence_level
    )
    by_variant = within_scenario_rates(
        scores, ["target", "scenario_id"], confidence_level=confidence_level
    )

    def of(target: str, estimates: dict[tuple, RateEstimate]) -> dict[str, RateEstimate]:
        return {str(key[1]): est for key, est in estimates.items() if key[0] == target}

    out = {}
    for (target,), estimate in overall.items():
        types = of(target, by_type)
        out[str(target)] = TargetRates(
            overall=estimate,
            positive=types.get("positive", no_data()),
            negative=types.get("negative", no_data()),
            by_metric=of(target, by_metric),
            by_base_scenario=of(target, by_base),
            by_variant=of(target, by_variant),
            by_demographic={axis: of(target, est) for axis, est in zip(axes, by_axis)},
        )
    return out
