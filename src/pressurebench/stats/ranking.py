"""Comparing targets: pairwise differences in pass rate and a ranking with its uncertainty.

Targets are compared on the scenarios they share: a pair on the variants both
have valid rows for, the ranking on the variants every target has valid rows
for. Otherwise a target whose errors fell on hard scenarios would look better
than one that answered them. Every difference and every ranked replicate
takes all targets' rates from the same resampled base scenarios.

Each pair is compared over all metrics and on each metric (on that metric's base scenarios
alone). Every difference carries the p-value that inverts its interval and Holm's adjustment
within its family (`stats.multiplicity`): the pairs over all metrics are one family, and each
pair's per-metric differences another.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from pydantic import Field
from scipy.stats import rankdata

from ..schemas import Row
from . import methods
from .bootstrap import ClusterBootstrap, percentile_interval
from .differences import estimate_differences, paired_design
from .estimates import Difference
from .frame import cluster_ids, passes, valid_mask
from .interval_rules import DIFFERENCE
from .multiplicity import Corrected, holm_by_family

# Replicate rates are rounded before ranking so that equal rates reached by
# different sums of weights tie instead of being ordered by rounding error.
RANK_DECIMALS = 12


class TargetRank(Row):
    target: str
    rate: float | None = Field(description="pass rate on the scenarios every target shares")
    n: int = Field(ge=0)
    rank: float | None = Field(
        description="rank of the point estimate, 1 = highest pass rate, ties averaged"
    )
    rank_probabilities: list[float] = Field(
        description="share of bootstrap replicates in which the target has rank 1, 2, ...; "
        "targets tied in a replicate share the tied ranks equally"
    )


class Ranking(Row):
    n_scenarios: int = Field(ge=0, description="variants with valid rows for every target")
    n_clusters: int = Field(ge=0)
    ranks: list[TargetRank]
    reason: str | None = None


class PairDifference(Difference, Corrected):
    """Target a's pass rate minus target b's over all metrics; Holm's family is every pair."""


class MetricPairDifference(Difference, Corrected):
    """Target a's pass rate minus target b's on one metric; Holm's family is the pair's
    metrics."""

    metric_id: str


class TargetComparison(Row):
    pairwise: list[PairDifference] = Field(
        description="every pair of targets, a before b in sorted order"
    )
    by_metric: list[MetricPairDifference] = Field(
        default_factory=list, description="every pair of targets on every metric"
    )
    ranking: Ranking


def rank_probabilities(replicates: np.ndarray) -> np.ndarray:
    """(replicates, targets) rates → (targets, ranks) probabilities, rank 1 = highest rate.

    Targets tied in a replicate share the ranks they span equally, so every
    row and every column sums to 1. Replicates with a missing rate are left out.
    """
    reps = np.round(np.asarray(replicates, dtype=float), RANK_DECIMALS)
    reps = reps[np.isfinite(reps).all(axis=1)]
    n = reps.shape[1]
    if len(reps) == 0:
        return np.full((n, n), np.nan)
    low = rankdata(-reps, method="min", axis=1)
    high = rankdata(-reps, method="max", axis=1)
    ranks = np.arange(1, n + 1)
    spans = (ranks >= low[..., None]) & (ranks <= high[..., None])
    return (spans / (high - low + 1)[..., None]).mean(axis=0)


def _per_scenario(scores: pd.DataFrame, bootstrap: ClusterBootstrap):
    """Passes and valid rows per (target, variant), and each variant's cluster."""
    targets = sorted(str(t) for t in pd.unique(scores["target"]))
    t_code = pd.Index(targets).get_indexer(pd.Index(scores["target"].astype(str)))
    s_code, scenarios = pd.factorize(scores["scenario_id"])
    n_t, n_s = len(targets), len(scenarios)
    flat = t_code * n_s + s_code
    trials = np.bincount(flat, weights=valid_mask(scores), minlength=n_t * n_s).reshape(n_t, n_s)
    successes = np.bincount(flat, weights=passes(scores), minlength=n_t * n_s).reshape(n_t, n_s)
    cluster = np.zeros(n_s, dtype=np.int64)
    cluster[s_code] = bootstrap.codes(cluster_ids(scores))
    return targets, successes, trials, cluster


def _by_cluster(cluster: np.ndarray, n_clusters: int, per_scenario: np.ndarray) -> np.ndarray:
    """(columns, variants) → (clusters, columns) sums."""
    return (
        np.column_stack(
            [np.bincount(cluster, weights=row, minlength=n_clusters) for row in per_scenario]
        )
        if len(per_scenario)
        else np.zeros((n_clusters, 0))
    )


def _pair_tables(scores: pd.DataFrame, bootstrap: ClusterBootstrap, targets: list[str]):
    """Every pair of `targets` on the variants both have valid rows for in `scores`: the pair
    labels and (clusters, pairs) passes and valid rows of each side."""
    found, successes, trials, cluster = _per_scenario(scores, bootstrap)
    index = {t: i for i, t in enumerate(found)}
    k = bootstrap.n_clusters
    zero = np.zeros(successes.shape[1])
    labels: list[tuple[str, str]] = []
    tables: tuple[list, list, list, list] = ([], [], [], [])
    for t_a, t_b in itertools.combinations(targets, 2):
        sides = [(successes[index[t]], trials[index[t]]) if t in index else (zero, zero)
                 for t in (t_a, t_b)]
        shared = (sides[0][1] > 0) & (sides[1][1] > 0)
        labels.append((t_a, t_b))
        for table, row in zip(tables, (sides[0][0], sides[0][1], sides[1][0], sides[1][1])):
            table.append(row * shared)
    return labels, [_by_cluster(cluster, k, np.array(t)) for t in tables]


def compare_targets(
    scores: pd.DataFrame, bootstrap: ClusterBootstrap, *, confidence_level: float = 0.95
) -> TargetComparison:
    """Pairwise differences between targets, over all metrics and per metric, and their
    ranking, all paired over base scenarios."""
    targets, successes, trials, cluster = _per_scenario(scores, bootstrap)
    pairwise: list[PairDifference] = []
    by_metric: list[MetricPairDifference] = []
    if len(targets) > 1:

        def differences(frame: pd.DataFrame) -> list[Difference]:
            labels, (s_a, t_a, s_b, t_b) = _pair_tables(frame, bootstrap, targets)
            return estimate_differences(
                labels, s_a, t_a, s_b, t_b,
                paired_design(s_a, t_a, s_b, t_b, bootstrap.strata_codes, rule=DIFFERENCE),
                method=methods.CLUSTER_T_MOVER, confidence_level=confidence_level,
            )

        overall = differences(scores)
        tests, _ = holm_by_family([d.p_value for d in overall], [0] * len(overall),
                                  confidence_level)
        pairwise = [PairDifference(**d.model_dump(), **t) for d, t in zip(overall, tests)]
        metric_ids = scores["metric_id"].astype(str)
        found = [(metric, d) for metric in sorted(metric_ids.unique())
                 for d in differences(scores[metric_ids.to_numpy() == metric])]
        tests, _ = holm_by_family([d.p_value for _, d in found], [(d.a, d.b) for _, d in found],
                                  confidence_level)
        by_metric = [MetricPairDifference(metric_id=metric, **d.model_dump(), **t)
                     for (metric, d), t in zip(found, tests)]
    return TargetComparison(
        pairwise=pairwise, by_metric=sorted(by_metric, key=lambda d: (d.a, d.b, d.metric_id)),
        ranking=_ranking(targets, successes, trials, cluster, bootstrap),
    )


def _ranking(targets, successes, trials, cluster, bootstrap: ClusterBootstrap) -> Ranking:
    shared = (trials > 0).all(axis=0)
    if not shared.any():
        return Ranking(
            n_scenarios=0,
            n_clusters=0,
            ranks=[
                TargetRank(target=t, rate=None, n=0, rank=None, rank_probabilities=[])
                for t in targets
            ],
            reason="no variant has valid rows for every target",
        )
    s = _by_cluster(cluster, bootstrap.n_clusters, successes * shared)
    t = _by_cluster(cluster, bootstrap.n_clusters, trials * shared)
    rates = s.sum(axis=0) / t.sum(axis=0)
    point = rankdata(-np.round(rates, RANK_DECIMALS), method="average")
    replicates = bootstrap.replicate_ratios(s, t)
    reason = None
    if percentile_interval(replicates, 0.95)[2].all():
        # Replicates that never vary would put every target at its point rank with
        # probability 1: a certainty the data cannot give. Say so instead.
        probabilities = np.empty((len(targets), 0))
        reason = "the bootstrap replicates do not vary (a single base scenario): rank uncertainty cannot be estimated"
    else:
        probabilities = rank_probabilities(replicates)
    return Ranking(
        n_scenarios=int(shared.sum()),
        n_clusters=int((t[:, 0] > 0).sum()),
        ranks=[
            TargetRank(
                target=target,
                rate=float(rates[i]),
                n=int(t[:, i].sum()),
                rank=float(point[i]),
                rank_probabilities=[float(p) for p in probabilities[i]],
            )
            for i, target in enumerate(targets)
        ],
        reason=reason,
    )
