"""Paper exports: vector figures and typeset tables from the aggregate results, byte-stable."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET

import pandas as pd

from pressurebench.cli import main
from pressurebench.reports.export import booktabs, latex_escape


def test_export_writes_every_figure_as_svg_and_pdf_and_every_table_as_csv_and_latex(proj, capsys):
    assert main(["export", "--benchmark", "tiny"]) == 0
    out = proj / "reports" / "tiny" / "export"
    index = json.loads((out / "index.json").read_text())
    assert len(index["figures"]) == 10 and len(index["tables"]) == 6
    for name in index["figures"]:
        data = (out / name).read_bytes()
        if name.endswith(".svg"):
            ET.fromstring(data)  # well-formed XML
            assert b"<dc:date>" not in data
        else:
            assert data.startswith(b"%PDF") and b"CreationDate" not in data
    rates = list(csv.DictReader((out / "tables" / "pass_rates.csv").open()))
    assert rates and {"target", "metric"} <= set(rates[0])
    tex = (out / "tables" / "pass_rates.tex").read_text()
    assert tex.startswith("\\begin{tabular}") and "\\toprule" in tex and "\\bottomrule" in tex
    assert tex.count("\\\\") == len(rates) + 1  # header and one line per row

    first = {name: (out / name).read_bytes() for name in index["figures"] + index["tables"]}
    assert main(["export", "--benchmark", "tiny"]) == 0
    assert {name: (out / name).read_bytes() for name in first} == first  # same results, same bytes


def test_latex_cells_are_escaped():
    frame = pd.DataFrame([{"metric": "m01 Avoid 100% & #1 {x}_y $", "rate": None}])
    tex = booktabs(frame)
    assert r"m01 Avoid 100\% \& \#1 \{x\}\_y \$" in tex and "None" not in tex
    assert latex_escape("a\\b~^") == r"a\textbackslash{}b\textasciitilde{}\textasciicircum{}"
