"""Demographic gaps: how much the pass rate moves when only the persona's demographics change.

Variants of a base scenario differ only in their demographic values, so a gap
is measured within base scenarios: for values A and B of an axis, both rates
are taken over the base scenarios in which both values have valid rows, and
the difference's variance is taken over those scenarios (a paired
difference, `stats.cluster_t`). An axis with v values makes v(v − 1)/2
comparisons, and with several of them some interval will exclude 0 by chance
alone: each gap therefore carries the number of comparisons of its axis, its
p-value (inverting its interval, `stats.inverted_tests`), and Holm's step-down
adjustment of the p-values within the target and axis (`stats.multiplicity`),
which keeps the chance of any false "gap" on that axis at or below 1 − the
confidence level.
"""

from __future__ import annotations

import itertools

import pandas as pd
from pydantic import Field

from . import methods
from .bootstrap import ClusterBootstrap
from .differences import estimate_differences, paired_design
from .estimates import Difference
from .frame import DEMOGRAPHIC_PREFIX, cluster_ids, demographic_axes
from .grouping import pass_tables
from .interval_rules import GAP
from .multiplicity import Corrected, holm_by_family


class DemographicGap(Difference, Corrected):
    """Pass rate of value `a` minus that of value `b` of one demographic axis, for one target;
    Holm's family is the target's gaps on this axis."""

    axis: str
    n_comparisons: int = Field(
        ge=0, description="gaps of this axis and target with a p-value: Holm's family size"
    )


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
    keys = [(target, axis) for target, axis, _, _ in owners]
    corrected, sizes = holm_by_family([d.p_value for d in differences], keys, confidence_level)
    for (target, axis, _, _), diff, fields in zip(owners, differences, corrected):
        out[target].append(DemographicGap(axis=axis, n_comparisons=sizes[(target, axis)],
                                          **fields, **diff.model_dump()))
    return out
