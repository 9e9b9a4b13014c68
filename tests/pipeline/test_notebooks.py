"""nbval over the stage notebooks, run in order on tiny params in a copy of the repository."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from pipeline_support import run

pytestmark = pytest.mark.slow

STAGE_NOTEBOOKS = ["01_gen_metrics", "02_gen_scenarios", "03_simulate", "04_evaluate", "05_aggregate"]


def test_stage_notebooks_execute_cleanly(repo_copy: Path):
    """Each committed notebook runs top to bottom (nbval, lax): first as DVC runs it (from the
    repository root, its stage run: copies at the root with `write_outputs = True`), then as
    JupyterLab does (in notebooks/, default parameters: the last outputs shown, none written).
    """
    # Each notebook runs once with its default parameters, so one target (the default one).
    params_file = repo_copy / "params" / "pipeline.yaml"
    params = yaml.safe_load(params_file.read_text())
    params["targets"] = params["validation"]["targets"] = ["smollm2"]
    params_file.write_text(yaml.safe_dump(params))
    notebooks = []
    for name in STAGE_NOTEBOOKS:
        source = repo_copy / "notebooks" / f"{name}.ipynb"
        nb = json.loads(source.read_text())
        assert all(not cell.get("outputs") for cell in nb["cells"])
        (cell,) = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
        assert "write_outputs = False" in "".join(cell["source"])
        cell["source"] = "".join(cell["source"]).replace("write_outputs = False", "write_outputs = True")
        (repo_copy / f"{name}.ipynb").write_text(json.dumps(nb))
        notebooks.append(f"{name}.ipynb")
    out = nbval(repo_copy, notebooks)
    assert " passed" in out and "failed" not in out

    # By hand, as JupyterLab runs them (in notebooks/, default parameters): every notebook shows
    # the outputs above and rewrites none of them.
    data = repo_copy / "data"
    before = {p: p.read_bytes() for p in data.rglob("*") if p.is_file()}
    out = nbval(repo_copy / "notebooks", [f"{name}.ipynb" for name in STAGE_NOTEBOOKS])
    assert " passed" in out and "failed" not in out
    assert {p: p.read_bytes() for p in data.rglob("*") if p.is_file()} == before


def nbval(folder: Path, notebooks: list[str]) -> str:
    return run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
                "--nbval-current-env", "-o", "addopts=", *notebooks], folder).stdout
