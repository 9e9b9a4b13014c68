"""The in-process engine records a notebook's outputs as a Jupyter kernel does: the same streams,
displays, last values (a figure's PNG, a DataFrame's HTML and plain text), execution counts, and
an error papermill turns into PapermillExecutionError; the cells after a failing one do not run."""

from __future__ import annotations

import base64
import subprocess
import sys

import nbformat
import pytest

from pressurebench.pipeline.notebook_engine import ENGINE_NAME

CELLS = [
    "x = 1",
    "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\nprint('more stdout')",
    ("import pandas as pd\nfrom IPython.display import display, Markdown\n"
    "display(Markdown('**shown**'))\n"
    "pd.DataFrame({f'column_{i}': [i, i + 1] for i in range(15)})"),
    "",
    ("from matplotlib.figure import Figure\nfig = Figure(figsize=(2, 1))\nfig.subplots().plot([0, 1])\n"
    "fig.savefig('/dev/null', format='png')\nclass Shown:\n"
    "    def _repr_png_(self):\n        return b'\\x89PNG-bytes'\n"
    "    def __repr__(self):\n        return 'Shown'\nShown()"),
    "x + 1;",
]


def notebook(extra: list[str] = ()) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell("value = 0", metadata={"tags": ["parameters"]})]
    nb.cells += [nbformat.v4.new_code_cell(source) for source in [*CELLS, *extra]]
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("# Title"))
    return nb


def execute(tmp_path, nb, engine: str | None) -> tuple[subprocess.CompletedProcess, nbformat.NotebookNode]:
    """Run the notebook with papermill in a fresh interpreter, as a stage command does (what a
    process imported before the cells run, pandas for one, would change what they show)."""
    path, out = tmp_path / "in.ipynb", tmp_path / f"out-{engine}.ipynb"
    nbformat.write(nb, path)
    script = (
        "import papermill\n"
        "from papermill.engines import papermill_engines\n"
        "from pressurebench.pipeline.notebook_engine import ENGINE_NAME, InProcessEngine\n"
        "papermill_engines.register(ENGINE_NAME, InProcessEngine)\n"
        f"papermill.execute_notebook({str(path)!r}, {str(out)!r}, parameters={{'value': 2}}, "
        f"engine_name={engine!r}, kernel_name='python3', progress_bar=False, cwd={str(tmp_path)!r})\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                          check=False)
    return proc, nbformat.read(out, as_version=4)


def outputs(nb) -> list:
    return [(c.get("execution_count"), c.get("outputs")) for c in nb.cells if c.cell_type == "code"]


def test_outputs_are_recorded_as_a_kernel_reports_them(tmp_path):
    proc, nb = execute(tmp_path, notebook(), ENGINE_NAME)
    assert proc.returncode == 0, proc.stderr
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert "injected-parameters" in cells[1].metadata.tags
    assert [c.execution_count for c in cells] == [1, 2, 3, 4, 5, None, 6, 7]
    streams = cells[3].outputs
    # Each stream buffered, stdout sent first, as a kernel does within its flush interval.
    assert [(o.output_type, o.name, o.text) for o in streams] == [
        ("stream", "stdout", "to stdout\nmore stdout\n"), ("stream", "stderr", "to stderr\n")]
    display, result = cells[4].outputs
    assert display.output_type == "display_data" and display.data["text/markdown"] == "**shown**"
    assert result.output_type == "execute_result" and result.execution_count == 5
    assert "<table" in result.data["text/html"]
    assert "column_14" in result.data["text/plain"] and "..." not in result.data["text/plain"]
    (png,) = cells[6].outputs
    assert base64.b64decode(png.data["image/png"]) == b"\x89PNG-bytes"
    assert cells[7].outputs == []  # a trailing semicolon shows nothing
    assert nb.metadata.language_info.name == "python"
    assert [c.metadata.papermill.status for c in nb.cells] == ["completed"] * len(nb.cells)


def test_an_error_stops_the_notebook_and_names_the_exception(tmp_path):
    proc, written = execute(tmp_path, notebook(["raise ValueError('bad settings')", "print('not reached')"]),
                            ENGINE_NAME)
    assert proc.returncode != 0
    assert "PapermillExecutionError" in proc.stderr and "ValueError: bad settings" in proc.stderr
    error = written.cells[-2].outputs[-1]
    assert (error.output_type, error.ename, error.evalue) == ("error", "ValueError", "bad settings")
    assert written.cells[-2].metadata.papermill.exception  # the cell a failure report stops at
    last = written.cells[-1]
    assert last.source == "print('not reached')" and not last.outputs and last.execution_count is None


@pytest.mark.slow
def test_the_outputs_are_those_of_a_jupyter_kernel(tmp_path):
    """The same notebook through papermill's own engine (a python3 kernel): identical outputs
    and execution counts, cell by cell."""
    kernel = execute(tmp_path, notebook(), None)[1]
    here = execute(tmp_path, notebook(), ENGINE_NAME)[1]
    assert outputs(here) == outputs(kernel)
