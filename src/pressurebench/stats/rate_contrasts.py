"""Linear contrasts of pass rates: a difference of two differences, on the same base scenarios
or on unrelated ones.

Several validation questions are a difference of two differences. The judge's part of a
demographic gap is the gap as measured minus the same gap with the same rows read as if
every user were of one variant; a gap's change between two judges is the gap under one minus
the gap under the other on the same conversations; the change of a difference between two
targets across arms is (t1 − t2 in the arm) − (t1 − t2 in the main arm). Each is Σ w_g · p_g
over pass rates p_g, and comparing the two differences' own intervals is not a test of it:
they share rows, and their errors are strongly correlated.

The contrast's variance is a pass rate's linearized one (`stats.cluster_t`) applied to
Σ w_g · z_g, each base scenario's weighted contribution: over one set of base scenarios
when every rate lies on the same ones (a *paired* contrast: what makes a scenario hard or
easy for every reading cancels), or summed over unrelated sets (an arm whose generator wrote
other scenarios), with Welch–Satterthwaite degrees of freedom. The interval is
value ± t · se on them (`cluster-t`, `cluster-t-welch`): a contrast's true value is near 0
where nothing moved, where there is no skew for a MOVER interval to follow (as for demographic
gaps), and the coverage sweep (docs/validation_coverage.md) measures each use's rule. Where
the variance is 0 (every base scenario shows the same contrast, as with a judge that never
samples), the rates' Wilson intervals with each base scenario counted once are combined as
Newcombe combines two (MOVER without correlation): it ignores the pairing and errs wide. The
two-sided p-value of "the contrast is 0" inverts the interval shown (`inverted_tests`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from pydantic import Field

from ..schemas import Row
from . import methods
from .cluster_t import rate_z, stratified_variance, t_quantile
from .interval_rules import IntervalRule
from .intervals import wilson_interval
from .inverted_tests import inverted_p_value, symmetric_t_p_value
from .multiplicity import Corrected, holm_by_family

# Below this standard error a contrast's variance is rounding error of one that is 0: every base
# scenario shows the same contrast (the smallest real one, a rate on 10^6 rows, is ~10^-4).
ZERO_SE = 1e-12


class ContrastEstimate(Row):
    """A linear contrast of pass rates (a difference of two differences), with its interval
    and the two-sided test of "it is 0" that inverts that interval."""

    value: float | None = Field(description="the contrast; None where a rate it needs has no rows")
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    df: float | None = Field(description="degrees of freedom of the t quantile; None without one")
    n_clusters: int = Field(ge=0, description="base scenarios with valid rows behind it")
    p_value: float | None = Field(
        description="two-sided p of 'the contrast is 0', from inverting the interval shown: "
        "below 1 − level exactly when the interval leaves 0 out; None without an interval"
    )
    reason: str | None = Field(default=None, description="why the value or its interval is None")


class TestedContrast(ContrastEstimate, Corrected):
    """A contrast with its test corrected by Holm's step-down method over a declared family."""

    n_comparisons: int = Field(ge=0, description="contrasts of the family with a p-value")


@dataclass(frozen=True)
class ContrastSide:
    """Rates on one set of base scenarios: per term its (clusters, groups) pass tables and its
    weight; the contrast is Σ over sides and terms of weight · rate. `labels` names the terms
    in a reason; `active` (clusters, groups) marks the clusters each group's contrast lies on
    (default: where any term has rows)."""

    successes: tuple[np.ndarray, ...]
    trials: tuple[np.ndarray, ...]
    weights: tuple[float, ...]
    strata: np.ndarray
    labels: tuple[str, ...]
    active: np.ndarray | None = field(default=None)

    def on(self) -> np.ndarray:
        if self.active is not None:
            return np.asarray(self.active, dtype=bool)
        return np.any([t > 0 for t in self.trials], axis=0)


def _welch(variances: list[np.ndarray], dfs: list[np.ndarray]) -> np.ndarray:
    """Welch–Satterthwaite degrees of freedom of a sum of independent variance estimates."""
    total = np.sum(variances, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.sum([np.where(d > 0, v**2 / d, 0.0) for v, d in zip(variances, dfs)], axis=0)
        return np.where(terms > 0, total**2 / terms, np.min(dfs, axis=0))


def _newcombe_bounds(value: float, terms: list[tuple[float, float, float]], level: float
                     ) -> tuple[float, float]:
    """value's interval from each term's (weight, rate, base scenarios) Wilson interval with
    each base scenario counted once, combined without correlation (Newcombe; MOVER with ρ 0)."""
    below = above = 0.0
    for weight, rate, k in terms:
        low, high = (float(v) for v in wilson_interval(rate * k, k, level))
        down, up = rate - low, high - rate
        below += weight**2 * (down if weight > 0 else up) ** 2
        above += weight**2 * (up if weight > 0 else down) ** 2
    return value - np.sqrt(below), value + np.sqrt(above)


def linear_contrasts(
    sides: Sequence[ContrastSide],
    *,
    rule: IntervalRule,
    confidence_level: float,
) -> list[ContrastEstimate]:
    """One contrast per group (column of the tables): Σ weight · rate over every side's terms.

    One side is a paired contrast (`cluster-t`); several are independent sets of base scenarios
    whose variances add (`cluster-t-welch`). Each side's design is withheld below `rule`;
    where a side gives a reason, so does the contrast.
    """
    n_groups = sides[0].successes[0].shape[1]
    rates, terms_of, variances, dfs, reasons, clusters = [], [], [], [], [], np.zeros(n_groups)
    for side in sides:
        on = side.on()
        z = np.zeros(on.shape)
        for s, t, w in zip(side.successes, side.trials, side.weights):
            z = z + w * rate_z(s, t)
            with np.errstate(divide="ignore", invalid="ignore"):
                rates.append(s.sum(axis=0) / t.sum(axis=0))
            terms_of.append((w, (t > 0).sum(axis=0)))
        design = stratified_variance(z, on, side.strata, rule=rule)
        variances.append(design.variance)
        dfs.append(design.df)
        reasons.append(design.reason)
        clusters = clusters + on.sum(axis=0)
    labels = [label for side in sides for label in side.labels]
    variance = np.sum(variances, axis=0)
    df = dfs[0] if len(sides) == 1 else _welch(variances, dfs)
    method = methods.CLUSTER_T if len(sides) == 1 else methods.CLUSTER_T_WELCH
    weights = np.array([w for w, _ in terms_of])
    floor, ceiling = weights.clip(max=0).sum(), weights.clip(min=0).sum()
    out = []
    for g in range(n_groups):
        common = {"n_clusters": int(clusters[g])}
        missing = [label for label, r in zip(labels, rates) if not np.isfinite(r[g])]
        if missing:
            out.append(ContrastEstimate(
                value=None, ci_low=None, ci_high=None, ci_method=methods.NONE, df=None,
                p_value=None, reason=f"no valid rows for {', '.join(missing)}", **common))
            continue
        value = round(float(sum(w * r[g] for (w, _), r in zip(terms_of, rates))), 12)
        reason = next((r[g] for r in reasons if r[g] is not None), None)
        if reason is not None:
            out.append(ContrastEstimate(value=value, ci_low=None, ci_high=None,
                                        ci_method=methods.NONE, df=None, p_value=None,
                                        reason=reason, **common))
            continue
        if variance[g] > ZERO_SE**2:
            half = float(t_quantile(df[g], confidence_level) * np.sqrt(variance[g]))
            out.append(ContrastEstimate(
                value=value, ci_low=max(value - half, floor), ci_high=min(value + half, ceiling),
                ci_method=method, df=float(df[g]),
                p_value=symmetric_t_p_value(value, variance[g], df[g]), **common))
            continue
        terms = [(w, float(r[g]), float(k[g])) for (w, k), r in zip(terms_of, rates)]

        def interval_at(level: float, terms=terms, value=value) -> tuple[float, float]:
            low, high = _newcombe_bounds(value, terms, level)
            return max(low, floor), min(high, ceiling)

        low, high = interval_at(confidence_level)
        out.append(ContrastEstimate(
            value=value, ci_low=float(low), ci_high=float(high),
            ci_method=methods.NEWCOMBE_CLUSTERS, df=None,
            p_value=inverted_p_value(interval_at, confidence_level), **common))
    return out


def holm_tested(estimates: Sequence[ContrastEstimate], confidence_level: float
                ) -> list[TestedContrast]:
    """The contrasts with Holm's correction over them as one family (those with a p-value)."""
    tests, sizes = holm_by_family([e.p_value for e in estimates], [0] * len(estimates),
                                  confidence_level)
    return [
        TestedContrast(**e.model_dump(include=set(ContrastEstimate.model_fields)),
                       n_comparisons=sizes.get(0, 0), **t)
        for e, t in zip(estimates, tests)
    ]
