"""Paper exports: vector figures and typeset tables from the aggregate results, byte-stable."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from pressurebench.commands.cli import main
from pressurebench.io import read_artifact
from pressurebench.reports.latex import booktabs, latex_escape
from pressurebench.stats.results import Results


def test_export_writes_every_figure_as_svg_and_pdf_and_every_table_as_csv_and_latex(proj, capsys):
    assert main(["export", "--benchmark", "tiny"]) == 0
    out = proj / "reports" / "tiny" / "export"
    index = json.loads((out / "index.json").read_text())
    assert len(index["figures"]) == 10 and len(index["tables"]) == 14
    for name in index["figures"]:
        data = (out / name).read_bytes()
        if name.endswith(".svg"):
            ET.fromstring(data)  # well-formed XML
            assert b"<dc:date>" not in data
        else:
            assert data.startswith(b"%PDF") and b"CreationDate" not in data
    for name in ("pass_rates", "pairwise", "pairwise_by_metric", "demographic_gaps", "agreement",
                 "interval_coverage", "errors"):
        tex = (out / "tables" / f"{name}.tex").read_text()
        assert tex.startswith("\\begin{table}") and "\\caption{" in tex and "\\label{tab:tiny-" in tex
        assert "\\toprule" in tex and "\\bottomrule" in tex

    first = {name: (out / name).read_bytes() for name in index["figures"] + index["tables"]}
    assert main(["export", "--benchmark", "tiny"]) == 0
    assert {name: (out / name).read_bytes() for name in first} == first  # same results, same bytes


def test_csv_tables_hold_numbers_not_display_text(proj):
    """A rate is a fraction, a count an integer, a missing value empty: never "50.0%" or "—"."""
    assert main(["export", "--benchmark", "tiny"]) == 0
    out = proj / "reports" / "tiny" / "export" / "tables"
    rates = pd.read_csv(out / "pass_rates.csv")
    results = read_artifact(proj / "data" / "tiny" / "aggregate" / "results.json", Results)
    assert list(rates.columns) == ["target", "scope", "key", "label", "rate", "ci_low", "ci_high",
                                   "n", "n_error", "base_scenarios", "method", "reason"]
    assert rates["rate"].dtype == float and rates["n"].dtype == int
    assert set(rates["scope"]) >= {"overall", "metric type", "metric"}
    for target, tr in results.targets.items():
        row = rates[(rates.target == target) & (rates.scope == "overall")].iloc[0]
        assert row.rate == pytest.approx(tr.overall.rate) and row.n == tr.overall.n
        assert row.n_error == tr.overall.n_error and row.base_scenarios == tr.overall.n_clusters
        for metric_id, est in tr.by_metric.items():
            m = rates[(rates.target == target) & (rates.key == metric_id)].iloc[0]
            assert (pd.isna(m.rate) and est.rate is None) or m.rate == pytest.approx(est.rate)
    for text in (out / "pass_rates.csv").read_text().splitlines()[1:]:
        assert "%" not in text and "—" not in text
    pairwise = pd.read_csv(out / "pairwise.csv")
    (d,) = results.comparison.pairwise
    assert (pairwise.a[0], pairwise.b[0]) == (d.a, d.b)
    assert pairwise.difference[0] == pytest.approx(d.difference)
    gaps = pd.read_csv(out / "demographic_gaps.csv")
    assert {"p_value", "p_holm", "holm_significant", "n_comparisons"} <= set(gaps.columns)


def test_latex_cells_are_escaped():
    frame = pd.DataFrame([{"metric": "m01 Avoid 100% & #1 {x}_y $", "rate": None}])
    tex = str(booktabs(frame))  # a Tabular: its rows set as LaTeX, whole
    assert r"m01 Avoid 100\% \& \#1 \{x\}\_y \$" in tex and "None" not in tex
    assert "\\begin{tabular}{ll}" in tex  # no number in either column
    assert "\\begin{tabular}{lr}" in str(booktabs(pd.DataFrame({"metric": ["a"], "n": [3]})))
    assert latex_escape("a\\b~^") == r"a\textbackslash{}b\textasciitilde{}\textasciicircum{}"
