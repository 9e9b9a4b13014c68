"""The score-row DataFrame every statistic reads: its columns and what counts as a verdict.

One row is one judged conversation. A row enters a pass-rate denominator only
when its status is "ok" and its verdict is known; every other row is counted
as an error next to the rate it would have entered, never silently dropped.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

REQUIRED_COLUMNS = (
    "target",
    "metric_id",
    "metric_type",
    "base_id",
    "scenario_id",
    "sample",
    "status",
    "passed",
)
DEMOGRAPHIC_PREFIX = "demo:"
JUDGE_PREFIX = "judge:"


def check_scores(scores: pd.DataFrame) -> None:
    """Refuse a frame that lacks a required column or nests a base scenario in two metrics.

    Base scenarios are the resampled clusters and metrics the strata they are
    resampled within, so a base scenario listed under two metrics has no
    stratum and every interval built on it would be wrong.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in scores.columns]
    if missing:
        raise ValueError(f"score rows lack column(s): {', '.join(missing)}")
    metrics_per_base = scores.groupby("base_id", sort=False)["metric_id"].nunique()
    crossed = metrics_per_base[metrics_per_base > 1]
    if len(crossed):
        raise ValueError(f"base scenario '{crossed.index[0]}' appears under more than one metric")


def valid_mask(scores: pd.DataFrame) -> np.ndarray:
    """Rows with a usable verdict: status "ok" and `passed` neither None nor NaN."""
    return (scores["status"].to_numpy() == "ok") & scores["passed"].notna().to_numpy()


def passes(scores: pd.DataFrame) -> np.ndarray:
    """1.0 where a valid row passed, 0.0 elsewhere (including rows without a verdict)."""
    passed = scores["passed"].astype("boolean").to_numpy(dtype=bool, na_value=False)
    return (passed & valid_mask(scores)).astype(float)


def demographic_axes(scores: pd.DataFrame) -> list[str]:
    """The demographic axis names, from the `demo:<axis>` columns, in column order."""
    return [
        c[len(DEMOGRAPHIC_PREFIX) :] for c in scores.columns if c.startswith(DEMOGRAPHIC_PREFIX)
    ]


def judge_ids(scores: pd.DataFrame) -> list[str]:
    """The evaluator model ids of a panel, from the `judge:<model_id>` columns, in column order."""
    return [c[len(JUDGE_PREFIX) :] for c in scores.columns if c.startswith(JUDGE_PREFIX)]
