"""The in-process engine records a notebook's outputs as a Jupyter kernel does: the same streams,
displays, last values (a figure's PNG, a DataFrame's HTML and plain text), execution counts, and
an error papermill turns into PapermillExecutionError; the cells after a failing one do not run."""

from __future__ import annotations

import base64

import nbformat
import papermill
import pytest
from papermill.engines import papermill_engines
from papermill.exceptions import PapermillExecutionError

from pressurebench.notebook_engine import ENGINE_NAME, InProcessEngine

CELLS = [
    "x = 1",
    "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)\nprint('more stdout')",
    ("import pandas as pd\nfrom IPython.display import display, Markdown\n"
    "display(Markdown('**shown**'))\n"
    "pd.DataFrame({f'column_{i}': [i, i + 1] for i in range(15)})"),
    "",
    ("from matplotlib.figure import Figure\nfig = Figure(figsize=(2, 1))\nfig.subplots().plot([0, 1])\n"
    "fig.savefig('/dev/null', format='png')\nclass Shown:\n"
    "    def _repr_png_(self):\n        return b'\\x89PNG-bytes'\n    def __repr__(self):\n        return 'Shown'\nShown()"),
    "x + 1;",
]


def notebook(extra: list[str] = ()) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nb.cells = [nbformat.v4.new_code_cell("value = 0", metadata={"tags": ["parameters"]})]
    nb.cells += [nbformat.v4.new_code_cell(source) for source in [*CELLS, *extra]]
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("# Title"))
    return nb


def execute(tmp_path, nb, engine: str | None) -> nbformat.NotebookNode:
    if engine:
        papermill_engines.register(ENGINE_NAME, InProcessEngine)
    path = tmp_path / "in.ipynb"
    nbformat.write(nb, path)
    return papermill.execute_notebook(str(path), str(tmp_path / f"out-{engine}.ipynb"),
                                      parameters={"value": 2}, engine_name=engine,
                                      kernel_name="python3", progress_bar=False, cwd=str(tmp_path))


def outputs(nb) -> list:
    return [(c.get("execution_count"), c.get("outputs")) for c in nb.cells if c.cell_type == "code"]


def test_outputs_are_recorded_as_a_kernel_reports_them(tmp_path):
    nb = execute(tmp_path, notebook(), ENGINE_NAME)
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
    nb = notebook(["raise ValueError('bad settings')", "print('not reached')"])
    with pytest.raises(PapermillExecutionError) as failed:
        execute(tmp_path, nb, ENGINE_NAME)
    assert (failed.value.ename, failed.value.evalue) == ("ValueError", "bad settings")
    written = nbformat.read(tmp_path / f"out-{ENGINE_NAME}.ipynb", as_version=4)
    last = written.cells[-1]
    assert last.source == "print('not reached')" and not last.outputs and last.execution_count is None


@pytest.mark.slow
def test_the_outputs_are_those_of_a_jupyter_kernel(tmp_path):
    """The same notebook through papermill's own engine (a python3 kernel): identical outputs
    and execution counts, cell by cell."""
    kernel = execute(tmp_path, notebook(), None)
    here = execute(tmp_path, notebook(), ENGINE_NAME)
    assert outputs(here) == outputs(kernel)
