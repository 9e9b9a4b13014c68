"""A demographic gap read twice on the same rows, and how much it moved between the readings.

Two readings of the same rows: the verdicts as measured and as judged when every user reads
as one variant (the judge probes' identity edit), or the main judge's verdicts and another
judge's on the same conversations (the evaluator-bias arms). Each reading has its demographic
gaps (`stats.gaps`), and the question is the difference: gap in the first reading minus gap
in the second. Because both readings share every row, that is a paired contrast of four rates
with its own cluster-t interval (`stats.rate_contrasts`), narrower and honest where comparing
the two gaps' intervals is neither.

For the identity probe the ratio matters too: the share of the measured gap the second
reading removes, (first − second) / first. It gets Fieller's interval (Fieller 1954) from the
same design variances (numerator, denominator, their covariance) and t quantile: the set of
shares R with (J − R·G)² ≤ t² · var(J − R·G). That set is a bounded interval exactly when
G² > t² · var(G), that is when the gap's own cluster-t interval leaves 0 out; where it
includes 0 the share of a gap that may be nothing is unbounded, and it is withheld with that
reason.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from pydantic import Field

from ..schemas import Row
from . import methods
from .bootstrap import ClusterBootstrap
from .cluster_t import degrees_of_freedom, rate_z, stratified_variance, t_quantile
from .estimates import Difference
from .frame import DEMOGRAPHIC_PREFIX, cluster_ids, demographic_axes, valid_mask
from .gaps import DemographicGap, demographic_gaps
from .grouping import pass_tables
from .interval_rules import IntervalRule
from .rate_contrasts import ZERO_SE, ContrastEstimate, ContrastSide, linear_contrasts

KEY_COLUMNS = ("target", "metric_id", "base_id", "scenario_id", "sample")


class ShareEstimate(Row):
    """A ratio of two contrasts on the same rows (a share of a gap), with Fieller's interval."""

    value: float | None = Field(description="None where the denominator is 0 or missing")
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    reason: str | None = Field(default=None, description="why the value or its interval is None")


@dataclass(frozen=True)
class GapReadings:
    """One gap of one target in both readings, and first − second."""

    target: str
    axis: str
    a: str
    b: str
    first: DemographicGap
    second: DemographicGap
    change: ContrastEstimate
    share: ShareEstimate | None


def _same_rows(first: pd.DataFrame, second: pd.DataFrame) -> None:
    columns = [*KEY_COLUMNS, *(c for c in first.columns if c.startswith(DEMOGRAPHIC_PREFIX))]
    if len(first) != len(second) or not all(
            (first[c].astype(str).to_numpy() == second[c].astype(str).to_numpy()).all()
            for c in columns):
        raise ValueError("the two readings must hold the same rows in the same order")


def _both_valid(first: pd.DataFrame, second: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both frames with every row that lacks a verdict in either reading made an error row."""
    keep = valid_mask(first) & valid_mask(second)

    def masked(frame: pd.DataFrame) -> pd.DataFrame:
        passed = frame["passed"].astype(object).where(keep, None)
        return frame.assign(status=np.where(keep, frame["status"], "error").astype(object),
                            passed=passed)

    return masked(first), masked(second)


def fieller_share(numerator: float, denominator: float, var_n: float, var_d: float,
                  covariance: float, quantile: float) -> tuple[float, float] | str:
    """Fieller's interval of numerator / denominator, or why there is none."""
    a = denominator**2 - quantile**2 * var_d
    if a <= 0:
        return ("the gap's interval includes 0: the share of a gap that may be nothing has no "
                "bounded interval (Fieller)")
    b = numerator * denominator - quantile**2 * covariance
    c = numerator**2 - quantile**2 * var_n
    disc = b * b - a * c
    scale = max(b * b, abs(a * c), 1e-300)
    if disc <= 1e-12 * scale:
        return ("the share is the same in every base scenario: its variance is 0 and no "
                "interval can be drawn from it")
    root = np.sqrt(disc)
    return float((b - root) / a), float((b + root) / a)


def gap_readings(
    first: pd.DataFrame,
    second: pd.DataFrame,
    *,
    rule: IntervalRule,
    confidence_level: float,
    share_rule: IntervalRule | None = None,
) -> list[GapReadings]:
    """Every gap of every target in both readings of the same rows, with first − second (its
    interval withheld below `rule`) and, with `share_rule`, the share (first − second) / first.

    Only rows with a verdict in both readings count; the gaps are `demographic_gaps` of each
    reading on those rows (values in sorted order, a before b).
    """
    _same_rows(first, second)
    first, second = _both_valid(first, second)
    if first.empty:
        return []
    bootstrap = ClusterBootstrap.from_scores(first, resamples=1, seed=0)
    strata, codes = bootstrap.strata_codes, bootstrap.codes(cluster_ids(first))
    found_first = demographic_gaps(first, bootstrap, confidence_level=confidence_level)
    found_second = demographic_gaps(second, bootstrap, confidence_level=confidence_level)
    out = []
    for axis in demographic_axes(first):
        grouping = [["target", DEMOGRAPHIC_PREFIX + axis]]
        one = pass_tables(first, codes, bootstrap.n_clusters, grouping)
        two = pass_tables(second, codes, bootstrap.n_clusters, grouping)
        by_target: dict[str, list[tuple[str, int]]] = {}
        for i, (target, value) in enumerate(one.keys[0]):
            by_target.setdefault(str(target), []).append((str(value), i))
        owners, col_a, col_b = [], [], []
        for target, values in by_target.items():
            for (a, i), (b, j) in itertools.combinations(values, 2):
                owners.append((target, a, b))
                col_a.append(i)
                col_b.append(j)
        if not owners:
            continue
        shared = (one.trials[:, col_a] > 0) & (one.trials[:, col_b] > 0)
        tables = [(tab.successes[:, cols] * shared, tab.trials[:, cols] * shared)
                  for tab in (one, two) for cols in (col_a, col_b)]
        side = ContrastSide(
            successes=tuple(s for s, _ in tables), trials=tuple(t for _, t in tables),
            weights=(1.0, -1.0, -1.0, 1.0), strata=strata, active=shared,
            labels=("a in the first reading", "b in the first reading",
                    "a in the second reading", "b in the second reading"),
        )
        changes = linear_contrasts([side], rule=rule, confidence_level=confidence_level)
        shares: list[ShareEstimate | None] = [None] * len(owners)
        if share_rule is not None:
            shares = list(explained_shares(tables, shared, strata, changes,
                             [_gap_of(found_first, o, axis) for o in owners],
                             rule=share_rule, confidence_level=confidence_level))
        for (target, a, b), change, share in zip(owners, changes, shares):
            out.append(GapReadings(
                target=target, axis=axis, a=a, b=b,
                first=_gap_of(found_first, (target, a, b), axis),
                second=_gap_of(found_second, (target, a, b), axis),
                change=change, share=share,
            ))
    return out


def _gap_of(found: dict[str, list[DemographicGap]], owner: tuple[str, str, str], axis: str
            ) -> DemographicGap:
    target, a, b = owner
    return next(g for g in found[target] if (g.axis, g.a, g.b) == (axis, a, b))


def explained_shares(tables, shared: np.ndarray, strata: np.ndarray,
                     changes: Sequence[ContrastEstimate], gaps: Sequence[Difference], *,
                     rule: IntervalRule, confidence_level: float) -> list[ShareEstimate]:
    """(first − second) / first per group, from the four (successes, trials) tables (a and b
    in the first reading, then in the second; `shared` the clusters each group lies on), the
    groups' `changes` (first − second, `linear_contrasts`) and first-reading `gaps` as shown:
    Fieller's interval from the design variances of both and their covariance, withheld below
    `rule`, where the gap has no interval or its interval includes 0."""
    (s1a, t1a), (s1b, t1b), (s2a, t2a), (s2b, t2b) = tables
    z_first = rate_z(s1a, t1a) - rate_z(s1b, t1b)
    z_second = rate_z(s2a, t2a) - rate_z(s2b, t2b)

    def variance(z: np.ndarray) -> np.ndarray:
        found = stratified_variance(z, shared, strata, min_df=0).variance
        return np.where(found > ZERO_SE**2, found, 0.0)

    var_change, var_first = variance(z_first - z_second), variance(z_first)
    covariance = (var_change + var_first - variance(z_second)) / 2
    withheld = stratified_variance(z_first - z_second, shared, strata, rule=rule).reason
    quantile = t_quantile(degrees_of_freedom(shared, strata), confidence_level)
    out = []
    for g, (change, gap) in enumerate(zip(changes, gaps)):
        if change.value is None or gap.difference is None:
            out.append(ShareEstimate(value=None, ci_low=None, ci_high=None, ci_method=methods.NONE,
                                     reason=change.reason or gap.reason))
            continue
        if abs(gap.difference) < 1e-12:
            out.append(ShareEstimate(value=None, ci_low=None, ci_high=None, ci_method=methods.NONE,
                                     reason="the measured gap is 0: there is no gap to explain"))
            continue
        value = round(change.value / gap.difference, 12)
        reason = withheld[g]
        low, high = gap.ci_low, gap.ci_high
        if reason is None and (low is None or high is None):
            reason = f"the gap has no interval: {gap.reason}"
        elif reason is None and low is not None and high is not None and low <= 0 <= high:
            reason = ("the gap's interval includes 0: the share of a gap that may be nothing has "
                      "no bounded interval (Fieller)")
        bounds = reason or fieller_share(change.value, gap.difference, var_change[g],
                                         var_first[g], covariance[g], float(quantile[g]))
        if isinstance(bounds, str):
            out.append(ShareEstimate(value=value, ci_low=None, ci_high=None,
                                     ci_method=methods.NONE, reason=bounds))
            continue
        out.append(ShareEstimate(value=value, ci_low=bounds[0], ci_high=bounds[1],
                                 ci_method=methods.FIELLER_CLUSTER_T))
    return out
