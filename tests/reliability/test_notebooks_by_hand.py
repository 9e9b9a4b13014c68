"""The stage notebooks opened by hand on one's own study: they show its last outputs.

A study's benchmark is the user's own ("tiny" here, never the repository's default one), and
JupyterLab or `jupyter nbconvert --execute` runs a notebook as committed: the parameters cell's
values, a kernel started in the notebook's folder. Each notebook must then open on the params
file's first benchmark and the first target of its arm, show what the last run wrote, and
write nothing.
"""

from __future__ import annotations

import shutil

import nbformat
import pytest
from nbclient import NotebookClient
from reliability_support import BENCHMARK, TARGETS

from support import REPO

pytestmark = pytest.mark.slow

STAGES = ["01_gen_metrics", "02_gen_scenarios", "03_simulate", "04_evaluate", "05_aggregate"]


def test_each_stage_notebook_run_by_hand_opens_on_the_params_first_benchmark_and_target(proj):
    notebooks = proj / "notebooks"
    notebooks.mkdir()
    data = {p: p.read_bytes() for p in (proj / "data").rglob("*") if p.is_file()}
    for name in STAGES:
        path = notebooks / f"{name}.ipynb"
        shutil.copy(REPO / "notebooks" / path.name, path)
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(notebooks)}}).execute()
        shown = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
                          for cell in nb.cells for o in cell.get("outputs", []))
        assert "Run by hand: showing the outputs of the last `dvc repro`" in shown, name
        assert f"of {BENCHMARK}" in shown, name
        if name in ("03_simulate", "04_evaluate"):
            assert f"{BENCHMARK} · {TARGETS[0]}" in shown, name
    assert {p: p.read_bytes() for p in (proj / "data").rglob("*") if p.is_file()} == data
