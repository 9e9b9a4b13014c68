"""Closed-form intervals for when a bootstrap cannot vary.

A bootstrap over benchmarks in which every row passes (or every row fails)
returns the same rate in every replicate, and one over a single base scenario
has nothing to resample. A point interval would claim certainty, so these
cases get a score interval instead, and say so in `ci_method`.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm


def wilson_interval(
    successes: np.ndarray | float, trials: np.ndarray | float,
    confidence_level: float | np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval, vectorised; NaN where there are no trials.

    `successes` may be fractional: with an effective sample size the
    observed proportion times that size is what the formula needs.
    """
    x = np.asarray(successes, dtype=float)
    n = np.asarray(trials, dtype=float)
    z = norm.ppf(0.5 + confidence_level / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = x / n
        denom = 1 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
        # At p = 0 (p = 1) the bound is exactly 0 (1); floating point leaves ~1e-17 otherwise.
        low = np.where(x <= 0, 0.0, np.clip(centre - half, 0.0, 1.0))
        high = np.where(x >= n, 1.0, np.clip(centre + half, 0.0, 1.0))
        low = np.where(n > 0, low, np.nan)
        high = np.where(n > 0, high, np.nan)
    return low, high


def newcombe_interval(p_a, low_a, high_a, p_b, low_b, high_b):
    """Newcombe's hybrid score interval for p_a − p_b from the two rates' own intervals, of
    numbers (floats back) or arrays (arrays back).

    It ignores any positive correlation between the two rates, so for paired
    rates it errs on the wide side.
    """
    d = np.asarray(p_a, dtype=float) - np.asarray(p_b, dtype=float)
    low = np.maximum(d - np.sqrt((p_a - low_a) ** 2 + (high_b - p_b) ** 2), -1.0)
    high = np.minimum(d + np.sqrt((high_a - p_a) ** 2 + (p_b - low_b) ** 2), 1.0)
    if d.ndim == 0:
        return float(low), float(high)
    return low, high
