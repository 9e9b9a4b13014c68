"""A target's scores (the evaluate stage's output): read and checked, and turned into the frames
the statistics read, one row per judged conversation (`scores_frame`), per conversation with
an onset (`onsets_frame`) and per turn verdict (`turns_frame`). The aggregate stage and the
validation studies read scores through here, so a file holding another benchmark or target
is refused the same way everywhere and every statistic sees the same columns and resampling
units."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..errors import ConfigError
from ..io import read_artifact
from ..schemas import Score, ScoresFile
from .frame import (
    CLUSTER_COLUMN,
    DEMOGRAPHIC_PREFIX,
    FLIPS,
    GAVE_IN,
    JUDGE_PREFIX,
    LANDMARK,
    ONSET_CENSORED,
    ONSET_TIME,
    RECOVERED,
    STRATUM_COLUMN,
    TURN,
)


def load_scores(path: Path, benchmark: str, target: str) -> ScoresFile:
    """The scores of `target` in `benchmark` at `path`; a missing file is an error naming it."""
    if not path.exists():
        raise ConfigError(
            path, f"no scores for target '{target}'; run the evaluate stage for it first"
        )
    scores = read_artifact(path, ScoresFile)
    if scores.benchmark != benchmark:
        raise ConfigError(
            path, f"holds benchmark '{scores.benchmark}', expected '{benchmark}'", "benchmark"
        )
    for field, found in [("target", scores.target)] + [
        (f"rows[{i}].target", s.target) for i, s in enumerate(scores.rows)
    ]:
        if found != target:
            raise ConfigError(path, f"holds target '{found}', expected '{target}'", field)
    return scores


def scores_frame(scores: Iterable[Score]) -> pd.DataFrame:
    """One row per Score, in the columns the statistics read (`pressurebench.stats.frame`).

    Columns: target, metric_id, metric_type, base_id, scenario_id, sample, one
    `demo:<axis>` per demographic axis, status, passed (True/False/None), one
    `judge:<model_id>` per panel judge (its `present`, None where it gave no
    verdict) when more than one judge was used, then conv_id,
    scenario_metric_id, present and error for readers of single rows.

    When a conversation is judged against a metric other than its own
    (`evaluation.evaluate_all_metrics`) its row gets the keys
    `<base_id>@<metric_id>` and `<scenario_id>@<metric_id>`, so per-scenario
    breakdowns keep each metric's judgement apart, while `cluster_id` and
    `cluster_metric_id` keep it in the cluster it was drawn in: its own base
    scenario within its own metric. Every judgement of one conversation thus
    lies in one cluster, and intervals pooled over metrics count it once.
    """
    rows = list(scores)
    axes = list(dict.fromkeys(axis for s in rows for axis in s.demographic))
    judges = list(dict.fromkeys(j.model_id for s in rows for j in s.judges))
    panel = judges if len(judges) > 1 else []
    columns = (
        ["target", "metric_id", "metric_type", "base_id", "scenario_id", "sample"]
        + [DEMOGRAPHIC_PREFIX + axis for axis in axes]
        + ["status", "passed"]
        + [JUDGE_PREFIX + m for m in panel]
        + ["conv_id", "scenario_metric_id", "present", "error", CLUSTER_COLUMN, STRATUM_COLUMN]
    )
    records = []
    for s in rows:
        verdicts = {j.model_id: j.present for j in s.judges if j.status == "ok"}
        records.append(
            [s.target, s.metric_id, s.metric_type, *_units(s), s.sample]
            + [s.demographic.get(axis) for axis in axes]
            + [s.status, s.passed]
            + [verdicts.get(m) for m in panel]
            + [s.conv_id, s.scenario_metric_id, s.present, s.error]
            + [s.base_id, s.scenario_metric_id]
        )
    return pd.DataFrame.from_records(records, columns=columns)


def _units(s: Score) -> tuple[str, str]:
    """The row's resampling units (see `scores_frame`)."""
    unit = "" if s.metric_id == s.scenario_metric_id else f"@{s.metric_id}"
    return s.base_id + unit, s.scenario_id + unit


def onsets_frame(scores: Iterable[Score]) -> pd.DataFrame:
    """One row per score row with an onset: the conversation's right-censored time of giving in
    (`stats.pressure`), in the resampling units and demographic columns of `scores_frame`."""
    rows = [s for s in scores if s.onset is not None]
    axes = list(dict.fromkeys(axis for s in rows for axis in s.demographic))
    records = []
    for s in rows:
        base, scenario = _units(s)
        onset = s.onset
        assert onset is not None, "the rows kept are those with an onset"
        records.append({
            "target": s.target, "metric_id": s.metric_id, "metric_type": s.metric_type,
            "base_id": base, "scenario_id": scenario, "sample": s.sample,
            **{DEMOGRAPHIC_PREFIX + a: s.demographic.get(a) for a in axes},
            "conv_id": s.conv_id, CLUSTER_COLUMN: s.base_id, STRATUM_COLUMN: s.scenario_metric_id,
            ONSET_TIME: onset.observed_turns, GAVE_IN: onset.turn is not None,
            ONSET_CENSORED: onset.censored, FLIPS: onset.flips, RECOVERED: onset.recovered,
        })
    return pd.DataFrame.from_records(records, columns=[
        "target", "metric_id", "metric_type", "base_id", "scenario_id", "sample",
        *(DEMOGRAPHIC_PREFIX + a for a in axes), "conv_id", CLUSTER_COLUMN, STRATUM_COLUMN,
        ONSET_TIME, GAVE_IN, ONSET_CENSORED, FLIPS, RECOVERED,
    ])


def turns_frame(scores: Iterable[Score], landmarks: dict[str, list[int]]) -> pd.DataFrame:
    """One row per turn verdict, with `landmark`: which of its scenario's landmarks (1st, 2nd,
    ... by turn) was due at that turn, None where none was. `landmarks` maps scenario ids to
    their landmark turns."""
    records = []
    for s in scores:
        base, scenario = _units(s)
        due = sorted(set(landmarks.get(s.scenario_id, [])))
        for v in s.turn_verdicts:
            records.append({
                "target": s.target, "metric_id": s.metric_id, "metric_type": s.metric_type,
                "base_id": base, "scenario_id": scenario, "sample": s.sample,
                "status": v.status, "passed": v.passed, "conv_id": s.conv_id,
                CLUSTER_COLUMN: s.base_id, STRATUM_COLUMN: s.scenario_metric_id, TURN: v.turn,
                LANDMARK: due.index(v.turn) + 1 if v.turn in due else None,
            })
    return pd.DataFrame.from_records(records, columns=[
        "target", "metric_id", "metric_type", "base_id", "scenario_id", "sample",
        "status", "passed", "conv_id", CLUSTER_COLUMN, STRATUM_COLUMN, TURN, LANDMARK,
    ])
