"""Over-sampled panel disagreements are weighed back: the judge's measured accuracy describes all
its judged rows, not the sample that over-drew the rows it is most often wrong on."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest
from label_data import write_judged
from statsmodels.stats import inter_rater

from pressurebench.io import read_artifact
from pressurebench.labels.export import build_export
from pressurebench.labels.joined import label_frames
from pressurebench.params import load_params
from pressurebench.paths import Layout
from pressurebench.reports import judge
from pressurebench.schemas import ScoresFile
from pressurebench.stats.judge_validity import judge_validity
from pressurebench.stats.score_frames import scores_frame

PER_CELL, SPLITS, LABELLED = 20, 4, 8


@pytest.fixture
def labelled(project):
    """20 judged rows per target × metric, the panel split on 4 of them; 8 labelled per cell,
    half from the splits. Humans find the panel wrong exactly where its judges split."""
    layout = write_judged(project.root, per_cell=PER_CELL, n_disagree=SPLITS, errors=0,
                          hostile=False)
    project.write_params(labels={"per_cell": LABELLED, "disagreement_share": 0.5})
    params = load_params(project.params_path)
    rows = [s for t in ("target-a", "target-b")
            for s in read_artifact(layout.scores_file(t), ScoresFile).rows]
    present = {s.conv_id: s.present for s in rows}
    items = build_export(params, "tiny").items
    labels = [
        {"item_key": i.item_key, "rater": "Ada", "transcript_sha256": i.transcript_sha256,
         "batch": i.batch,
         "label": "present" if present[i.conv_id] != i.panel_disagrees else "absent"}
        for i in items
    ]
    path = project.root / "labels" / "tiny" / "ada.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in labels))
    return params, scores_frame(rows), items


def test_the_export_over_draws_the_splits(labelled):
    _, _, items = labelled
    assert len(items) == 4 * LABELLED
    assert sum(i.panel_disagrees for i in items) == 4 * SPLITS  # every split: 4 of 8, not 4 of 20


def test_agreement_and_error_rates_describe_every_judged_row(labelled):
    params, scores, _ = labelled
    frames = label_frames(params, "tiny")
    weights = frames.labels.groupby("panel_disagrees")["stratum_weight"].unique()
    assert list(weights[True]) == [SPLITS / SPLITS]  # 4 split rows, all 4 labelled
    assert list(weights[False]) == [(PER_CELL - SPLITS) / (LABELLED - SPLITS)]  # 16 rows, 4 drawn

    validity = judge_validity(scores, frames.labels, frames.judges, resamples=200, seed=1)
    assert validity.design_weighted
    panel = validity.judges["panel"]
    # The sample is half splits (accuracy 0.5); the judged rows are a fifth splits.
    assert panel.n_items == 4 * LABELLED
    assert panel.accuracy.value == pytest.approx((PER_CELL - SPLITS) / PER_CELL)
    # Sensitivity and specificity by hand: each item weighs its stratum's rows per item drawn,
    # over the mean of its cell; the unweighted shares would make the panel look worse.
    items = frames.labels.assign(
        human=frames.labels["label"] == "present",
        weight=frames.labels["stratum_weight"]
        / frames.labels.groupby(["target", "metric_id"])["stratum_weight"].transform("mean"),
    )
    for metric, errors in validity.panel_error_rates.items():
        mine = items[items["metric_id"] == metric]
        for value, human, n in ((errors.sensitivity, True, errors.n_positive),
                                (errors.specificity, False, errors.n_negative)):
            kind = mine[mine["human"] == human]
            right = kind["judge_present"] == human
            assert value == pytest.approx((kind["weight"] * right).sum() / kind["weight"].sum())
            assert value > right.mean()
            assert n == len(kind)  # items, not weights
    # Cohen's kappa of the weighted judge × human table, as statsmodels computes it.
    table = pd.crosstab(items["judge_present"].astype(bool), items["human"],
                        values=items["weight"], aggfunc="sum").fillna(0.0).to_numpy()
    assert panel.cohen_kappa.value == pytest.approx(inter_rater.cohens_kappa(table).kappa)
    note = judge.judge_note(SimpleNamespace(benchmark="tiny", judge_validity=validity, labels_set_aside=[]))
    assert judge.WEIGHTED in note


def test_without_over_sampling_every_weight_is_one(project):
    write_judged(project.root, per_cell=PER_CELL, n_disagree=0, errors=0, hostile=False)
    project.write_params(labels={"per_cell": LABELLED})
    params = load_params(project.params_path)
    items = build_export(params, "tiny").items
    path = project.root / "labels" / "tiny" / "ada.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(
        json.dumps({"item_key": i.item_key, "rater": "Ada", "label": "present",
                    "transcript_sha256": i.transcript_sha256, "batch": i.batch}) + "\n"
        for i in items))
    frames = label_frames(params, "tiny")
    layout = Layout(project.root / "data", "tiny")
    rows = [s for t in ("target-a", "target-b")
            for s in read_artifact(layout.scores_file(t), ScoresFile).rows]
    validity = judge_validity(scores_frame(rows), frames.labels, frames.judges, resamples=50)
    assert not validity.design_weighted
    assert judge.WEIGHTED not in judge.judge_note(
        SimpleNamespace(benchmark="tiny", judge_validity=validity, labels_set_aside=[]))
