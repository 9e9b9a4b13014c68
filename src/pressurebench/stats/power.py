"""The smallest effect a design detects: what "no difference found" can be read against.

A difference whose interval holds 0 is not evidence of no difference unless the design could
have seen one. Beside every difference and gap the results give the minimum detectable effect
(MDE) at 80% power: the true difference a two-sided test at level 1 − confidence would find
significant 80% of the time, given the standard error this design has (Miller 2024, "Adding
Error Bars to Evals", §4; Bloom 1995). With the design's degrees of freedom,

    MDE = (t_{1 − α/2, df} + t_{power, df}) · se,

the same t quantiles and the same variance as the interval beside it. `pressurebench size`
sizes a study from the same formula (`commands.sample_size`).
"""

from __future__ import annotations

import numpy as np

from .cluster_t import t_quantile

POWER = 0.8


def minimum_detectable_effect(
    standard_error: np.ndarray | float,
    df: np.ndarray | float,
    confidence_level: float,
    power: float = POWER,
) -> np.ndarray:
    """(t_{1 − α/2, df} + t_{power, df}) · standard error, per group; NaN where df < 1."""
    se = np.asarray(standard_error, dtype=float)
    df = np.broadcast_to(np.asarray(df, dtype=float), se.shape)
    # t_quantile is two-sided: the level 2·power − 1 gives the one-sided `power` quantile.
    return (t_quantile(df, confidence_level) + t_quantile(df, 2 * power - 1)) * se
