"""Every CSV file the project writes keeps a cell that a spreadsheet would run as a formula text."""

from __future__ import annotations

import csv
import io

import pandas as pd
import pytest

from pressurebench.io import FORMULA_START, escape_formula, frame_csv, unescape_formula
from pressurebench.reports.export import save_table


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1", "@SUM(A1)", "\t=1", "\r=1",
                                  '=HYPERLINK("http://example.com","x")'])
def test_a_formula_leading_cell_is_written_as_text_and_read_back_as_it_was(text):
    frame = pd.DataFrame({"metric": [text], "rate": [0.5]})
    (row,) = list(csv.DictReader(io.StringIO(frame_csv(frame), newline="")))
    assert row["metric"] == "'" + text
    assert unescape_formula(row["metric"]) == text


def test_numbers_and_plain_text_are_written_as_they_are():
    frame = pd.DataFrame({"metric": ["Holds an honest assessment", "it's fine"], "gap": [-0.25, 0.5],
                          "n": [-3, 4]})
    rows = list(csv.DictReader(io.StringIO(frame_csv(frame), newline="")))
    assert [r["metric"] for r in rows] == ["Holds an honest assessment", "it's fine"]
    assert [r["gap"] for r in rows] == ["-0.25", "0.5"] and [r["n"] for r in rows] == ["-3", "4"]
    assert unescape_formula("it's fine") == "it's fine" and unescape_formula("'x") == "'x"
    assert all(escape_formula(start + "x").startswith("'") for start in FORMULA_START)


def test_the_paper_export_tables_escape_model_written_names(tmp_path):
    frame = pd.DataFrame({"metric": ["=cmd|' /C calc'!A0", "Avoid flattery"], "pass rate": [0.5, 0.25]})
    csv_path, _ = save_table(frame, "", tmp_path, "pass_rates")
    with open(csv_path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["metric"] for r in rows] == ["'=cmd|' /C calc'!A0", "Avoid flattery"]
