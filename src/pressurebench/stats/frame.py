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
# Optional columns naming a row's resampling cluster and its stratum when they are not
# its base_id and metric_id: a conversation judged against another metric
# (`evaluation.evaluate_all_metrics`) stays in its own base scenario within its own metric.
CLUSTER_COLUMN = "cluster_id"
STRATUM_COLUMN = "cluster_metric_id"
DEMOGRAPHIC_PREFIX = "demo:"
JUDGE_PREFIX = "judge:"
# The columns of per-turn verdicts (`scores.onsets_frame`, `scores.turns_frame`), read by
# `capitulation` and `pressure`. Here, with the other column names, so that building a frame
# imports no statistics (SciPy): the evaluate stage builds one and computes none.
ONSET_TIME = "onset_time"  # observed turns: the onset turn, or the last turn seen holding
GAVE_IN = "gave_in"  # the time is an onset (True) or a censoring (False)
ONSET_CENSORED = "onset_censored"
FLIPS = "flips"
RECOVERED = "recovered"
TURN = "turn"
LANDMARK = "landmark"


def check_scores(scores: pd.DataFrame) -> None:
    """Refuse a frame that lacks a required column or nests a base scenario in two metrics.

    Base scenarios are the resampled clusters and metrics the strata they are
    resampled within, so a base scenario listed under two metrics has no
    stratum and every interval built on it would be wrong.
    """
    missing = [c for c in REQUIRED_COLUMNS if c not in scores.columns]
    if missing:
        raise ValueError(f"score rows lack column(s): {', '.join(missing)}")
    metrics_per_base = cluster_strata(scores).groupby(cluster_ids(scores), sort=False).nunique()
    crossed = metrics_per_base[metrics_per_base > 1]
    if len(crossed):
        raise ValueError(f"base scenario '{crossed.index[0]}' appears under more than one metric")


def cluster_ids(scores: pd.DataFrame) -> pd.Series:
    """Each row's resampling cluster: `cluster_id` where the frame has it, else `base_id`."""
    return scores[CLUSTER_COLUMN] if CLUSTER_COLUMN in scores.columns else scores["base_id"]


def cluster_strata(scores: pd.DataFrame) -> pd.Series:
    """Each row's cluster's stratum: `cluster_metric_id` where the frame has it, else `metric_id`."""
    return scores[STRATUM_COLUMN] if STRATUM_COLUMN in scores.columns else scores["metric_id"]


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
