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
unlabelled rows apart) this is PPI++'s estimator.

Labels are few where judged rows are many, and three small-sample
safeguards keep the interval's coverage at the budgets studies have (the
coverage grid, docs/judge_coverage.md, measures them):

- a judge right on every labelled row shows no residual variance, although
  its errors are merely rare; the residual's variance is therefore at least
  what the labelled rows' 2 × 2 table of (human, judge) passes gives with
  0.5 added to each cell (Agresti and Min 2005, the interval for matched
  proportions that the residual at λ = 1 is), on the labels' Kish effective
  number;
- the degrees of freedom are the Welch–Satterthwaite combination of the
  judged rows' (base scenarios minus metrics) and the labelled rows' (base
  scenarios with labels minus the metrics they lie in), at most the former;
- the interval is Wilson's on the design-effective sample size with that t
  quantile, as for raw rates (`cluster_t.wilson_t_interval`), so it stays in
  [0, 1] and follows a rate's skew near 0 or 1.

Without them, the estimate and the t interval on this variance are
ppi-python's in the i.i.d. case (`tests/stats/test_ppi.py`). An interval is
withheld below its own rule (`interval_rules.CORRECTED_RATE` and
`CORRECTED_DIFFERENCE`: the fewest base scenarios per metric at which the
judge-corrected sweep, docs/judge_coverage.md, finds it covering), or on a
metric with a single base scenario; never because the judge is weak.

Where the labels cannot carry a correction, the corrected value itself is
withheld, with the reason and the labels that would give one (`untrusted`):
a metric of the group with judged rows but fewer than
`MIN_LABELLED_PER_METRIC` labelled rows with a human answer (its residual
would rest on one row, or on the other metrics' residuals), or labelled rows
that lie on a single base scenario in every metric, where neither the
residual's variance nor λ can be estimated (λ undefined). A few labels give
a wide interval, never a 0.0% without one.

Nothing here knows what a judge judged: the same functions correct the
behaviour judge, a judge panel's majority, or any other judge whose verdicts
cover every row and humans label a sample of them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import methods
from .cluster_t import (
    degrees_of_freedom,
    strata_indicator,
    stratified_variance,
    t_quantile,
    welch_df,
    wilson_t_interval,
)
from .grouping import cluster_table
from .interval_rules import CORRECTED_DIFFERENCE, CORRECTED_RATE, IntervalRule

# Below this share of V(b), V(e) is rounding: the labelled rows are the judged rows, so the
# estimate does not depend on λ.
_NO_JUDGE_TERM = 1e-12
# Added to each cell of the labelled rows' (human, judge) table for the residual's variance
# floor (Agresti and Min 2005).
_CELL_PSEUDO_COUNT = 0.5
# The fewest labelled rows with a human answer each metric of a group needs for a corrected
# value: with one, that metric's residual is a single verdict and its variance unknown.
MIN_LABELLED_PER_METRIC = 2


class PPITables(NamedTuple):
    """Per base scenario (rows) and group (columns): what the estimator reads.

    `judge_passes` and `judged` count the judge's passes and the valid judged
    rows; over the labelled rows with a human answer, `human`, `judge_labelled`,
    `both`, `weight` and `weight_squared` sum w·y, w·f, w·y·f, w and w², and
    `labelled` counts them.
    """

    judge_passes: np.ndarray
    judged: np.ndarray
    human: np.ndarray
    judge_labelled: np.ndarray
    both: np.ndarray
    weight: np.ndarray
    weight_squared: np.ndarray
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


class Contributions(NamedTuple):
    """Per group the estimate and λ; per base scenario and group the linearized contributions
    of the judge's term (λ a) and of the residual's (b − λ d), which sum to z."""

    estimate: np.ndarray
    lam: np.ndarray
    judge: np.ndarray
    residual: np.ndarray

    @property
    def z(self) -> np.ndarray:
        return self.judge + self.residual


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
    y = np.nan_to_num(y)

    def table(values: np.ndarray) -> np.ndarray:
        return cluster_table(cluster, group, n_clusters, n_groups, values)

    return PPITables(
        judge_passes=table(f),
        judged=table(valid),
        human=table(w * y),
        judge_labelled=table(w * f),
        both=table(w * y * f),
        weight=table(w),
        weight_squared=table(w * w),
        labelled=table(on),
    )


def _active(tables: PPITables) -> np.ndarray:
    """The clusters each group lies on: those with judged rows or labelled ones."""
    return (tables.judged > 0) | (tables.weight > 0)


def _parts(tables: PPITables):
    """θ_f, Σ w y / W, Σ w f / W, and the linearized pieces b, a, d (z = b + λ (a − d))."""
    n = tables.judged.sum(axis=0)
    w = tables.weight.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        theta_f = tables.judge_passes.sum(axis=0) / n
        human = tables.human.sum(axis=0) / w
        judge_labelled = tables.judge_labelled.sum(axis=0) / w
        b = (tables.human - human * tables.weight) / w
        a = (tables.judge_passes - theta_f * tables.judged) / n
        d = (tables.judge_labelled - judge_labelled * tables.weight) / w
    return theta_f, human, judge_labelled, np.nan_to_num(b), np.nan_to_num(a), np.nan_to_num(d)


def tuned_lambda(
    b: np.ndarray, e: np.ndarray, active: np.ndarray, strata: np.ndarray
) -> np.ndarray:
    """Per group, the λ in [0, 1] minimising the stratified variance of Σ (b + λ e).

    0 where e carries no variance: every row is labelled, the estimate is the
    human rate whatever λ, and the judge adds nothing.
    """
    vb = stratified_variance(b, active, strata, min_df=0).variance
    ve = stratified_variance(e, active, strata, min_df=0).variance
    vbe = stratified_variance(b + e, active, strata, min_df=0).variance
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = -(vbe - vb - ve) / (2 * ve)
    # + 0.0: a λ clipped from −0.0 is reported as 0, never as a negative zero.
    tuned = np.clip(lam, 0.0, 1.0) + 0.0
    return np.where(ve > _NO_JUDGE_TERM * np.maximum(vb, 1e-300), tuned, 0.0)


def ppi_contributions(
    tables: PPITables, strata: np.ndarray, lam: np.ndarray | float | None = None
) -> Contributions:
    """The estimate, λ and the linearized contributions of every group.

    `lam` None tunes λ per group (`tuned_lambda`); a number or an array fixes it.
    """
    theta_f, human, judge_labelled, b, a, d = _parts(tables)
    if lam is None:
        lam = tuned_lambda(b, a - d, _active(tables), strata)
    lam = np.broadcast_to(np.asarray(lam, dtype=float), theta_f.shape)
    estimate = lam * theta_f + human - lam * judge_labelled
    return Contributions(estimate, lam, lam * a, b - lam * d)


def residual_floor(tables: PPITables, lam: np.ndarray) -> np.ndarray:
    """Per group, the least variance the mean residual Σ w (y − λ f) / W is given.

    The variance of the residual y − λ f on the labelled rows' weighted 2 × 2
    table of (y, f), scaled to the labels' Kish effective number n and with
    `_CELL_PSEUDO_COUNT` added to each cell, over n + 4 × that count.
    """
    w = tables.weight.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = w**2 / tables.weight_squared.sum(axis=0)
        both = tables.both.sum(axis=0) / w
        human = tables.human.sum(axis=0) / w
        judge = tables.judge_labelled.sum(axis=0) / w
    shares = np.stack([both, human - both, judge - both, 1 - human - judge + both])
    values = np.stack([1 - lam, np.ones_like(lam), -lam, np.zeros_like(lam)])
    total = n + 4 * _CELL_PSEUDO_COUNT
    with np.errstate(divide="ignore", invalid="ignore"):
        p = (shares * n + _CELL_PSEUDO_COUNT) / total
        mean = (p * values).sum(axis=0)
        floor = ((p * values**2).sum(axis=0) - mean**2) / total
    return np.where(w > 0, floor, 0.0)


class _Design(NamedTuple):
    variance: np.ndarray
    df: np.ndarray
    reason: list[str | None]


def _design(
    judge: np.ndarray,
    residual: np.ndarray,
    floor: np.ndarray,
    active: np.ndarray,
    labelled: np.ndarray,
    strata: np.ndarray,
    rule: IntervalRule,
) -> _Design:
    """Variance of Σ (judge + residual) with the residual's part at least `floor`, and the
    Welch–Satterthwaite degrees of freedom of the two parts, at most the design's; the
    interval is withheld below the statistic's `rule` (`stats.interval_rules`)."""
    whole = stratified_variance(judge + residual, active, strata, rule=rule)
    v_judge = stratified_variance(judge, active, strata, min_df=0).variance
    v_residual = stratified_variance(residual, active, strata, min_df=0).variance
    raised = np.maximum(v_residual, floor)
    variance = np.maximum(whole.variance + raised - v_residual, 0.0)
    df_labelled = degrees_of_freedom(labelled, strata)
    df = np.minimum(whole.df, welch_df(v_judge, whole.df, raised, df_labelled))
    return _Design(variance, df, whole.reason)


def untrusted(
    tables: PPITables, strata: np.ndarray, metric_names: list[str] | None = None
) -> list[str | None]:
    """Per group, why no corrected value can be trusted (None where one can), with the labels
    that would give one; see the module docstring. `metric_names` names the strata codes."""
    indicator = strata_indicator(strata)
    judged = indicator @ tables.judged  # (metrics, groups)
    labelled = indicator @ tables.labelled
    labelled_df = degrees_of_freedom(tables.weight > 0, strata)
    names = metric_names or [f"metric {h + 1}" for h in range(indicator.shape[0])]
    out: list[str | None] = []
    for g in range(tables.judged.shape[1]):
        if judged[:, g].sum() == 0:
            out.append("no valid judged rows")
            continue
        if labelled[:, g].sum() == 0:
            out.append("no labelled rows with a human answer")
            continue
        # Labels in a stratum of their own (the i.i.d. design: labelled rows apart from the
        # judged ones) are a sample of every metric at once; else each metric needs its own.
        apart = bool(((labelled[:, g] > 0) & (judged[:, g] == 0)).any())
        short = [] if apart else [
            h for h in range(judged.shape[0])
            if judged[h, g] > 0 and labelled[h, g] < MIN_LABELLED_PER_METRIC
        ]
        if short:
            need = ", ".join(f"{names[h]}: {int(MIN_LABELLED_PER_METRIC - labelled[h, g])}"
                             for h in short)
            out.append(
                f"too few labels to correct it: {len(short)} of its "
                f"{int((judged[:, g] > 0).sum())} metrics have fewer than "
                f"{MIN_LABELLED_PER_METRIC} labelled rows with a human answer; labelled rows "
                f"that would give one: {need} more (tied or all-unsure items do not count)"
            )
        elif labelled_df[g] < 1:
            out.append(
                "too few labels to correct it: its labelled rows lie on one base scenario per "
                "metric, so λ and their variance cannot be estimated; labelled rows from one "
                "more base scenario in any of its metrics would give one"
            )
        else:
            out.append(None)
    return out


def ppi_rates(
    tables: PPITables,
    strata: np.ndarray,
    confidence_level: float,
    lam: np.ndarray | float | None = None,
    metric_names: list[str] | None = None,
) -> PPIRates:
    """Prediction-powered rates with their intervals, one per group (column).

    A group whose labels cannot carry a correction (`untrusted`: none, too few
    in a metric, λ undefined) has no estimate (NaN, with the reason); a design
    below `CORRECTED_RATE` gives no interval.
    """
    parts = ppi_contributions(tables, strata, lam)
    design = _design(
        parts.judge, parts.residual, residual_floor(tables, parts.lam), _active(tables),
        tables.weight > 0, strata, CORRECTED_RATE,
    )
    estimate = np.clip(parts.estimate, 0.0, 1.0)
    low, high = wilson_t_interval(estimate, design.variance, design.df, confidence_level)
    half = t_quantile(design.df, confidence_level) * np.sqrt(design.variance)
    # At exactly 0 or 1 Wilson's form has no effective n: the t interval, clipped.
    edge = ~np.isfinite(low)
    low = np.where(edge, np.maximum(estimate - half, 0.0), low)
    high = np.where(edge, np.minimum(estimate + half, 1.0), high)
    why = untrusted(tables, strata, metric_names)
    trusted = np.array([r is None for r in why], dtype=bool)
    reason = [w or d for w, d in zip(why, design.reason)]
    given = np.array([r is None for r in reason], dtype=bool)
    return PPIRates(
        estimate=np.where(trusted, estimate, np.nan),
        ci_low=np.where(given, low, np.nan),
        ci_high=np.where(given, high, np.nan),
        ci_method=[methods.PPI_CLUSTER_T_WILSON if g else methods.NONE for g in given],
        lam=np.where(trusted, parts.lam, np.nan),
        df=design.df,
        reason=reason,
    )


def ppi_differences(
    tables: PPITables,
    strata: np.ndarray,
    pairs: list[tuple[int, int]],
    confidence_level: float,
    lam: np.ndarray | float | None = None,
    metric_names: list[str] | None = None,
) -> PPIRates:
    """Paired differences a − b of prediction-powered rates, one per (a, b) pair of groups.

    Each side keeps its own λ (tuned, or `lam`), so a difference is exactly
    the difference of the rates reported; both lie on the same base scenarios
    (targets on the same conversations' scenarios, demographic values on the
    variants of the same base scenario), and the variance is that of the
    per-scenario difference of their contributions, so what makes a scenario
    hard for both cancels. Each side's residual variance gets its floor, and
    the interval is a t interval, withheld below `CORRECTED_DIFFERENCE`;
    the difference itself is withheld where either side's rate is (`untrusted`).
    """
    parts = ppi_contributions(tables, strata, lam)
    floor = residual_floor(tables, parts.lam)
    a = np.array([p[0] for p in pairs], dtype=np.int64)
    b = np.array([p[1] for p in pairs], dtype=np.int64)
    active = _active(tables)[:, a] | _active(tables)[:, b]
    labelled = (tables.weight[:, a] > 0) | (tables.weight[:, b] > 0)
    design = _design(
        parts.judge[:, a] - parts.judge[:, b],
        parts.residual[:, a] - parts.residual[:, b],
        floor[a] + floor[b],
        active,
        labelled,
        strata,
        CORRECTED_DIFFERENCE,
    )
    estimate = np.clip(parts.estimate, 0.0, 1.0)
    diff = estimate[a] - estimate[b]
    half = t_quantile(design.df, confidence_level) * np.sqrt(design.variance)
    why = untrusted(tables, strata, metric_names)
    side = [why[int(a[i])] or why[int(b[i])] for i in range(len(pairs))]
    reason = [s or design.reason[i] for i, s in enumerate(side)]
    given = np.array([r is None for r in reason], dtype=bool)
    trusted = np.array([s is None for s in side], dtype=bool)
    return PPIRates(
        estimate=np.where(trusted, diff, np.nan),
        ci_low=np.where(given, np.maximum(diff - half, -1.0), np.nan),
        ci_high=np.where(given, np.minimum(diff + half, 1.0), np.nan),
        ci_method=[methods.PPI_CLUSTER_T if g else methods.NONE for g in given],
        lam=np.full(len(pairs), np.nan),
        df=design.df,
        reason=reason,
    )
