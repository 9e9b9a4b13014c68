"""Agreement of repeated verdicts: between samples of one scenario, and between judges of a panel.

Both get cluster-bootstrap intervals over the same resampled base scenarios as
the pass rates: items of one base scenario are no more independent for
agreement than for rates.

Between samples, an item is one (target, variant) with at least two valid
samples, rated by its samples' pass verdicts. Krippendorff's alpha uses every
item whatever its number of ratings. Fleiss' kappa requires the same number
of ratings per item, so it uses the items with the most common number (the
larger on a tie); its `n_items` says how many those are.

Between judges, an item is one conversation, rated by the judges' `present`
verdicts whatever the row's final status (a judge may have answered where the
panel as a whole did not). Two judges get Cohen's kappa over the rows both
answered, more get Fleiss' kappa over the rows all answered; Krippendorff's
alpha uses every row with at least two verdicts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from ..schemas import Row
from . import methods
from .bootstrap import ClusterBootstrap, check_confidence_level, percentile_interval
from .coefficients import (
    cohen_from_sums,
    cohen_item_stats,
    fleiss_from_sums,
    fleiss_item_stats,
    krippendorff_from_sums,
    krippendorff_item_stats,
)
from .estimates import AgreementEstimate, IntervalFields, interval_fields
from .frame import JUDGE_PREFIX, cluster_ids, judge_ids, passes, valid_mask
from .grouping import cluster_table, factorize, group_sums
from .rates import estimate_rates

NO_ITEMS = "no item has two or more ratings"
ONE_CATEGORY = (
    "every rating falls in one category: chance agreement is 1 and the coefficient is undefined"
)
ONE_CLUSTER = "one base scenario: nothing to resample, so no interval"
NO_VARIATION = "the coefficient is the same in every bootstrap replicate, so no interval"


class SampleAgreement(Row):
    """How consistently a target gives the same verdict when a scenario is played again."""

    num_samples: int = Field(ge=0, description="distinct sample indices in the rows")
    n_items: int = Field(ge=0, description="(target, variant) items with two or more valid samples")
    all_agree: AgreementEstimate = Field(description="share of items whose samples all agree")
    fleiss_kappa: AgreementEstimate
    krippendorff_alpha: AgreementEstimate
    reason: str | None = Field(default=None, description="why there is nothing to measure")


class JudgeAgreement(Row):
    """How consistently the judges of an evaluator panel answer "is the behaviour present?"."""

    judges: list[str]
    kappa_method: Literal["cohen", "fleiss"] | None
    kappa: AgreementEstimate
    krippendorff_alpha: AgreementEstimate
    reason: str | None = Field(default=None, description="why there is nothing to measure")


def agreement_estimate(
    value: float | None, n_items: int, n_clusters: int, interval: IntervalFields
) -> AgreementEstimate:
    """`value` over `n_items` rated items of `n_clusters` base scenarios, with its `interval`
    (`interval_fields`): withheld with its reason, or bounds and how they were made."""
    return AgreementEstimate(value=value, n_items=n_items, n_clusters=n_clusters, **interval)


def without_interval(
    reason: str, n_items: int = 0, n_clusters: int = 0, *, value: float | None = None
) -> AgreementEstimate:
    """An estimate with no interval, for `reason`: with its `value` where that is defined."""
    return agreement_estimate(
        value, n_items, n_clusters, interval_fields(None, None, methods.NONE, reason)
    )


def bootstrap_agreement(
    bootstrap: ClusterBootstrap,
    item_cluster: np.ndarray,
    item_stats: np.ndarray,
    from_sums: Callable[[np.ndarray], np.ndarray],
    confidence_level: float,
) -> AgreementEstimate:
    """A coefficient and its percentile interval from per-item statistics summed per base scenario.

    Replicates in which the coefficient is undefined (a resample whose
    ratings all fall in one category) are left out of the percentiles.
    """
    check_confidence_level(confidence_level)
    n_items = len(item_cluster)
    if n_items == 0:
        return without_interval(NO_ITEMS)
    n_clusters = int(np.unique(item_cluster).size)
    per_cluster = np.column_stack(
        [
            np.bincount(item_cluster, weights=item_stats[:, j], minlength=bootstrap.n_clusters)
            for j in range(item_stats.shape[1])
        ]
    )
    value = float(from_sums(per_cluster.sum(axis=0)))
    if not np.isfinite(value):
        return without_interval(ONE_CATEGORY, n_items, n_clusters)
    low, high, degenerate = percentile_interval(
        from_sums(bootstrap.replicate_sums(per_cluster)), confidence_level
    )
    if n_clusters == 1 or degenerate[0]:
        reason = ONE_CLUSTER if n_clusters == 1 else NO_VARIATION
        return without_interval(reason, n_items, n_clusters, value=value)
    interval = interval_fields(float(low[0]), float(high[0]), methods.CLUSTER_BOOTSTRAP)
    return agreement_estimate(value, n_items, n_clusters, interval)


def share_estimate(
    bootstrap: ClusterBootstrap,
    item_cluster: np.ndarray,
    agree: np.ndarray,
    confidence_level: float,
) -> AgreementEstimate:
    """The share of agreeing items: a proportion, bootstrapped (and falling back) like a rate."""
    group = np.zeros(len(item_cluster), dtype=np.int64)
    k = bootstrap.n_clusters
    (rate,) = estimate_rates(
        bootstrap,
        cluster_table(item_cluster, group, k, 1, agree.astype(float)),
        cluster_table(item_cluster, group, k, 1, np.ones(len(item_cluster))),
        np.zeros(1),
        confidence_level,
    )
    interval = interval_fields(rate.ci_low, rate.ci_high, rate.ci_method, rate.reason)
    return agreement_estimate(rate.rate, rate.n, rate.n_clusters, interval)


def sample_agreement(
    scores: pd.DataFrame, bootstrap: ClusterBootstrap, *, confidence_level: float = 0.95
) -> SampleAgreement:
    """Agreement between the samples of each (target, variant) in `scores`."""
    num_samples = int(scores["sample"].nunique())
    rows = scores[valid_mask(scores)]
    item, keys = factorize(rows, ["target", "scenario_id"])
    ratings = np.bincount(item, minlength=len(keys))
    yes = group_sums(item, len(keys), passes(rows))
    item_cluster = np.zeros(len(keys), dtype=np.int64)
    item_cluster[item] = bootstrap.codes(cluster_ids(rows))
    rated = ratings >= 2
    if not rated.any():
        reason = "one sample per scenario" if num_samples == 1 else NO_ITEMS
        return SampleAgreement(
            num_samples=num_samples,
            n_items=0,
            all_agree=without_interval(reason),
            fleiss_kappa=without_interval(reason),
            krippendorff_alpha=without_interval(reason),
            reason=reason,
        )
    ratings, yes, item_cluster = ratings[rated], yes[rated], item_cluster[rated]
    counts = np.column_stack([ratings - yes, yes])
    sizes, freq = np.unique(ratings, return_counts=True)
    modal = ratings == sizes[freq == freq.max()].max()
    return SampleAgreement(
        num_samples=num_samples,
        n_items=int(rated.sum()),
        all_agree=share_estimate(bootstrap, item_cluster, (yes == 0) | (yes == ratings), confidence_level),
        fleiss_kappa=bootstrap_agreement(
            bootstrap,
            item_cluster[modal],
            fleiss_item_stats(counts[modal]),
            fleiss_from_sums,
            confidence_level,
        ),
        krippendorff_alpha=bootstrap_agreement(
            bootstrap,
            item_cluster,
            krippendorff_item_stats(counts),
            krippendorff_from_sums,
            confidence_level,
        ),
    )


def judge_verdicts(scores: pd.DataFrame, judges: list[str]) -> np.ndarray:
    """Rows × judges matrix of `present` verdicts: 1.0, 0.0, or NaN where a judge gave none."""
    return np.column_stack(
        [
            scores[JUDGE_PREFIX + j].astype("boolean").to_numpy(dtype=float, na_value=np.nan)
            for j in judges
        ]
    )


def judge_agreement(
    scores: pd.DataFrame, bootstrap: ClusterBootstrap, *, confidence_level: float = 0.95
) -> JudgeAgreement:
    """Agreement between the judges of an evaluator panel, from the `judge:<model_id>` columns."""
    judges = judge_ids(scores)
    if len(judges) < 2:
        reason = "no evaluator panel: agreement needs two or more judges"
        return JudgeAgreement(
            judges=judges,
            kappa_method=None,
            kappa=without_interval(reason),
            krippendorff_alpha=without_interval(reason),
            reason=reason,
        )
    verdicts = judge_verdicts(scores, judges)
    answered = ~np.isnan(verdicts)
    cluster = bootstrap.codes(cluster_ids(scores))
    yes = np.nansum(verdicts, axis=1)
    counts = np.column_stack([answered.sum(axis=1) - yes, yes])
    complete = answered.all(axis=1)
    if len(judges) == 2:
        method = "cohen"
        kappa = bootstrap_agreement(
            bootstrap,
            cluster[complete],
            cohen_item_stats(verdicts[complete].astype(int), 2),
            cohen_from_sums,
            confidence_level,
        )
    else:
        method = "fleiss"
        kappa = bootstrap_agreement(
            bootstrap,
            cluster[complete],
            fleiss_item_stats(counts[complete]),
            fleiss_from_sums,
            confidence_level,
        )
    pairable = answered.sum(axis=1) >= 2
    alpha = bootstrap_agreement(
        bootstrap,
        cluster[pairable],
        krippendorff_item_stats(counts[pairable]),
        krippendorff_from_sums,
        confidence_level,
    )
    return JudgeAgreement(judges=judges, kappa_method=method, kappa=kappa, krippendorff_alpha=alpha)
