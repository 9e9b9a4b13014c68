"""p-values that agree with the intervals shown beside them, and Holm's correction of a family.

A p-value printed beside an interval must say what the interval says: "p < 0.05" exactly when
the 95% interval excludes 0. A symmetric t test does that for a symmetric t interval, but not
for a MOVER interval (a difference recovered from the two rates' Wilson intervals, skewed near
0 or 1), which has no symmetric test behind it: the test would star a difference whose interval
holds 0, or the reverse. So every p-value here inverts the interval itself: it is the smallest
α at which the interval at level 1 − α excludes the null value, found by bisection over the
level for any interval a function can draw at any level (`inverted_p_values`). For a symmetric
t interval that is the two-sided t test's p-value.

A family of such p-values is corrected with Holm's step-down (`stats.multiplicity`): a
difference is "significant after correction" only where its adjusted p-value is below 1 − the
confidence level, which implies that its own interval excludes 0, so a star and an interval
never disagree.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.stats import t as student_t

# The bisection's bracket on the confidence level and its number of halvings: p-values are
# found to about 1e-12, far below any a report prints.
SMALLEST_LEVEL = 1e-9
LARGEST_LEVEL = 1 - 1e-12
HALVINGS = 48

Bounds = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


def inverted_p_values(
    bounds_at: Bounds, groups: int, shown_level: float, null: float | np.ndarray = 0.0
) -> np.ndarray:
    """Per group, the two-sided p-value of "the true value is `null`" that the interval
    `bounds_at` draws implies: the smallest α at which its 1 − α interval excludes `null`.

    `bounds_at(levels)` returns the (low, high) bounds of every group at a confidence level per
    group (an array of `groups` levels); the interval must widen as the level grows, as every
    interval here does. NaN where the interval at `shown_level` is not drawn. A p-value agrees
    with the interval shown: below 1 − `shown_level` exactly when that interval excludes
    `null` (its bounds included).
    """
    null = np.broadcast_to(np.asarray(null, dtype=float), (groups,))

    def inside(levels: np.ndarray) -> np.ndarray:
        low, high = bounds_at(levels)
        return (np.asarray(low) <= null) & (null <= np.asarray(high))

    shown_low, shown_high = bounds_at(np.full(groups, shown_level))
    drawn = np.isfinite(shown_low) & np.isfinite(shown_high)
    below = np.full(groups, SMALLEST_LEVEL)  # excludes null (or the p-value is 1)
    above = np.full(groups, LARGEST_LEVEL)  # holds null (or the p-value is below 1e-12)
    for _ in range(HALVINGS):
        middle = (below + above) / 2
        holds = inside(middle)
        above = np.where(holds, middle, above)
        below = np.where(holds, below, middle)
    p = 1 - (below + above) / 2
    p = np.where(inside(np.full(groups, SMALLEST_LEVEL)), 1.0, p)
    p = np.where(inside(np.full(groups, LARGEST_LEVEL)), p, 1 - LARGEST_LEVEL)
    alpha = 1 - shown_level
    holds_shown = (shown_low <= null) & (null <= shown_high)
    p = np.where(holds_shown, np.maximum(p, alpha), np.minimum(p, np.nextafter(alpha, 0)))
    return np.where(drawn, np.clip(p, 0.0, 1.0), np.nan)


def inverted_p_value(interval_at: Callable[[float], tuple[float, float]], shown_level: float
                     ) -> float:
    """`inverted_p_values` of one interval, drawn by `interval_at(level)` -> (low, high)."""

    def bounds(levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        low, high = interval_at(float(levels[0]))
        return np.array([low]), np.array([high])

    return float(inverted_p_values(bounds, 1, shown_level)[0])


def symmetric_t_p_value(value: float, variance: float, df: float) -> float:
    """The p-value the interval value ± t_df · √variance inverts to, in closed form:
    2 · P(T_df > |value| / √variance)."""
    return float(2 * student_t.sf(abs(value) / np.sqrt(variance), max(df, 1.0)))
