"""Notebook → HTML: code hidden, outputs sanitised, nothing fetched, hostile text shown as text."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from report_artifacts import HIDDEN_CODE, HOSTILE, assert_inert, hostile_notebook, start_tags

from pressurebench.errors import ConfigError
from pressurebench.reports.render import clean_html, main, render_notebook


@pytest.fixture
def rendered(tmp_path):
    hostile_notebook(tmp_path / "stage.ipynb")
    out = render_notebook(tmp_path / "stage.ipynb", tmp_path / "out" / "stage.html", title="<i>Stage</i>")
    return out.read_text(encoding="utf-8")


def test_no_script_and_nothing_fetched(rendered):
    assert_inert(rendered, allowed_scripts=0)
    assert "<script" not in rendered.lower()
    assert "cdnjs" not in rendered
    assert "script-src &#39;none&#39;" in rendered or "script-src 'none'" in rendered


def test_code_is_hidden_and_title_escaped(rendered):
    assert HIDDEN_CODE not in rendered
    assert "<title>&lt;i&gt;Stage&lt;/i&gt;</title>" in rendered


def test_hostile_text_is_visible_as_text(rendered):
    assert rendered.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4
    assert "&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in rendered


def test_report_markup_survives_sanitising(rendered):
    assert '<h1 id="Results">' in rendered
    assert "<em>that</em>" in rendered
    assert "<th>conv_id</th>" in rendered and "<td>m01_s001_v01__a__s0</td>" in rendered
    assert ".dataframe tbody" not in rendered  # pandas' style block is dropped, not printed


def test_clean_html_escapes_what_it_does_not_allow():
    assert clean_html('<table><tr><td class="x">1</td></tr></table>') == (
        '<table><tbody><tr><td class="x">1</td></tr></tbody></table>'
    )
    assert clean_html("<script>x()</script>") == "&lt;script&gt;x()&lt;/script&gt;"
    assert clean_html('<a href="javascript:x()" onclick="y()">l</a>') == "<a>l</a>"
    assert clean_html("<style>p{}</style><p>ok</p>") == "<p>ok</p>"


def test_cli(tmp_path, capsys):
    hostile_notebook(tmp_path / "n.ipynb")
    assert main([str(tmp_path / "n.ipynb"), str(tmp_path / "n.html")]) == 0
    assert "<title>n</title>" in (tmp_path / "n.html").read_text(encoding="utf-8")
    assert main([str(tmp_path / "missing.ipynb"), str(tmp_path / "m.html")]) == 2
    assert "missing.ipynb" in capsys.readouterr().err
    assert not (tmp_path / "m.html").exists()


@pytest.mark.parametrize("text", ["{not json", "{}", "[]", '{"cells": 5}'])
def test_unreadable_notebook_names_the_file(tmp_path, text):
    bad = tmp_path / "bad.ipynb"
    bad.write_text(text)
    with pytest.raises(ConfigError, match=r"bad.ipynb"):
        render_notebook(bad, tmp_path / "bad.html")


@pytest.mark.slow
def test_executed_notebook_shows_tables_and_figures(tmp_path):
    """A stage notebook's calls into the reports package survive execution and rendering."""
    papermill = pytest.importorskip("papermill")
    nb = new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                               "language": "python"}})
    nb.cells = [
        new_code_cell(
            "from pressurebench.reports import figures, tables\n"
            "from pressurebench.stats.results import build_results\n"
            f"import sys; sys.path.insert(0, {str(Path(__file__).parents[1])!r})\n"
            "from pressurebench.stats.sweeps.synthetic import synthetic_scores\n"
            "frame = synthetic_scores(target_rates={'a': 0.6, 'b': 0.4}, metrics=2, base_per_metric=3)\n"
            "results = build_results(frame, resamples=200, confidence_level=0.95, seed=1, benchmark='x')"
        ),
        new_code_cell("tables.results_table(results)"),
        new_code_cell("figures.forest_plot(results)"),
        new_code_cell(f"print({HOSTILE!r})"),
    ]
    nbformat.write(nb, tmp_path / "in.ipynb")
    papermill.execute_notebook(str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"),
                               kernel_name="python3", cwd=str(tmp_path), progress_bar=False)
    html = render_notebook(tmp_path / "out.ipynb", tmp_path / "out.html").read_text(encoding="utf-8")
    assert_inert(html)
    pngs = [a for tag, a in start_tags(html) if tag == "img" and a["src"].startswith("data:image/png")]
    assert len(pngs) == 1
    assert "<th>rate</th>" in html and "<td>overall</td>" in html
    assert "&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;" in html


def test_progress_bars_become_one_plain_line_and_real_stderr_stays():
    import nbformat

    from pressurebench.reports.render import quiet_progress

    cell = nbformat.v4.new_code_cell("run()")
    bars = ["simulate/b/t:   0%|          | 0/16 [00:00<?, ?row/s]",
            "simulate/b/t: 100%|██████████| 16/16 [00:04<00:00, 3.48row/s, error=0, ok=16]"]
    cell.outputs = [nbformat.v4.new_output("stream", name="stderr", text=bar + "\r")
                    for bar in bars]
    cell.outputs += [nbformat.v4.new_output("stream", name="stderr", text="\n"),
                     nbformat.v4.new_output("stream", name="stderr", text="WARNING: disk full\n")]
    nb = nbformat.v4.new_notebook(cells=[cell])
    outputs = quiet_progress(nb).cells[0].outputs
    assert [(o.name, o.text) for o in outputs] == [
        ("stdout", f"progress: {bars[-1]}\n"), ("stderr", "WARNING: disk full\n")]


def test_a_second_process_renders_from_the_compiled_templates_of_the_first(tmp_path):
    """Each stage renders its report in a fresh process: the templates are compiled by the
    first and loaded as bytecode by the next (Jinja's `FileSystemBytecodeCache`), and a
    report is the same either way."""
    import os
    import subprocess
    import sys

    nb = new_notebook(cells=[new_code_cell("1 + 1")])
    nbformat.write(nb, tmp_path / "in.ipynb")
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    script = ("import sys; from pressurebench.reports.render import render_notebook as r; "
              "r(sys.argv[1], sys.argv[2], title='t')")
    pages = []
    for n in (1, 2):
        out = tmp_path / f"out{n}.html"
        subprocess.run([sys.executable, "-c", script, str(tmp_path / "in.ipynb"), str(out)],
                       env=env, check=True)
        pages.append(out.read_text())
        if n == 1:
            cached = sorted(p for p in (tmp_path / "tmp").rglob("__jinja2_*.cache"))
            assert cached, "no compiled template was kept"

    def strip(page: str) -> list[str]:
        return [ln for ln in page.splitlines() if "generated" not in ln.lower()]

    assert strip(pages[0]) == strip(pages[1])
