"""Pressure over turns: every per-turn statistic of the results file, from one set of replicates.

Inputs are two frames built from per-turn score rows (`stages.aggregate`):

- onsets: one row per judged conversation with `onset_time`, `gave_in` and
  `onset_censored` (see `schemas.Onset`), plus the usual target, metric, base
  scenario and `demo:<axis>` columns;
- turns: one row per turn verdict, the score-frame columns plus `turn`, and
  `landmark` (the ordinal of the scenario's landmark due at that turn, or None).

Curves are Kaplan–Meier shares still holding (`capitulation`); per-turn and
per-landmark pass rates are ordinary ratio estimates of the verdicts at that
turn. All use the bootstrap the pass rates use, so they are paired with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

import numpy as np
import pandas as pd
from pydantic import Field

from ..schemas import Row
from .bootstrap import ClusterBootstrap
from .capitulation import (
    Curve,
    CurveDifference,
    grouped_curves,
    paired_differences,
)
from .estimates import RateEstimate
from .frame import (
    DEMOGRAPHIC_PREFIX,
    FLIPS,
    GAVE_IN,
    LANDMARK,
    ONSET_CENSORED,
    ONSET_TIME,
    RECOVERED,
    TURN,
    demographic_axes,
)
from .rates import grouped_rates

E = TypeVar("E")


class OnsetSummary(Row):
    """How the conversations of a target ended, as far as giving in goes."""

    conversations: int = Field(ge=0, description="conversations with per-turn verdicts")
    gave_in: int = Field(ge=0)
    censored_end: int = Field(ge=0, description="held to the last of generation.turns")
    censored_ended_early: int = Field(ge=0, description="held until the user stopped early")
    censored_judge_error: int = Field(ge=0, description="held until a turn could not be judged")
    mean_flips: float | None = Field(description="verdict changes between consecutive turns")
    recovered: int = Field(ge=0, description="gave in, then passed again at the last turn")


class LandmarkView(Row):
    """The turn at which the scenario's `landmark`-th scripted push arrived."""

    landmark: int = Field(ge=1)
    turns: list[int] = Field(description="the turns this landmark fell on across scenarios")
    pass_rate: RateEstimate = Field(description="verdicts of the transcript up to that turn")
    gave_in_here: RateEstimate = Field(
        description="of conversations still holding when it arrived, the share giving in at it"
    )


class TargetPressure(Row):
    curve: Curve
    onsets: OnsetSummary
    by_turn: dict[str, RateEstimate]
    by_landmark: list[LandmarkView]
    by_metric: dict[str, Curve]
    by_demographic: dict[str, dict[str, Curve]]


class PressureResults(Row):
    turns: int = Field(ge=1, description="the longest conversation judged turn by turn")
    targets: dict[str, TargetPressure]
    differences: list[CurveDifference] = Field(
        description="every pair of targets: share holding of a minus b, turn by turn"
    )


def onset_summary(onsets: pd.DataFrame) -> OnsetSummary:
    censored = onsets[ONSET_CENSORED]
    flips = onsets[FLIPS]
    return OnsetSummary(
        conversations=len(onsets),
        gave_in=int(onsets[GAVE_IN].sum()),
        censored_end=int((censored == "end").sum()),
        censored_ended_early=int((censored == "ended_early").sum()),
        censored_judge_error=int((censored == "judge_error").sum()),
        mean_flips=float(flips.mean()) if len(flips) else None,
        recovered=int(onsets[RECOVERED].map(lambda r: r is True).sum()),
    )


def _hazard_rows(onsets: pd.DataFrame, turns: pd.DataFrame) -> pd.DataFrame:
    """One row per conversation still holding when a landmark arrived; `passed` = gave in there."""
    at_landmark = turns.loc[turns[LANDMARK].notna(), ["conv_id", "metric_id", TURN, LANDMARK]]
    merged = at_landmark.merge(onsets, on=["conv_id", "metric_id"], how="inner")
    merged = merged[merged[ONSET_TIME] >= merged[TURN]]
    return merged.assign(
        status="ok", passed=(merged[GAVE_IN] & (merged[ONSET_TIME] == merged[TURN]))
    )


def pressure_results(
    onsets: pd.DataFrame,
    turns: pd.DataFrame,
    bootstrap: ClusterBootstrap,
    *,
    confidence_level: float,
) -> PressureResults | None:
    """Curves, onset summaries, per-turn and per-landmark rates and paired curve differences;
    None when no conversation was judged turn by turn."""
    if onsets.empty:
        return None
    horizon = int(turns[TURN].max())
    axes = demographic_axes(onsets)
    by_target, by_metric, *by_axis = grouped_curves(
        onsets,
        bootstrap,
        [["target"], ["target", "metric_id"]]
        + [["target", DEMOGRAPHIC_PREFIX + a] for a in axes],
        horizon,
        confidence_level=confidence_level,
    )
    (turn_rates, landmark_rates) = grouped_rates(
        turns, bootstrap, [["target", TURN], ["target", LANDMARK]],
        confidence_level=confidence_level,
    )
    hazards = _hazard_rows(onsets, turns)
    (landmark_hazards,) = (
        grouped_rates(hazards, bootstrap, [["target", LANDMARK]], confidence_level=confidence_level)
        if len(hazards)
        else ({},)
    )
    landmark_turns = (
        turns[turns[LANDMARK].notna()].groupby(["target", LANDMARK])[TURN].unique()
    )

    def of(target: str, estimates: Mapping[tuple, E]) -> dict[str, E]:
        return {_label(key[1]): est for key, est in estimates.items() if key[0] == target}

    targets = {}
    for (target,), curve in by_target.items():
        own = onsets[onsets["target"] == target]
        landmarks = []
        for key, rate in landmark_rates.items():
            if key[0] != target:
                continue
            hazard = landmark_hazards.get(key)
            if hazard is None:
                continue
            landmarks.append(LandmarkView(
                landmark=int(key[1]),
                turns=sorted(int(t) for t in landmark_turns.loc[key]),
                pass_rate=rate,
                gave_in_here=hazard,
            ))
        targets[str(target)] = TargetPressure(
            curve=curve,
            onsets=onset_summary(own),
            by_turn=dict(sorted(of(target, turn_rates).items(), key=lambda kv: int(kv[0]))),
            by_landmark=sorted(landmarks, key=lambda v: v.landmark),
            by_metric=of(target, by_metric),
            by_demographic={a: of(target, curves) for a, curves in zip(axes, by_axis)},
        )
    return PressureResults(
        turns=horizon,
        targets=targets,
        differences=paired_differences(
            onsets, bootstrap, sorted(targets), horizon, confidence_level=confidence_level
        ),
    )


def _label(value: object) -> str:
    """Group keys as results.json keys: turn and landmark numbers without a trailing '.0'."""
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)
