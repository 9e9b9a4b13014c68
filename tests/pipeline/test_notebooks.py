"""nbval over the stage notebooks, run in order on tiny params in a copy of the repository."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from pipeline_support import run

pytestmark = pytest.mark.slow

STAGE_NOTEBOOKS = ["01_gen_metrics", "02_gen_scenarios", "03_simulate", "04_evaluate", "05_aggregate"]


def test_stage_notebooks_execute_cleanly(repo_copy: Path):
    """Each committed notebook runs top to bottom with its default parameters (nbval, lax).

    nbval starts the kernel in the notebook's folder, while DVC runs notebooks from
    the repository root; byte-identical copies at the root reproduce the latter.
    """
    # Each notebook runs once with its default parameters, so one target (the default one).
    params_file = repo_copy / "params" / "pipeline.yaml"
    params = yaml.safe_load(params_file.read_text())
    params["targets"] = params["validation"]["targets"] = ["smollm2"]
    params_file.write_text(yaml.safe_dump(params))
    notebooks = []
    for name in STAGE_NOTEBOOKS:
        source = repo_copy / "notebooks" / f"{name}.ipynb"
        assert all(not cell.get("outputs") for cell in json.loads(source.read_text())["cells"])
        shutil.copyfile(source, repo_copy / f"{name}.ipynb")
        notebooks.append(f"{name}.ipynb")
    out = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
               "--nbval-current-env", "-o", "addopts=", *notebooks], repo_copy).stdout
    assert " passed" in out and "failed" not in out
