"""Demographic gaps: how much the pass rate moves when only the persona's demographics change.

Variants of a base scenario differ only in their demographic values, so a gap
is measured within base scenarios: for values A and B of an axis, both rates
are taken over the base scenarios in which both values have valid rows, and
the difference's variance is taken over those scenarios (a paired
difference, `stats.cluster_t`). An axis with v values makes v(v − 1)/2
comparisons, and with several of them some interval will exclude 0 by chance
alone: each gap therefore carries the number of comparisons of its axis, its
p-value, and Holm's step-down adjustment of the p-values within the axis,
which keeps the chance of any false "gap" on that axis at or below 1 − the
confidence level.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pandas as pd
from pydantic import Field
from scipy.stats import t as student_t

from . import methods
from .bootstrap import ClusterBootstrap
from .cluster_t import DesignVariance
from .differences import estimate_differences, paired_design
from .estimates import Difference
from .frame import DEMOGRAPHIC_PREFIX, cluster_ids, demographic_axes
from .grouping import pass_tables
from .interval_rules import GAP


class DemographicGap(Difference):
    """Pass rate of value `a` minus that of value `b` of one demographic axis, for one target."""

    axis: str
    n_comparisons: int = Field(
        ge=0, description="gaps of this axis and target with a p-value: Holm's family size"
    )
    p_value: float | None = Field(description="two-sided cluster-t test of no gap")
    p_holm: float | None = Field(description="Holm-adjusted p-value within the axis")
    holm_significant: bool | None = Field(
        description="p_holm below 1 − confidence level: a gap after correcting for the "
        "number of comparisons"
    )


def gap_p_values(differences: Sequence[float] | np.ndarray, design: DesignVariance) -> np.ndarray:
    """Two-sided p-values of d / se on the design's t distribution; NaN without an interval."""
    d = np.asarray(differences, dtype=float)
    usable = np.array([r is None for r in design.reason]) & (design.variance > 0) & np.isfinite(d)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = np.abs(d) / np.sqrt(design.variance)
        p = 2 * student_t.sf(statistic, np.maximum(design.df, 1))
    return np.where(usable, p, np.nan)


def holm_adjust(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values of one family; NaN entries are not in the family."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    tested = np.flatnonzero(np.isfinite(p))
    m = len(tested)
    if m == 0:
        return out
    order = tested[np.argsort(p[tested], kind="stable")]
    steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(steps)
    return out


def demographic_gaps(
    scores: pd.DataFrame, bootstrap: ClusterBootstrap, *, confidence_level: float = 0.95
) -> dict[str, list[DemographicGap]]:
    """Every pair of values of every axis, per target (values in sorted order, a before b)."""
    axes = demographic_axes(scores)
    tables = pass_tables(
        scores,
        bootstrap.codes(cluster_ids(scores)),
        bootstrap.n_clusters,
        [["target", DEMOGRAPHIC_PREFIX + axis] for axis in axes],
    )
    owners, columns_a, columns_b, offset = [], [], [], 0
    for axis, keys in zip(axes, tables.keys):
        by_target: dict[str, list[tuple[str, int]]] = {}
        for i, (target, value) in enumerate(keys):
            by_target.setdefault(str(target), []).append((str(value), offset + i))
        offset += len(keys)
        for target, values in by_target.items():
            for (a, col_a), (b, col_b) in itertools.combinations(values, 2):
                owners.append((target, axis, a, b))
                columns_a.append(col_a)
                columns_b.append(col_b)
    out: dict[str, list[DemographicGap]] = {str(t): [] for t in pd.unique(scores["target"])}
    if not owners:
        return out
    shared = (tables.trials[:, columns_a] > 0) & (tables.trials[:, columns_b] > 0)
    s_a, t_a = tables.successes[:, columns_a] * shared, tables.trials[:, columns_a] * shared
    s_b, t_b = tables.successes[:, columns_b] * shared, tables.trials[:, columns_b] * shared
    design = paired_design(s_a, t_a, s_b, t_b, bootstrap.strata_codes, rule=GAP)
    differences = estimate_differences(
        [(a, b) for _, _, a, b in owners],
        s_a,
        t_a,
        s_b,
        t_b,
        design,
        method=methods.CLUSTER_T,
        confidence_level=confidence_level,
    )
    p_values = gap_p_values([np.nan if d.difference is None else d.difference for d in differences], design)
    p_holm = np.full(len(owners), np.nan)
    families: dict[tuple[str, str], list[int]] = {}
    for i, (target, axis, _, _) in enumerate(owners):
        families.setdefault((target, axis), []).append(i)
    for members in families.values():
        p_holm[members] = holm_adjust(p_values[members])
    alpha = 1.0 - confidence_level
    for i, ((target, axis, _, _), diff) in enumerate(zip(owners, differences)):
        family = families[(target, axis)]
        tested = np.isfinite(p_values[i])
        out[target].append(
            DemographicGap(
                axis=axis,
                n_comparisons=int(np.isfinite(p_values[family]).sum()),
                p_value=float(p_values[i]) if tested else None,
                p_holm=float(p_holm[i]) if tested else None,
                holm_significant=bool(p_holm[i] < alpha) if tested else None,
                **diff.model_dump(),
            )
        )
    return out
