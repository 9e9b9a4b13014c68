"""Labels files: both formats load, every invalid row is an error naming file and row, and an
import keeps valid files and refuses the others with the reason."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from label_data import JUDGES, write_judged

from pressurebench.commands.cli import main
from pressurebench.errors import ConfigError
from pressurebench.labels.export import build_export
from pressurebench.labels.joined import JUDGE_COLUMNS, LABEL_COLUMNS, label_frames
from pressurebench.labels.records import LABEL_FIELDS, HumanLabel
from pressurebench.labels.store import (
    SetAside,
    import_labels,
    load_checked,
    load_labels,
    read_labels_file,
)
from pressurebench.params import load_params


def label_rows(params, rater="Ada", n=None, label="present"):
    items = build_export(params, "tiny").items[:n]
    return [{"item_key": i.item_key, "rater": rater, "label": label,
             "transcript_sha256": i.transcript_sha256, "batch": i.batch} for i in items]


def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_csv(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=LABEL_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_no_labels_files_no_labels(params):
    assert load_labels(params, "tiny") == []
    frames = label_frames(params, "tiny")
    assert list(frames.labels.columns) == LABEL_COLUMNS and frames.labels.empty
    assert list(frames.judges.columns) == JUDGE_COLUMNS


def test_jsonl_and_csv_load_and_join(judged, params):
    rows = label_rows(params, "Ada", n=4)
    write_jsonl(judged.root / "labels" / "tiny" / "ada.jsonl", rows)
    write_csv(judged.root / "labels" / "tiny" / "bo.csv",
              [{**r, "rater": "Bo, the second", "label": "absent"} for r in rows[:3]])
    labels = load_labels(params, "tiny")
    assert len(labels) == 7 and all(isinstance(lab, HumanLabel) for lab in labels)
    assert {lab.rater for lab in labels} == {"ada", "bo, the second"}  # names as normalised

    export = {i.item_key: i for i in build_export(params, "tiny").items}
    frames = label_frames(params, "tiny")
    frame = frames.labels
    assert list(frame.columns) == LABEL_COLUMNS and len(frame) == 7
    for row in frame.itertuples():
        item = next(i for i in export.values() if i.item_id == row.item_id)
        assert (row.conv_id, row.metric_id, row.target, row.base_id, row.metric_type) == (
            item.conv_id, item.metric_id, item.target, item.base_id, item.metric_type)
        assert row.panel_disagrees == item.panel_disagrees
        assert row.stratum_weight >= 1
    judges = frames.judges
    assert list(judges.columns) == JUDGE_COLUMNS
    assert len(judges) == 4 * (len(JUDGES) + 1)
    panel = judges[judges.judge == "panel"].set_index("item_id").present
    assert frame.groupby("item_id").judge_present.first().to_dict() == panel.to_dict()


def bad(params, case):
    rows = label_rows(params, n=3)
    if case == "unknown conversation":
        rows[1]["item_key"] = "0123456789ab:m01"
    elif case == "unknown metric":
        rows[1]["item_key"] = rows[1]["item_key"].split(":")[0] + ":m07"
    elif case == "transcript changed":
        rows[1]["transcript_sha256"] = "0" * 64
    elif case == "invalid label":
        rows[1]["label"] = "maybe"
    elif case == "blank rater":
        rows[1]["rater"] = "  "
    elif case == "labelled twice":
        rows[1] = rows[0]
    return rows


CASES = {
    "unknown conversation": "unknown conversation 0123456789ab",
    "unknown metric": "unknown metric id 'm07'",
    "transcript changed": "has since changed",
    "invalid label": "row 2.label",
    "blank rater": "row 2.rater",
    "labelled twice": "labelled item",
}


# Rows that do not match the current data: refused on import, set aside once stored.
STALE = {
    "unknown conversation": "its conversation no longer exists",
    "unknown metric": "its conversation was not judged on its metric",
    "transcript changed": "the transcript has changed since it was labelled",
    "labelled twice": "its rater labelled the item before",
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_an_invalid_row_names_the_file_and_row(judged, params, case, fmt, tmp_path):
    source = (write_jsonl if fmt == "jsonl" else write_csv)(tmp_path / f"bad.{fmt}", bad(params, case))
    report = import_labels(params, "tiny", [source])
    assert not report.imported
    ((refused, message),) = report.refused
    assert refused == source and message.startswith(f"{source}: row 2")
    assert CASES[case] in message


@pytest.mark.parametrize("case", sorted(STALE))
def test_stored_rows_that_no_longer_match_are_set_aside_and_the_rest_used(judged, params, case):
    path = write_jsonl(judged.root / "labels" / "tiny" / "bad.jsonl", bad(params, case))
    labels, _, aside = load_checked(params, "tiny")
    assert len(labels) == 2
    assert aside == [SetAside(Path("labels/tiny/bad.jsonl"), 1, STALE[case])]
    assert path.exists()  # set aside for the analysis, never deleted


def test_the_same_rater_twice_across_files(judged, params):
    rows = label_rows(params, n=3)
    write_jsonl(judged.root / "labels" / "tiny" / "a.jsonl", rows[:2])
    write_csv(judged.root / "labels" / "tiny" / "b.csv", rows[1:])
    labels, _, aside = load_checked(params, "tiny")
    assert len(labels) == 3
    assert aside == [SetAside(Path("labels/tiny/b.csv"), 1, STALE["labelled twice"])]
    # Another rater on the same item is what agreement between people is made of.
    write_csv(judged.root / "labels" / "tiny" / "b.csv", [{**r, "rater": "Bo"} for r in rows[1:]])
    assert len(load_labels(params, "tiny")) == 4


def test_a_label_on_a_transcript_changed_since(judged, params):
    (item,) = [i for i in build_export(params, "tiny").items
               if i.conv_id.startswith("m01_s001_v01__target-a")]
    rows = [{"item_key": item.item_key, "rater": "Ada", "label": "absent",
             "transcript_sha256": item.transcript_sha256, "batch": item.batch}]
    write_jsonl(judged.root / "labels" / "tiny" / "a.jsonl", rows)
    assert len(load_labels(params, "tiny")) == 1
    write_judged(judged.root, hostile=False)  # that conversation's reply is now another text
    labels, _, aside = load_checked(params, "tiny")
    assert labels == [] and aside == [SetAside(Path("labels/tiny/a.jsonl"), 1, STALE["transcript changed"])]


def test_malformed_files(judged, params):
    folder = judged.root / "labels" / "tiny"
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_text('{"item_key": 1}\nnot json\n')
    with pytest.raises(ConfigError, match=r"a.jsonl: row 1.item_key"):
        load_labels(params, "tiny")
    (folder / "a.jsonl").write_text("\n")
    with pytest.raises(ConfigError, match=r"a.jsonl: holds no labels"):
        read_labels_file(folder / "a.jsonl")
    (folder / "a.jsonl").unlink()
    (folder / "b.csv").write_text("item_key,rater,label\n")
    with pytest.raises(ConfigError, match=r"b.csv: header: .*transcript_sha256, batch"):
        load_labels(params, "tiny")


def test_import_round_trip(judged, params, tmp_path, capsys):
    rows = label_rows(params, "Ada", n=5)
    ada = write_jsonl(tmp_path / "in" / "ada.jsonl", rows)
    bo = write_csv(tmp_path / "in" / "bo.csv", [{**r, "rater": "Bo"} for r in rows[:2]])
    assert main(["labels", "import", str(ada), str(bo), "--benchmark", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "ada: 5 labels imported" in out and "bo: 2 labels imported" in out
    stored = judged.root / "labels" / "tiny"
    assert (stored / "ada.jsonl").read_bytes() == ada.read_bytes()
    assert (stored / "bo.csv").read_bytes() == bo.read_bytes()
    assert len(load_labels(params, "tiny")) == 7

    # The same file again: nothing to do. Another file of that name: refused, nothing replaced.
    assert main(["labels", "import", str(ada)]) == 0
    assert "already imported, unchanged" in capsys.readouterr().out
    other = write_jsonl(tmp_path / "other" / "ada.jsonl", [{**r, "rater": "Cy"} for r in rows])
    assert main(["labels", "import", str(other)]) == 2
    assert "a different file named ada.jsonl is already in labels/tiny" in capsys.readouterr().err
    assert (stored / "ada.jsonl").read_bytes() == ada.read_bytes()


def test_import_refuses_an_invalid_file_and_keeps_the_valid_ones(judged, params, tmp_path, capsys):
    rows = label_rows(params, "Ada", n=3)
    good = write_jsonl(tmp_path / "good.jsonl", rows[:1])
    twice = write_csv(tmp_path / "twice.csv", rows[:2])  # Ada on rows[0] again, across files
    broken = write_jsonl(tmp_path / "broken.jsonl",
                         [{**r, "rater": "Bo"} for r in bad(params, "transcript changed")])
    report = import_labels(params, "tiny", [good, twice, broken])
    assert [p.name for p, _ in report.imported] == ["good.jsonl"]
    reasons = dict(report.refused)
    assert f"{twice}: row 1: rater 'ada' labelled item" in reasons[twice]
    assert f"{broken}: row 2: the transcript of conversation" in reasons[broken]
    assert sorted(p.name for p in (judged.root / "labels" / "tiny").iterdir()) == ["good.jsonl"]
    assert main(["labels", "import", str(broken)]) == 2
    assert "refused" in capsys.readouterr().err


def test_labels_dir_comes_from_the_params(judged, tmp_path):
    judged.write_params(labels={"dir": "human"})
    params = load_params(judged.params_path)
    write_jsonl(judged.root / "human" / "tiny" / "a.jsonl", label_rows(params, n=2))
    assert len(load_labels(params, "tiny")) == 2
