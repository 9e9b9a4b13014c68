"""Labels joined with what the raters were kept from: whose conversation, and what the judges said.

`label_frames` is the contract the analysis of judge accuracy reads.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..params import Params
from ..schemas import Score
from .current import JudgedData
from .fidelity import asked_kinds, asks_fidelity, checks_found
from .judged import item_id
from .records import HumanLabel
from .sampling import panel_disagrees
from .store import SetAside, load_checked

LABEL_COLUMNS = [
    "item_id", "conv_id", "metric_id", "target", "base_id", "scenario_metric_id", "metric_type",
    "rater", "label", "judge_present", "panel_disagrees", "stratum_weight",
]
JUDGE_COLUMNS = ["item_id", "judge", "present"]
FIDELITY_COLUMNS = [
    "kind", "conv_id", "metric_id", "target", "base_id", "rater", "label", "checks_found",
    "stratum_weight",
]
PANEL = "panel"


@dataclass(frozen=True)
class LabelFrames:
    labels: pd.DataFrame
    judges: pd.DataFrame
    set_aside: list[SetAside] = field(default_factory=list)  # stored labels the data no longer matches
    fidelity: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FIDELITY_COLUMNS))


def join_labels(labels: list[HumanLabel], data: JudgedData) -> LabelFrames:
    """Join validated labels (`store.load_labels`) with the current score rows.

    `labels`, one row per label (a rater's answer on one item):

    - `item_id` (`<conv_id>:<metric_id>`), `conv_id`, `metric_id` (the judged metric,
      `Score.metric_id`), `target`, `base_id`, `scenario_metric_id` (the metric the
      conversation's scenario was written for), `metric_type` ("positive"/"negative"):
      the score row's own fields;
    - `rater` (str) and `label` ("present", "absent" or "unsure");
    - `judge_present` (bool, or None for a row without a verdict): the row's verdict,
      `Score.present` (a panel's majority);
    - `panel_disagrees` (bool): judges of a panel gave different verdicts;
    - `stratum_weight` (float, NaN without a verdict): ok score rows of the item's
      (target, metric, panel_disagrees) stratum per item labelled in it. The draw
      over-samples disagreements, so an estimate for a whole cell weighs each
      labelled item by it (within a stratum items are drawn uniformly).

    `judges`, one row per labelled item and judge: `item_id`, `judge` (a panel
    judge's model id from `Score.judges`, or "panel" for the row's own verdict) and
    `present` (bool, or None when that judge gave no verdict).
    """
    strata: Counter = Counter(
        (s.target, s.metric_id, panel_disagrees(s))
        for s in data.scores.values() if s.status == "ok" and s.present is not None
    )
    rows: list[dict[str, Any]] = []
    items: dict[str, Score] = {}
    for label in labels:
        conv_id = data.conv_ids[label.conv_key]
        score = data.scores[(conv_id, label.metric_id)]
        iid = item_id(conv_id, label.metric_id)
        items[iid] = score
        rows.append({
            "item_id": iid, "conv_id": conv_id, "metric_id": score.metric_id,
            "target": score.target, "base_id": score.base_id,
            "scenario_metric_id": score.scenario_metric_id, "metric_type": score.metric_type,
            "rater": label.rater, "label": label.label, "judge_present": score.present,
            "panel_disagrees": panel_disagrees(score),
        })
    labelled: Counter = Counter(
        (s.target, s.metric_id, panel_disagrees(s)) for s in items.values()
        if s.status == "ok" and s.present is not None
    )
    for row in rows:
        score = items[row["item_id"]]
        stratum = (score.target, score.metric_id, row["panel_disagrees"])
        row["stratum_weight"] = (
            strata[stratum] / labelled[stratum] if labelled[stratum] else float("nan")
        )
    judges = [
        {"item_id": iid, "judge": j.model_id, "present": j.present if j.status == "ok" else None}
        for iid, score in items.items() for j in score.judges
    ] + [{"item_id": iid, "judge": PANEL, "present": score.present} for iid, score in items.items()]
    return LabelFrames(
        labels=pd.DataFrame(rows, columns=LABEL_COLUMNS),
        judges=pd.DataFrame(judges, columns=JUDGE_COLUMNS),
        fidelity=fidelity_frame(labels, data),
    )


def fidelity_frame(labels: list[HumanLabel], data: JudgedData) -> pd.DataFrame:
    """One row per fidelity answer (a rater's answer on one kind of break in one conversation):

    - `kind` (a `labels.models.FIDELITY_KINDS`), `conv_id`, `metric_id` (the conversation's own
      metric, its resampling stratum), `target`, `base_id`;
    - `rater` and `label` ("present": the break happened, or the target showed test awareness);
    - `checks_found` (bool, or None where the checks left the kind undecided): what the
      fidelity checks (rules and judge) decided (`labels.fidelity.checks_found`);
    - `stratum_weight`: ok score rows asking fidelity questions in the item's (target, metric,
      panel_disagrees) stratum per conversation answered on this kind in it, so an estimate
      describes every conversation the draw could have asked about.

    Answers to questions the item no longer asks (the checks were turned off since) are left out.
    """
    strata: Counter = Counter(
        (s.target, s.metric_id, panel_disagrees(s)) for s in data.scores.values()
        if s.status == "ok" and s.present is not None and asks_fidelity(s)
        and s.conv_id in data.fidelity
    )
    rows: list[dict[str, Any]] = []
    for label in labels:
        conv_id = data.conv_ids[label.conv_key]
        score = data.scores[(conv_id, label.metric_id)]
        asked = asked_kinds(data, conv_id, label.metric_id)
        for kind, answer in label.fidelity.items():
            if kind in asked:
                rows.append({
                    "kind": kind, "conv_id": conv_id, "metric_id": score.scenario_metric_id,
                    "target": score.target, "base_id": score.base_id, "rater": label.rater,
                    "label": answer, "checks_found": checks_found(data.fidelity[conv_id], kind),
                    "stratum": (score.target, score.metric_id, panel_disagrees(score)),
                })
    conversations = {(r["kind"], r["conv_id"]): r["stratum"] for r in rows}
    answered = Counter((kind, stratum) for (kind, _), stratum in conversations.items())
    for row in rows:
        row["stratum_weight"] = strata[row["stratum"]] / answered[(row["kind"], row["stratum"])]
        del row["stratum"]
    return pd.DataFrame(rows, columns=FIDELITY_COLUMNS)


def label_frames(params: Params, benchmark: str) -> LabelFrames:
    """The benchmark's stored labels joined with its current scores (empty frames, with their
    columns, when there are no labels), and the stored labels set aside as no longer matching."""
    labels, data, set_aside = load_checked(params, benchmark)
    if data is None:
        return LabelFrames(pd.DataFrame(columns=LABEL_COLUMNS), pd.DataFrame(columns=JUDGE_COLUMNS))
    joined = join_labels(labels, data)
    return LabelFrames(joined.labels, joined.judges, set_aside, joined.fidelity)
