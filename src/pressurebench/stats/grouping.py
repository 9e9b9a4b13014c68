"""Row groupings and per-cluster tables: the step that turns score rows into bootstrap input.

Everything the bootstrap needs from a group of rows is, per base scenario,
how many valid rows it has and how many of them passed. Tables of those
(clusters × groups) are built with one `bincount`, so the cost is linear in
rows and independent of how many groups there are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, TypeVar

import numpy as np
import pandas as pd

from .frame import passes, valid_mask

T = TypeVar("T")


def factorize(scores: pd.DataFrame, columns: Sequence[str]) -> tuple[np.ndarray, list[tuple]]:
    """Group code per row (−1 where a key column is missing) and the sorted key tuples.

    With no columns every row is in the single group `()`.
    """
    if not columns:
        return np.zeros(len(scores), dtype=np.int64), [()]
    combined = np.zeros(len(scores), dtype=np.int64)
    present = np.ones(len(scores), dtype=bool)
    levels = []
    for column in columns:
        codes, uniques = pd.factorize(scores[column], sort=True)
        present &= codes >= 0
        combined = combined * len(uniques) + codes
        levels.append(uniques)
    out = np.full(len(scores), -1, dtype=np.int64)
    found, out[present] = np.unique(combined[present], return_inverse=True)
    parts = []
    for uniques in reversed(levels):
        parts.append(uniques[found % len(uniques)])
        found = found // len(uniques)
    return out, list(zip(*reversed(parts)))


def cluster_table(
    cluster: np.ndarray, group: np.ndarray, n_clusters: int, n_groups: int, values: np.ndarray
) -> np.ndarray:
    """Sum `values` into a (clusters, groups) table; rows with group −1 are left out."""
    keep = group >= 0
    flat = cluster[keep] * n_groups + group[keep]
    table = np.bincount(flat, weights=values[keep], minlength=n_clusters * n_groups)
    return table.reshape(n_clusters, n_groups)


def group_sums(group: np.ndarray, n_groups: int, values: np.ndarray) -> np.ndarray:
    """Sum `values` per group; rows with group −1 are left out."""
    keep = group >= 0
    return np.bincount(group[keep], weights=values[keep], minlength=n_groups)


class PassTables(NamedTuple):
    """Per base scenario and group: passes and valid rows; per group: rows without a verdict."""

    keys: list[list[tuple]]  # the group keys of each grouping, in column order
    successes: np.ndarray  # (clusters, groups)
    trials: np.ndarray  # (clusters, groups)
    errors: np.ndarray  # (groups,)


def grouping_codes(
    rows: pd.DataFrame, groupings: Sequence[Sequence[str]]
) -> tuple[list[np.ndarray], list[list[tuple]], int]:
    """Each row's group in every grouping, numbered across the groupings side by side.

    Returns per grouping the rows' codes (-1 for a row in none of its groups)
    and its group keys, and the number of groups in all.
    """
    codes, keys, offset = [], [], 0
    for columns in groupings:
        group, uniques = factorize(rows, columns)
        codes.append(np.where(group >= 0, group + offset, -1))
        keys.append(uniques)
        offset += len(uniques)
    return codes, keys, offset


def by_grouping(keys: Sequence[Sequence[tuple]], values: Sequence[T]) -> list[dict[tuple, T]]:
    """Per grouping, its groups' values by key, from values in the order `grouping_codes` numbers."""
    out, offset = [], 0
    for group_keys in keys:
        out.append(dict(zip(group_keys, values[offset : offset + len(group_keys)])))
        offset += len(group_keys)
    return out


def pass_tables(
    scores: pd.DataFrame, cluster: np.ndarray, n_clusters: int, groupings: Sequence[Sequence[str]]
) -> PassTables:
    """Tables for several groupings of the rows side by side, `cluster` giving each row's cluster.

    Each grouping is a list of columns whose distinct value tuples are its
    groups (rows missing a value belong to none); an empty grouping is all rows.
    """
    valid = valid_mask(scores).astype(float)
    success = passes(scores)
    codes, keys, offset = grouping_codes(scores, groupings)
    copies = len(groupings)
    group = np.concatenate(codes) if codes else np.empty(0, dtype=np.int64)
    cluster, valid, success = (
        np.tile(cluster, copies),
        np.tile(valid, copies),
        np.tile(success, copies),
    )
    return PassTables(
        keys=keys,
        successes=cluster_table(cluster, group, n_clusters, offset, success),
        trials=cluster_table(cluster, group, n_clusters, offset, valid),
        errors=group_sums(group, offset, 1.0 - valid),
    )
