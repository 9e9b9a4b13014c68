"""Prediction-powered rates: a judge's verdict on every row, corrected by human labels on a sample.

A judge that misses some present behaviour and sees some that is absent
biases every rate it produces, and more judged rows do not remove the bias.
Prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan and
Zrnić, Science 2023) removes it with the rows humans labelled: the rate is
the judge's rate over all judged rows plus the mean human-minus-judge
residual over the labelled ones,

    θ̂(λ) = λ · Σ f / N  +  Σ w (y − λ f) / Σ w,

where f is the judge's pass (0/1) of a row, y the human one, and w a
labelled row's design weight (its stratum's rows per row labelled in it,
`stratum_weight`: the export draws each target × metric cell on its own
and over-samples a panel's disagreements, and w weighs them back). Whatever
the judge's quality the estimate is unbiased for the human rate; with every
row labelled (all w = 1) it is the human rate itself, whatever λ. λ is
power-tuned as in PPI++ (Angelopoulos, Duchi and Zrnić 2023): chosen, in
[0, 1], to minimise the estimate's variance. An uninformative judge gets
λ ≈ 0, the labelled-only rate; a good one λ ≈ 1 and an interval narrower
than the labelled items alone give. There is no judge too weak to correct
for: the estimator never divides by the judge's accuracy.

Both sums are ratio estimators over the same clusters (base scenarios
within metrics) as every other rate here (`stats.cluster_t`), and the
labelled rows are some of the judged ones. The variance is the stratified
cluster variance of the linearized contributions

    z_c(λ) = λ (F_c − θ_f N_c) / N + (Σ_c w (y − λ f) − Δ W_c) / W,

one per base scenario c (F_c, N_c its judge passes and judged rows, W_c its
labelled weight, θ_f = Σ f / N, Δ = Σ w (y − λ f) / W), which counts every
source of variation at once: which base scenarios were written, which rows
were drawn for labels (the "ultimate cluster" estimator of a two-phase
design, Wolter 2007, ch. 6), and the covariance of the two parts, which
is what makes the variance reach the human rate's own when every row is
labelled. z is linear in λ, z = b + λ e, so the variance is the quadratic
V(b) + 2 λ C(b, e) + λ² V(e) and the tuned λ is −C(b, e) / V(e), clipped to
[0, 1]. In the i.i.d. case (each row its own cluster, labelled and
unlabelled rows apart) this is PPI++'s estimator; `tests/stats/test_ppi.py`
checks it against the authors' `ppi-python`.

The interval is θ̂ ± t · √V on the design's degrees of freedom (base
scenarios minus metrics), clipped to [0, 1], and withheld exactly where the
raw rate's is: too few base scenarios, or a metric with a single one. Where
the estimate is so close to 0 or 1 that less than one base scenario's worth
of rows goes the other way, the variance says nothing and the interval is
a Wilson interval on the number of base scenarios, as for raw rates. The
coverage of these intervals over label budgets, judge qualities and designs
is measured by `tests/stats_support/ppi_coverage.py` (docs/judge_coverage.md).

Nothing here knows what a judge judged: the same functions correct the
behaviour judge, a judge panel's majority, or any other judge whose verdicts
cover every row and humans label a sample of them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import methods
from .cluster_t import stratified_variance, t_quantile
from .grouping import cluster_table
from .intervals import wilson_interval

# Below this share of V(b), V(e) is rounding: the labelled rows are the judged rows, so the
# estimate does not depend on λ.
_NO_JUDGE_TERM = 1e-12


class PPITables(NamedTuple):
    """Per base scenario (rows) and group (columns): what the estimator reads.

    `judge_passes` and `judged` count the judge's passes and the valid judged
    rows; `human`, `judge_labelled` and `weight` sum w·y, w·f and w over the
    labelled rows with a human answer; `labelled` counts those rows.
    """

    judge_passes: np.ndarray
    judged: np.ndarray
    human: np.ndarray
    judge_labelled: np.ndarray
    weight: np.ndarray
    labelled: np.ndarray


class PPIRates(NamedTuple):
    """Per group: estimate, interval (NaN where none), method, λ, degrees of freedom, reason."""

    estimate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    ci_method: list[str]
    lam: np.ndarray
    df: np.ndarray
    reason: list[str | None]


def ppi_tables(
    cluster: np.ndarray,
    group: np.ndarray,
    n_clusters: int,
    n_groups: int,
    judge_pass: np.ndarray,
    valid: np.ndarray,
    human_pass: np.ndarray,
    weight: np.ndarray,
) -> PPITables:
    """Sum row-level data into PPITables.

    One entry per judged row: its cluster code, its group code (−1: in no
    group), the judge's pass (0/1), whether it is valid (has a verdict), the
    human pass (NaN where the row is not labelled or the humans gave no
    answer) and its design weight (ignored where `human_pass` is NaN).
    """
    valid = np.asarray(valid, dtype=float)
    f = np.asarray(judge_pass, dtype=float) * valid
    y = np.asarray(human_pass, dtype=float)
    on = (~np.isnan(y) & (valid > 0)).astype(float)
    w = np.where(on > 0, np.asarray(weight, dtype=float), 0.0)

    def table(values: np.ndarray) -> np.ndarray:
        return cluster_table(cluster, group, n_clusters, n_groups, values)

    return PPITables(
        judge_passes=table(f),
        judged=table(valid),
        human=table(w * np.nan_to_num(y)),
        judge_labelled=table(w * f),
        weight=table(w),
        labelled=table(on),
    )


def _parts(tables: PPITables) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """θ_f, Δ's two parts (Σ w y / W, Σ w f / W), and the linearized z = b + λ e as (b, e)."""
    n = tables.judged.sum(axis=0)
    w = tables.weight.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta_f = tables.judge_passes.sum(axis=0) / n
        human = tables.human.sum(axis=0) / w
        judge_labelled = tables.judge_labelled.sum(axis=0) / w
        b = (tables.human - human * tables.weight) / w
        e = (tables.judge_passes - theta_f * tables.judged) / n - (
            tables.judge_labelled - judge_labelled * tables.weight
        ) / w
    return theta_f, np.stack([human, judge_labelled]), np.nan_to_num(b), np.nan_to_num(e)


def _active(tables: PPITables) -> np.ndarray:
    """The clusters each group lies on: those with judged rows or labelled ones."""
    return (tables.judged > 0) | (tables.weight > 0)


def tuned_lambda(
    b: np.ndarray, e: np.ndarray, active: np.ndarray, strata: np.ndarray
) -> np.ndarray:
    """Per group, the λ in [0, 1] minimising the stratified variance of Σ (b + λ e).

    1 where e carries no variance (every row labelled: the estimate does not
    depend on λ).
    """
    vb = stratified_variance(b, active, strata, min_df=0).variance
    ve = stratified_variance(e, active, strata, min_df=0).variance
    vbe = stratified_variance(b + e, active, strata, min_df=0).variance
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = -(vbe - vb - ve) / (2 * ve)
    return np.where(ve > _NO_JUDGE_TERM * np.maximum(vb, 1e-300), np.clip(lam, 0.0, 1.0), 1.0)


def ppi_contributions(
    tables: PPITables, strata: np.ndarray, lam: np.ndarray | float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The estimate, λ and the linearized contributions z (clusters, groups) of every group.

    `lam` None tunes λ per group (`tuned_lambda`); a number or an array fixes it.
    """
    theta_f, (human, judge_labelled), b, e = _parts(tables)
    active = _active(tables)
    if lam is None:
        lam = tuned_lambda(b, e, active, strata)
    lam = np.broadcast_to(np.asarray(lam, dtype=float), theta_f.shape)
    estimate = lam * theta_f + human - lam * judge_labelled
    return estimate, lam, b + lam * e


def ppi_rates(
    tables: PPITables,
    strata: np.ndarray,
    confidence_level: float,
    lam: np.ndarray | float | None = None,
) -> PPIRates:
    """Prediction-powered rates with their cluster-t intervals, one per group (column).

    A group without judged rows or without labelled rows has no estimate
    (NaN, with the reason); a design too small for the raw rate's interval
    gives none here either.
    """
    estimate, lam, z = ppi_contributions(tables, strata, lam)
    active = _active(tables)
    design = stratified_variance(z, active, strata)
    q = t_quantile(design.df, confidence_level)
    half = q * np.sqrt(design.variance)
    n_clusters = active.sum(axis=0)
    clusters_low, clusters_high = wilson_interval(
        np.clip(estimate, 0, 1) * n_clusters, n_clusters, confidence_level
    )
    low = np.full(estimate.shape, np.nan)
    high = np.full(estimate.shape, np.nan)
    method, reason = [], []
    for g in range(estimate.size):
        if tables.judged[:, g].sum() == 0:
            why = "no valid judged rows"
        elif tables.labelled[:, g].sum() == 0:
            why = "no labelled rows with a human answer"
        else:
            why = design.reason[g]
        theta = float(np.clip(estimate[g], 0.0, 1.0))
        if why is not None:
            method.append(methods.NONE)
        elif design.variance[g] <= 0 or n_clusters[g] * min(theta, 1 - theta) < 1:
            low[g], high[g] = clusters_low[g], clusters_high[g]
            method.append(methods.WILSON_CLUSTERS)
        else:
            low[g] = max(estimate[g] - half[g], 0.0)
            high[g] = min(estimate[g] + half[g], 1.0)
            method.append(methods.PPI_CLUSTER_T)
        reason.append(why)
    has_labels = tables.labelled.sum(axis=0) > 0
    return PPIRates(
        estimate=np.where(has_labels, np.clip(estimate, 0.0, 1.0), np.nan),
        ci_low=low,
        ci_high=high,
        ci_method=method,
        lam=np.where(has_labels, lam, np.nan),
        df=design.df,
        reason=reason,
    )


def ppi_differences(
    tables: PPITables,
    strata: np.ndarray,
    pairs: list[tuple[int, int]],
    confidence_level: float,
    lam: np.ndarray | float | None = None,
) -> PPIRates:
    """Paired differences a − b of prediction-powered rates, one per (a, b) pair of groups.

    Each side keeps its own λ (tuned, or `lam`), so a difference is exactly
    the difference of the rates reported; both lie on the same base scenarios (targets on
    the same conversations' scenarios, demographic values on the variants of
    the same base scenario), and the variance is that of the per-scenario
    difference of their contributions, so what makes a scenario hard for both
    cancels. The interval is a t interval on the design's degrees of freedom,
    withheld where the design is too small.
    """
    estimate, _, z = ppi_contributions(tables, strata, lam)
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    active = _active(tables)[:, a] | _active(tables)[:, b]
    design = stratified_variance(z[:, a] - z[:, b], active, strata)
    diff = np.clip(estimate[a], 0, 1) - np.clip(estimate[b], 0, 1)
    half = t_quantile(design.df, confidence_level) * np.sqrt(design.variance)
    labelled = tables.labelled.sum(axis=0)
    judged = tables.judged.sum(axis=0)
    reason: list[str | None] = []
    for i in range(len(pairs)):
        if judged[a[i]] == 0 or judged[b[i]] == 0:
            reason.append("no valid judged rows on one side")
        elif labelled[a[i]] == 0 or labelled[b[i]] == 0:
            reason.append("no labelled rows with a human answer on one side")
        else:
            reason.append(design.reason[i])
    given = np.array([r is None for r in reason], dtype=bool)
    has = (labelled[a] > 0) & (labelled[b] > 0)
    return PPIRates(
        estimate=np.where(has, diff, np.nan),
        ci_low=np.where(given, np.maximum(diff - half, -1.0), np.nan),
        ci_high=np.where(given, np.minimum(diff + half, 1.0), np.nan),
        ci_method=[methods.PPI_CLUSTER_T if g else methods.NONE for g in given],
        lam=np.full(len(pairs), np.nan),
        df=design.df,
        reason=reason,
    )
