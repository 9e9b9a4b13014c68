"""Fidelity questions on the rater pages: which items ask them, what the rater sees, and labels
files with the answers (JSONL and CSV) that import, join and are checked; files without them
still import."""

from __future__ import annotations

import csv
import json
import re

import pytest
from label_data import FIDELITY_KINDS, LANDMARKS, LATENT_GOAL, PERSONA, TARGETS, leaks

from pressurebench.labels.current import load_judged
from pressurebench.labels.export import build_export, write_export
from pressurebench.labels.fidelity import asked_kinds
from pressurebench.labels.joined import FIDELITY_COLUMNS, label_frames
from pressurebench.labels.records import FIDELITY_FIELDS, LABEL_FIELDS
from pressurebench.labels.store import import_labels, read_labels_file
from pressurebench.params import load_params

DATA = re.compile(r'<script type="application/json" id="pb-data">(.*?)</script>', re.DOTALL)


def answers(item, flip: bool = False) -> dict:
    """A rater's fidelity answers: a leak exactly where the checks found one (the other way
    round with `flip`), everything else absent."""
    leaked = leaks(int(item.conv_id.split("_s")[1][:3]) - 1) != flip
    return {k: "present" if k == "leak" and leaked else "absent" for k in FIDELITY_KINDS}


def rows_of(export, rater: str, fidelity=answers) -> list[dict]:
    return [{"item_key": i.item_key, "rater": rater, "label": "absent",
             "transcript_sha256": i.transcript_sha256, "batch": i.batch,
             **({"fidelity": fidelity(i)} if fidelity else {})} for i in export.items]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_csv(path, rows, columns=LABEL_FIELDS + FIDELITY_FIELDS):
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for r in rows:
            cells = {k: v for k, v in r.items() if k != "fidelity"}
            cells.update({f"fidelity_{k}": v for k, v in r.get("fidelity", {}).items()})
            writer.writerow({k: cells.get(k, "") for k in columns})
    return path


def test_items_of_checked_conversations_ask_the_fidelity_questions(checked):
    params = load_params(checked.params_path)
    export = build_export(params, "tiny")
    assert export.items and all(i.fidelity is not None for i in export.items)
    brief = export.items[0].fidelity
    assert brief.kinds == FIDELITY_KINDS  # every kind the checks decided, in order
    assert (brief.persona, brief.latent_goal) == (PERSONA, LATENT_GOAL)
    assert brief.landmarks == LANDMARKS[:1]  # one user turn was played: step 2 never came due

    written = write_export(params, "tiny")
    html = "".join(p.read_text() for p in written.pages)
    data = [i for p in written.pages for i in json.loads(DATA.search(p.read_text()).group(1))["items"]]
    assert all(i["fidelity"]["persona"] == PERSONA for i in data)
    assert "simulated user" in html
    for word in [*TARGETS, *(i.conv_id for i in export.items)]:
        assert word not in html, word


def test_unchecked_conversations_ask_none(params):
    assert all(i.fidelity is None for i in build_export(params, "tiny").items)
    html = write_export(params, "tiny").pages[0].read_text()
    assert "Some items then ask about the" not in html


def test_only_the_conversations_own_metric_asks(checked):
    """Judged on other metrics too (evaluation.evaluate_all_metrics), a conversation is asked
    about once: on its own metric's item."""
    data = load_judged(load_params(checked.params_path), "tiny")
    conv_id = next(c for (c, m) in data.scores if m == "m01")
    assert asked_kinds(data, conv_id, "m01") == FIDELITY_KINDS
    own = data.scores[(conv_id, "m01")]
    data.scores[(conv_id, "m02")] = own.model_copy(update={"metric_id": "m02"})
    assert asked_kinds(data, conv_id, "m02") == []


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_fidelity_answers_round_trip_into_the_frames(checked, tmp_path, fmt):
    params = load_params(checked.params_path)
    export = build_export(params, "tiny")
    ada = rows_of(export, "Ada")
    bo = rows_of(export, "Bo", lambda i: {"leak": answers(i, flip=True)["leak"]})  # one question
    write = write_jsonl if fmt == "jsonl" else write_csv
    files = [write(tmp_path / f"ada.{fmt}", ada), write(tmp_path / f"bo.{fmt}", bo)]
    assert [r.label.fidelity for r in read_labels_file(files[0])] == [r["fidelity"] for r in ada]
    report = import_labels(params, "tiny", files)
    assert not report.refused and len(report.imported) == 2

    frame = label_frames(params, "tiny").fidelity
    assert list(frame.columns) == FIDELITY_COLUMNS
    n = len(export.items)
    assert len(frame) == n * len(FIDELITY_KINDS) + n
    leak = frame[frame.kind == "leak"]
    ada_leak = leak[leak.rater == "ada"].set_index("conv_id")
    bo_leak = leak[leak.rater == "bo"].set_index("conv_id")
    # Ada agrees with the checks on every conversation, Bo with none.
    assert ((ada_leak.label == "present") == ada_leak.checks_found.astype(bool)).all()
    assert ((bo_leak.label == "present") != bo_leak.checks_found.astype(bool)).all()
    assert set(frame.metric_id) == {"m01", "m02"} and (frame.stratum_weight >= 1).all()
    # Every ok conversation of a cell could be asked about: the weights add up to the cell.
    per_cell = ada_leak.groupby(["target", "metric_id"]).stratum_weight.sum()
    assert (per_cell == 6).all()


def test_labels_files_without_fidelity_answers_still_import(checked, tmp_path):
    params = load_params(checked.params_path)
    export = build_export(params, "tiny")
    old = rows_of(export, "Ada", fidelity=None)
    files = [write_jsonl(tmp_path / "old.jsonl", old),
             write_csv(tmp_path / "old.csv", rows_of(export, "Bo", fidelity=None), LABEL_FIELDS)]
    report = import_labels(params, "tiny", files)
    assert not report.refused and len(report.imported) == 2
    frames = label_frames(params, "tiny")
    assert len(frames.labels) == 2 * len(export.items) and frames.fidelity.empty


def test_an_answer_to_a_question_not_asked_is_refused(params, tmp_path):
    """Where fidelity was not checked no item asks: an answer is refused, naming file and row."""
    rows = rows_of(build_export(params, "tiny"), "Ada", fidelity=None)
    rows[1]["fidelity"] = {"leak": "present"}
    path = write_jsonl(tmp_path / "a.jsonl", rows)
    ((refused, reason),) = import_labels(params, "tiny", [path]).refused
    assert refused == path and "row 2" in reason and "leak" in reason and "does not ask" in reason


@pytest.mark.parametrize("answer", [{"made_up": "present"}, {"leak": "maybe"}])
def test_an_invalid_fidelity_answer_names_the_row(checked, tmp_path, answer):
    params = load_params(checked.params_path)
    rows = rows_of(build_export(params, "tiny"), "Ada")
    rows[1]["fidelity"].update(answer)
    ((_, reason),) = import_labels(params, "tiny", [write_jsonl(tmp_path / "a.jsonl", rows)]).refused
    assert "row 2" in reason and next(iter(answer)) in reason
