"""Two-sided p-values that agree with the interval shown beside them.

A test of "the quantity is 0" and the interval printed next to it must never disagree: the
p-value is below 1 − level exactly when the interval at that level leaves 0 out. So the
p-value is the interval inverted: the smallest α at which the (1 − α) interval no longer
includes 0. For a symmetric cluster-t interval, value ± t·se, that is the familiar
2 · P(T_df > |value| / se); for an interval without a symmetric test behind it (Newcombe's,
built from two score intervals) it is found by bisection over the level, each step computing
the interval exactly as shown, so the two stay consistent by construction.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.stats import t as student_t

# Bisection over α stops when the bracket is this narrow: far below the three decimals shown.
TOLERANCE = 1e-7
SMALLEST_ALPHA = 1e-12


def symmetric_t_p_value(value: float, variance: float, df: float) -> float:
    """p of value ± t_df · √variance: 2 · P(T_df > |value| / √variance)."""
    return float(2 * student_t.sf(abs(value) / np.sqrt(variance), max(df, 1.0)))


def inverted_p_value(interval_at: Callable[[float], tuple[float, float]]) -> float:
    """The smallest α whose (1 − α) interval, `interval_at(1 − α)`, leaves 0 out (1.0 when
    even the narrowest includes it). `interval_at` must widen as the level grows."""

    def includes_zero(alpha: float) -> bool:
        low, high = interval_at(1.0 - alpha)
        return low <= 0.0 <= high

    if includes_zero(1.0 - SMALLEST_ALPHA):
        return 1.0
    if not includes_zero(SMALLEST_ALPHA):
        return SMALLEST_ALPHA
    low, high = SMALLEST_ALPHA, 1.0 - SMALLEST_ALPHA  # includes 0 at `low`, not at `high`
    while high - low > TOLERANCE:
        middle = (low + high) / 2
        if includes_zero(middle):
            low = middle
        else:
            high = middle
    return float(high)
