"""`dvc status` reads only real changes: not bytecode a user's Python writes, not a stale lock.

With Python's defaults every import writes `__pycache__/` beside the modules, inside folders that
are stage deps; DVC hashes what `.dvcignore` does not exclude, so without it one import marks every
stage modified. The machines that run these tests set PYTHONDONTWRITEBYTECODE=1, so the tests
unset it themselves.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_support import run

from support import REPO


def python_defaults(src: Path) -> dict[str, str]:
    """The environment of a user's shell: bytecode written, the package imported from `src`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(src)
    return env


def modified_deps(status_output: str) -> list[str]:
    return re.findall(r"modified:\s+(\S+)", status_output)


@pytest.mark.slow
def test_imports_with_bytecode_leave_a_reproduced_copy_up_to_date(reproduced_repo: Path):
    root = reproduced_repo
    src = root / "src"
    env = python_defaults(src)
    importer = (
        "import importlib, pkgutil, pressurebench\n"
        f"assert pressurebench.__file__.startswith({str(src)!r}), pressurebench.__file__\n"
        "for m in pkgutil.walk_packages(pressurebench.__path__, 'pressurebench.'):\n"
        "    importlib.import_module(m.name)\n"
    )
    subprocess.run([sys.executable, "-c", importer], cwd=root, env=env, check=True)
    run([sys.executable, "-m", "pressurebench.commands.cli", "estimate"], root, env=env)

    written = sorted(p.relative_to(root) for p in src.rglob("__pycache__"))
    assert len(written) >= 5, "the imports wrote no bytecode: the test did not run as a user's Python"
    status = run(["dvc", "status"], root, env=env).stdout
    assert modified_deps(status) == [], status
    assert "Data and pipelines are up to date." in status, status


def test_a_fresh_clone_of_the_committed_tree_reads_no_dependency_as_modified(tmp_path: Path):
    """The committed dvc.lock was written from a clean tree: a clone lacks only the outputs.

    Folders under data/ hold other stages' outputs (absent in a clone, beside the git-tracked
    metrics.json), so they read modified or deleted there; code, notebooks, benchmarks and params
    must not.
    """
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    status = run(["dvc", "status"], clone).stdout
    assert [d for d in modified_deps(status) if Path(d).parts[0] != "data"] == [], status
    assert "not in cache" in status, status
