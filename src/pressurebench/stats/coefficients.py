"""Chance-corrected agreement coefficients, written as functions of summed item statistics.

Each coefficient is split in two: per-item statistics that add up, and a
function of their sums. The point estimate is that function of the sums over
all items; a bootstrap replicate is the same function of the replicate's
weighted sums over base scenarios. So the formula checked against the
reference implementations is the one every replicate uses, and a replicate
costs one matrix product instead of a loop over items.

Tables are item × category counts: `counts[i, c]` is how many ratings item i
received in category c. Undefined values (chance agreement of 1, no
pairable ratings) are NaN.
"""

from __future__ import annotations

import math

import numpy as np


def _divide(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.abs(den) > 1e-12, num / den, np.nan)


def fleiss_item_stats(counts: np.ndarray) -> np.ndarray:
    """Per item: [1, P_i, counts...], P_i being the share of agreeing rating pairs.

    Fleiss' kappa assumes every item has the same number of ratings; a table
    that does not is refused rather than silently reweighted.
    """
    counts = np.asarray(counts, dtype=float)
    m = counts.sum(axis=1)
    if len(m) and (m != m[0]).any():
        raise ValueError("Fleiss' kappa needs the same number of ratings for every item")
    if len(m) and m[0] < 2:
        raise ValueError("Fleiss' kappa needs at least two ratings per item")
    agreeing = _divide((counts**2).sum(axis=1) - m, m * (m - 1))
    return np.column_stack([np.ones(len(counts)), agreeing, counts])


def fleiss_from_sums(sums: np.ndarray) -> np.ndarray:
    """Fleiss' kappa from summed `fleiss_item_stats` (any leading shape)."""
    sums = np.asarray(sums, dtype=float)
    observed = _divide(sums[..., 1], sums[..., 0])
    shares = _divide(sums[..., 2:], sums[..., 2:].sum(axis=-1, keepdims=True))
    expected = (shares**2).sum(axis=-1)
    return _divide(observed - expected, 1.0 - expected)


def krippendorff_item_stats(counts: np.ndarray) -> np.ndarray:
    """Per item: [disagreeing pairs / (m_i − 1), counts...]; 0 for items rated fewer than twice.

    Krippendorff's alpha needs no equal numbers of ratings: an item's
    coincidences are weighted by 1 / (m_i − 1), and an item rated once pairs
    with nothing and drops out.
    """
    counts = np.asarray(counts, dtype=float)
    m = counts.sum(axis=1)
    pairable = m >= 2
    disagreeing = np.where(pairable, _divide(m**2 - (counts**2).sum(axis=1), m - 1), 0.0)
    return np.column_stack([disagreeing, np.where(pairable[:, None], counts, 0.0)])


def krippendorff_from_sums(sums: np.ndarray) -> np.ndarray:
    """Krippendorff's alpha (nominal) from summed `krippendorff_item_stats`.

    alpha = 1 − (n − 1) · Σ_u Σ_{c≠k} n_uc n_uk / (m_u − 1) / (n² − Σ_c n_c²),
    with n_c the pairable ratings in category c and n their total.
    """
    sums = np.asarray(sums, dtype=float)
    totals = sums[..., 1:]
    n = totals.sum(axis=-1)
    expected = n**2 - (totals**2).sum(axis=-1)
    return 1.0 - _divide((n - 1) * sums[..., 0], expected)


def cohen_item_stats(pairs: np.ndarray, categories: int) -> np.ndarray:
    """Per item: a one-hot row of the (rater 1, rater 2) cell, flattened row-major."""
    pairs = np.asarray(pairs, dtype=np.int64)
    cells = pairs[:, 0] * categories + pairs[:, 1]
    out = np.zeros((len(pairs), categories * categories))
    out[np.arange(len(pairs)), cells] = 1.0
    return out


def cohen_from_sums(sums: np.ndarray) -> np.ndarray:
    """Cohen's kappa from a flattened square contingency table (any leading shape)."""
    sums = np.asarray(sums, dtype=float)
    c = math.isqrt(sums.shape[-1])
    table = sums.reshape(*sums.shape[:-1], c, c)
    n = table.sum(axis=(-2, -1))
    observed = _divide(np.trace(table, axis1=-2, axis2=-1), n)
    expected = _divide((table.sum(axis=-1) * table.sum(axis=-2)).sum(axis=-1), n**2)
    return _divide(observed - expected, 1.0 - expected)


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' kappa of an item × category count table with equal ratings per item."""
    return float(fleiss_from_sums(fleiss_item_stats(counts).sum(axis=0)))


def krippendorff_alpha_nominal(counts: np.ndarray) -> float:
    """Krippendorff's alpha for nominal data from an item × category count table."""
    return float(krippendorff_from_sums(krippendorff_item_stats(counts).sum(axis=0)))


def cohens_kappa(table: np.ndarray) -> float:
    """Cohen's kappa of a square contingency table (rows: rater 1, columns: rater 2)."""
    table = np.asarray(table, dtype=float)
    if table.ndim != 2 or table.shape[0] != table.shape[1]:
        raise ValueError("Cohen's kappa needs a square contingency table")
    return float(cohen_from_sums(table.ravel()))


def scott_from_sums(sums: np.ndarray) -> np.ndarray:
    """Scott's pi from a flattened square contingency table (any leading shape).

    Chance agreement comes from the two raters' pooled marginals, so a rater
    that answers the opposite of the other on every item scores −1 whatever the
    share of each category, where Cohen's kappa drifts towards 0 as the shares part.
    """
    sums = np.asarray(sums, dtype=float)
    c = math.isqrt(sums.shape[-1])
    table = sums.reshape(*sums.shape[:-1], c, c)
    n = table.sum(axis=(-2, -1))
    observed = _divide(np.trace(table, axis1=-2, axis2=-1), n)
    pooled = _divide(table.sum(axis=-1) + table.sum(axis=-2), 2 * n[..., None])
    expected = (pooled**2).sum(axis=-1)
    return _divide(observed - expected, 1.0 - expected)
