"""Every stage runs with the Python that has the package, whether or not a venv is activated.

DVC runs a stage's command through the user's shell with the environment `dvc` was started in:
`.venv/bin/dvc repro` without `source .venv/bin/activate` leaves the venv off the PATH, where a
bare `python` is a system interpreter without the package (or none at all). dvc.yaml runs
`bin/python`, which picks the project's `.venv`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from pipeline_support import run

from conftest import copy_repository
from support import REPO

# A PATH with no Python of the project's: the system's own folders.
SYSTEM_PATH = os.pathsep.join(("/usr/bin", "/bin"))


def test_every_stage_command_runs_the_projects_python():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    commands = [(stage.get("do") or stage)["cmd"] for stage in stages.values()]
    assert all(" ".join(c.split()).startswith("bin/python -m pressurebench.") for c in commands), [
        c for c in commands if not c.startswith("bin/python ")]


def test_venv_dvc_runs_the_stages_without_the_venv_activated(tmp_path: Path):
    root = copy_repository(tmp_path / "repo", "http://127.0.0.1:9/v1")
    # The project's venv where `make install` puts it; the test's own venv stands in for it.
    (root / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = SYSTEM_PATH
    found = subprocess.run(["sh", "-c", "command -v python; python3 -c 'import pressurebench'"],
                           env=env, capture_output=True, text=True, check=False)
    assert found.returncode != 0, "the system PATH has a Python with the package: no test"

    dvc = str(root / ".venv" / "bin" / "dvc")
    run([dvc, "repro", "--single-item", "code_deps"], root, env=env)
    assert (root / "code_deps" / "03_simulate.json").is_file()
