"""Demographic gaps: how much the pass rate moves when only the persona's demographics change.

Variants of a base scenario differ only in their demographic values, so a gap
is measured within base scenarios: for values A and B of an axis, both rates
are taken over the base scenarios in which both values have valid rows, and
each replicate takes both from the same resampled scenarios (a paired
difference). Intervals are per comparison; with many axes and values some
will exclude 0 by chance alone.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from . import methods
from .bootstrap import ClusterBootstrap
from .differences import estimate_differences
from .estimates import Difference
from .frame import DEMOGRAPHIC_PREFIX, demographic_axes
from .grouping import pass_tables


class DemographicGap(Difference):
    """Pass rate of value `a` minus that of value `b` of one demographic axis, for one target."""

    axis: str


def demographic_gaps(
    scores: pd.DataFrame, bootstrap: ClusterBootstrap, *, confidence_level: float = 0.95
) -> dict[str, list[DemographicGap]]:
    """Every pair of values of every axis, per target (values in sorted order, a before b)."""
    axes = demographic_axes(scores)
    tables = pass_tables(
        scores,
        bootstrap.codes(scores["base_id"]),
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
    p = len(owners)
    replicates = bootstrap.replicate_ratios(np.hstack([s_a, s_b]), np.hstack([t_a, t_b]))
    differences = estimate_differences(
        [(a, b) for _, _, a, b in owners],
        s_a,
        t_a,
        s_b,
        t_b,
        replicates[:, :p],
        replicates[:, p:],
        method=methods.CLUSTER_BOOTSTRAP,
        confidence_level=confidence_level,
    )
    for (target, axis, _, _), diff in zip(owners, differences):
        out[target].append(DemographicGap(axis=axis, **diff.model_dump()))
    return out
