"""Cluster-t intervals: the design-based variance of a pass rate over base scenarios within metrics.

A pass rate is a ratio estimator R = Σ passes / Σ valid rows, and its rows
are clustered in base scenarios nested in metrics. Its variance is estimated
by linearization (Taylor): each base scenario c contributes
z_c = (passes_c − R · rows_c) / Σ rows, and within each metric h with k_h base
scenarios the variance is k_h / (k_h − 1) · Σ (z_c − z̄_h)², summed over the
metrics (Wolter 2007, ch. 6; what `survey::svymean` does for a stratified
cluster design). A difference of two rates taken on the same base scenarios
uses z_a − z_b per scenario, so what makes a scenario hard for both sides
cancels.

Its reference distribution is Student's t on the design's degrees of freedom,
Σ (k_h − 1): base scenarios minus metrics. The normal quantile (which the
percentile bootstrap effectively uses) assumes many base scenarios; at the
handful a benchmark has, the t quantile is what keeps an interval's coverage
near its nominal level (Korn & Graubard 1999, §5.2). Rates use Wilson's
score interval on the design-effective sample size (Kish's n / deff) with the
t quantile, which keeps them inside [0, 1] and follows the skew of a rate
near 0 or 1; in the coverage grid it stayed nearer the nominal level than
the t interval on the rate or the logit scale.

Below some number of base scenarios no interval keeps its coverage; where
depends on the statistic (`stats.interval_rules`, measured by the coverage
grid in docs/interval_coverage.md), and a metric with a single base scenario
has no estimable variance at all. There the interval is withheld with the
reason, never replaced by a narrower one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NamedTuple

import numpy as np
from scipy.stats import chi2
from scipy.stats import t as student_t

from .interval_rules import IntervalRule, remedy


class DesignVariance(NamedTuple):
    """Per group: linearized variance, degrees of freedom, and why there is no variance.

    A difference's design also carries each side's own variance and their covariance
    (`sides`: variance a, variance b, covariance), which a MOVER interval combines.
    """

    variance: np.ndarray  # (groups,)
    df: np.ndarray  # (groups,), base scenarios with rows minus metrics they lie in
    reason: list[str | None]  # why no interval can be made, per group
    sides: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


# Relative size of the rounding left by Σz² − (Σz)²/k in double precision (`stratified_variance`).
ROUNDING = 1e-12

def strata_indicator(strata: np.ndarray) -> np.ndarray:
    """(strata, clusters) 0/1 matrix from a stratum code per cluster."""
    codes = np.asarray(strata, dtype=np.int64)
    n_strata = int(codes.max()) + 1 if codes.size else 0
    out = np.zeros((n_strata, codes.size))
    out[codes, np.arange(codes.size)] = 1.0
    return out


def degrees_of_freedom(active: np.ndarray, strata: np.ndarray) -> np.ndarray:
    """Per group (column of the (clusters, groups) 0/1 `active`): Σ over strata of its active
    clusters − 1, the design's degrees of freedom (base scenarios minus metrics)."""
    k = strata_indicator(strata) @ np.asarray(active, dtype=float)
    return np.maximum(k - 1, 0).sum(axis=0)


def stratified_variance(
    z: np.ndarray,
    active: np.ndarray,
    strata: np.ndarray,
    *,
    rule: IntervalRule | None = None,
    min_df: int | None = None,
) -> DesignVariance:
    """Variance of Σ z over clusters, stratified, counting only each group's active clusters.

    `z` and `active` are (clusters, groups); `strata` gives each cluster's
    stratum code. A stratum in which a group has exactly one active cluster
    makes that group's variance inestimable; a design smaller than the
    statistic's `rule` (`stats.interval_rules`, measured for each statistic;
    or `min_df`, a bare degrees-of-freedom rule, 0 for a component of a
    statistic that is never withheld on its own) makes it too unstable for an
    interval. Both set a reason.
    """
    if (rule is None) == (min_df is None):
        raise TypeError("give the statistic's rule (stats.interval_rules) or min_df, not both")
    if min_df is not None:
        rule = IntervalRule("variance component", 0, 0, "cluster-t", min_df=min_df)
    assert rule is not None, "given, or made from min_df above"
    z = np.asarray(z, dtype=float)
    flat = z.ndim == 1
    if flat:
        z, active = z[:, None], np.asarray(active)[:, None]
    indicator = strata_indicator(strata)
    on = np.asarray(active, dtype=float)
    k = indicator @ on  # (strata, groups): active clusters per stratum
    total = indicator @ (z * on)
    squares = indicator @ (z * z * on)
    with np.errstate(divide="ignore", invalid="ignore"):
        within = np.where(k >= 2, squares - total**2 / np.maximum(k, 1), 0.0)
    # Σz² − (Σz)²/k cancels: where every base scenario of a metric shows the same value, it
    # leaves rounding (4e-18 for five scenarios at 0.05), not a spread, and a variance that
    # small would draw an interval of zero width. A spread of real rows is many orders above.
    within = np.where(np.abs(within) <= ROUNDING * squares, 0.0, within)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_stratum = np.where(k >= 2, k / (k - 1) * np.maximum(within, 0.0), 0.0)
    variance = per_stratum.sum(axis=0)
    counted = degrees_of_freedom(on, strata)
    lone = (k == 1).any(axis=0)
    metrics = (k >= 1).sum(axis=0)
    clusters = k.sum(axis=0)
    reason: list[str | None] = []
    for g in range(z.shape[1]):
        m, c = int(metrics[g]), int(clusters[g])
        why: str | None
        if lone[g]:
            why = "a metric has a single base scenario: its variance cannot be estimated"
        else:
            why = rule.withheld(c, m, int(counted[g]))
        if why is None:
            reason.append(None)
            continue
        reason.append(f"{why}; {remedy(m, rule, c)}")
    return DesignVariance(variance=variance, df=satterthwaite_df(per_stratum, k, counted),
                          reason=reason)


def satterthwaite_df(per_stratum: np.ndarray, k: np.ndarray, counted: np.ndarray) -> np.ndarray:
    """Per group, the degrees of freedom of a variance summed over strata (metrics): Σ v_h
    squared over Σ v_h² / (k_h − 1) (Satterthwaite 1946), at most the count of base scenarios
    minus metrics, `counted`, which it equals when every metric contributes alike.

    When one metric's scenarios vary far more than the others' (an ICC of 0.8 among metrics at
    0.05) the sum's variance is that metric's, estimated from its own few base scenarios: t on
    all metrics' base scenarios minus metrics is then far too narrow a quantile (an overall
    rate covered 0.85-0.89 at 3 base scenarios per metric in the stress grid,
    docs/stress_coverage.md)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(k >= 2, per_stratum**2 / np.maximum(k - 1, 1), 0.0).sum(axis=0)
        found = per_stratum.sum(axis=0) ** 2 / spread
    return np.where(spread > 0, np.minimum(found, counted), counted)


def design_effect_df(
    successes: np.ndarray, trials: np.ndarray, strata: np.ndarray, design_df: np.ndarray
) -> np.ndarray:
    """Per group, the degrees of freedom of a rate's t quantile: those of its design effect
    where the group's rows lie in one metric, else `design_df`.

    A rate's Wilson interval on the design-effective sample size is uncertain only through the
    design effect: the rate's own noise is in the score form already. For binary rows the
    design effect is the between-scenario share of the rows' spread, SS_B / SS_T, times the
    rows per scenario; under a one-way random-effects model its relative variance is, by the
    delta method, 2 (SS_W / SS_T)² (1 / (k − 1) + 1 / (N − k)) with SS_W the spread within
    base scenarios, k the base scenarios and N the rows. Where scenarios barely cluster the
    rows within them carry most of it and the design effect is far steadier than the variance's
    k − 1 degrees of freedom say: metrics at ICC 0.05 beside one at 0.8 covered 0.985 on
    average on k − 1 at 6 base scenarios per metric of one sample, 0.974 on these
    (tests/stats/test_stress_grid.py; docs/stress_coverage.md has the whole grid). The spread
    is learned from the rows that go the minority way: m
    of them say no more of it than a Poisson count of m does (relative variance 1 / m), so the
    degrees of freedom are at most 2m, and never fewer than the design's k − 1. A rate over
    several metrics keeps the Satterthwaite degrees of freedom of its strata
    (`satterthwaite_df`), which the clustered metric among them sets.
    """
    on = trials > 0
    metrics = ((strata_indicator(strata) @ on.astype(float)) > 0).sum(axis=0)
    k = on.sum(axis=0)
    n, x = trials.sum(axis=0), successes.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        within = np.where(on, successes * (trials - successes) / np.where(on, trials, 1.0),
                          0.0).sum(axis=0)
        total = np.where(n > 0, x * (n - x) / np.where(n > 0, n, 1.0), 0.0)
        share = np.where(total > 0, within / np.where(total > 0, total, 1.0), 1.0)
        spread = share**2 * (1 / np.maximum(k - 1, 1) + 1 / np.maximum(n - k, 1))
        found = np.where(spread > 0, 1 / np.where(spread > 0, spread, 1.0), np.inf)
    own = np.maximum(design_df, np.minimum(found, 2 * np.minimum(x, n - x)))
    return np.where((metrics == 1) & (k >= 2) & (total > 0), own, design_df)


# Set only while the coverage grid measures how its coverage moves with the quantile
# (`degrees_of_freedom_scaled`): every interval's degrees of freedom times this factor.
_DF_SCALE: ContextVar[float] = ContextVar("degrees_of_freedom_scale", default=1.0)


@contextmanager
def degrees_of_freedom_scaled(factor: float) -> Iterator[None]:
    """Within the block, every t quantile is taken on `factor` times its degrees of freedom
    (`math.inf`: the normal quantile). How the coverage grid shows what a narrower quantile
    would do to each interval's coverage at the small designs (docs/interval_coverage.md)."""
    token = _DF_SCALE.set(factor)
    try:
        yield
    finally:
        _DF_SCALE.reset(token)


def t_quantile(df: np.ndarray, confidence_level: float | np.ndarray) -> np.ndarray:
    """Two-sided Student t quantile; NaN where df < 1."""
    df = np.asarray(df, dtype=float)
    scale = _DF_SCALE.get()
    with np.errstate(invalid="ignore"):
        if scale != 1.0:
            df = np.where(df >= 1, df * scale, df)
        return np.where(df >= 1, student_t.ppf(0.5 + confidence_level / 2, np.maximum(df, 1)), np.nan)


def rate_z(successes: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """Linearized contribution of each cluster to each group's ratio estimator (0 without rows)."""
    x, n = successes.sum(axis=0), trials.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(n > 0, x / n, 0.0)
        return np.where(n > 0, (successes - rate * trials) / np.where(n > 0, n, 1.0), 0.0)


def welch_df(var_a: np.ndarray, df_a: np.ndarray, var_b: np.ndarray, df_b: np.ndarray) -> np.ndarray:
    """Welch–Satterthwaite degrees of freedom of a sum of two independent variance estimates."""
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(df_a > 0, var_a**2 / df_a, 0.0) + np.where(df_b > 0, var_b**2 / df_b, 0.0)
        return np.where(terms > 0, (var_a + var_b) ** 2 / terms, np.minimum(df_a, df_b))


def wilson_t_effective(
    rate: np.ndarray,
    n_effective: np.ndarray,
    df: np.ndarray,
    confidence_level: float,
    *,
    modified: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval on `n_effective` rows with the t quantile on `df`, inside
    [0, 1] (exactly 0 or 1 at a rate of 0 or 1); NaN where n_effective is not positive.
    `modified`: with Brown, Cai & DasGupta's Poisson bounds near 0 and 1 (below); a MOVER
    difference takes its sides without them, which would only widen it where it already
    covers more than it claims."""
    p = np.asarray(rate, dtype=float)
    q = t_quantile(df, confidence_level)
    ok = np.isfinite(n_effective) & (n_effective > 0) & np.isfinite(q)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(ok, n_effective, 1.0)
        denom = 1 + q**2 / n
        centre = (p + q**2 / (2 * n)) / denom
        half = q * np.sqrt(p * (1 - p) / n + q**2 / (4 * n**2)) / denom
        low = np.where(p <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))
        high = np.where(p >= 1, 1.0, np.clip(centre + half, 0.0, 1.0))
        # Brown, Cai & DasGupta's (2001) modification: with one to x* passes (failures) the
        # Wilson bound on that side is replaced by the Poisson one, where Wilson's coverage
        # dips (0.92 at 10 rows and a rate of 0.95 in the coverage grid); the wider is kept.
        alpha = 1 - confidence_level
        few = np.where(n <= 50, 2.0, 3.0) if modified else np.zeros_like(n)
        x, f = p * n, (1 - p) * n
        poisson_low = chi2.ppf(alpha, 2 * np.maximum(x, 1e-9)) / (2 * n)
        poisson_high = 1 - chi2.ppf(alpha, 2 * np.maximum(f, 1e-9)) / (2 * n)
        low = np.where((x > 0) & (x <= few), np.minimum(low, poisson_low), low)
        high = np.where((f > 0) & (f <= few), np.maximum(high, poisson_high), high)
    return np.where(ok, low, np.nan), np.where(ok, high, np.nan)


def wilson_t_interval(
    rate: np.ndarray, variance: np.ndarray, df: np.ndarray, confidence_level: float | np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval on the design-effective sample size, with the t quantile.

    n_eff = p(1 − p) / variance is the number of independent rows the
    clustered ones are worth (Kish's design effect); NaN where the rate is 0
    or 1 or the variance is 0.
    """
    p = np.asarray(rate, dtype=float)
    q = t_quantile(df, confidence_level)
    inside = (p > 0) & (p < 1) & (variance > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.where(inside, p * (1 - p) / np.where(inside, variance, 1.0), 1.0)
        denom = 1 + q**2 / n
        centre = (p + q**2 / (2 * n)) / denom
        half = q * np.sqrt(p * (1 - p) / n + q**2 / (4 * n**2)) / denom
    return np.where(inside, centre - half, np.nan), np.where(inside, centre + half, np.nan)
