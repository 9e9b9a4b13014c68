"""Hostile or careless labels files and names: one person is one rater, sizes and integers are
bounded, and no benchmark name leads a command outside the project's folders."""

from __future__ import annotations

import json

import pytest
from test_store import label_rows, write_csv, write_jsonl

from pressurebench.commands.cli import main
from pressurebench.errors import ConfigError
from pressurebench.labels.records import rater_name
from pressurebench.labels.store import MAX_LABELS_BYTES, import_labels, read_labels_file


@pytest.mark.parametrize("spelling", ["Alice", "alice\u200b", "\u202ealice", "ali\x00ce", " ALICE\t",
                                      "\uff41lice"])
def test_spellings_of_one_name_are_one_rater(judged, params, tmp_path, spelling):
    rows = label_rows(params, n=2)
    first = write_jsonl(tmp_path / "first.jsonl", [{**r, "rater": "alice"} for r in rows])
    again = write_jsonl(tmp_path / "again.jsonl", [{**r, "rater": spelling} for r in rows])
    report = import_labels(params, "tiny", [first, again])
    assert [p.name for p, _ in report.imported] == ["first.jsonl"]
    ((refused, reason),) = report.refused
    assert refused == again and "rater 'alice' labelled item" in reason


@pytest.mark.parametrize("name", ["", " ", "\u200b", "\x00\x01", "\u202e\u200d"])
def test_a_name_of_nothing_but_control_or_format_characters_is_refused(judged, params, tmp_path, name):
    path = write_jsonl(tmp_path / "blank.jsonl", [{**r, "rater": name} for r in label_rows(params, n=1)])
    with pytest.raises(ConfigError, match=r"row 1\.rater"):
        read_labels_file(path)


def test_names_keep_their_letters_and_words():
    assert rater_name("Grace  Murray\nHopper") == "grace murray hopper"
    assert rater_name("Straße") == "strasse"
    assert rater_name("=Ada") == "=ada"


def test_a_labels_file_above_the_limit_is_refused_saying_the_limit(judged, params, tmp_path, capsys):
    path = write_jsonl(tmp_path / "huge.jsonl", label_rows(params, n=1))
    with path.open("r+b") as fh:
        fh.truncate(MAX_LABELS_BYTES + 1)  # sparse: the size is what is checked, before reading
    assert main(["labels", "import", str(path), "--benchmark", "tiny"]) == 2
    err = capsys.readouterr().err
    assert f"labels files are limited to {MAX_LABELS_BYTES // 2**20} MiB" in err
    assert not (judged.root / "labels").exists()


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
@pytest.mark.parametrize("batch", ["9" * 5001, "1000001", "0"])
def test_an_out_of_range_batch_number_is_an_error_not_a_traceback(judged, params, tmp_path, fmt, batch,
                                                                  capsys):
    row = label_rows(params, n=1)[0]
    if fmt == "jsonl":
        path = tmp_path / "big.jsonl"
        path.write_text(json.dumps({**row, "batch": 0}).replace('"batch": 0', f'"batch": {batch}') + "\n")
    else:
        path = write_csv(tmp_path / "big.csv", [{**row, "batch": batch}])
    assert main(["labels", "import", str(path), "--benchmark", "tiny"]) == 2
    assert f"{path}: row 1" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["labels", "export", "--benchmark", "../data/tiny"],
    ["labels", "import", "FILE", "--benchmark", "../data/tiny"],
    ["labels", "export", "--benchmark", "/tmp/elsewhere"],
    ["scenarios", "export", "--benchmark", "../tiny"],
    ["plan", "--half-width", "0.1", "--benchmark", "../tiny"],
    ["export", "--benchmark", "../tiny"],
])
def test_a_benchmark_name_not_in_the_params_is_refused_before_anything_is_written(
    judged, params, tmp_path, capsys, argv
):
    source = write_jsonl(tmp_path / "a.jsonl", label_rows(params, n=1))
    argv = [str(source) if a == "FILE" else a for a in argv]
    before = sorted(p for p in judged.root.rglob("*"))
    assert main(argv) == 2
    assert "is not one of the benchmarks" in capsys.readouterr().err
    assert sorted(p for p in judged.root.rglob("*")) == before
