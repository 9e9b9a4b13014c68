"""code_deps: the files each command can run, found in the source, and digests that change
exactly for the commands that reach a changed file."""

from __future__ import annotations

import json
from pathlib import Path

from pressurebench.pipeline.code_deps import closure, commands, main, with_data
from support import REPO

NOTEBOOK = {"cells": [{"cell_type": "markdown", "source": ["# A stage"], "metadata": {}},
                      {"cell_type": "code", "source": ["from pressurebench import report\n", "report.show()"],
                       "metadata": {}, "outputs": [], "execution_count": None}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def project(root: Path) -> Path:
    """A repository with a notebook (through notebook_run) and a `python -m` command."""
    write(root, {
        "src/pressurebench/__init__.py": "",
        "src/pressurebench/pipeline/__init__.py": "",
        "src/pressurebench/pipeline/notebook_run.py": "from ..errors import E\n",
        "src/pressurebench/errors.py": "class E(Exception): ...\n",
        "src/pressurebench/report.py": "def show():\n    from .figures import draw\n    return draw()\n",
        "src/pressurebench/figures.py": "def draw(): ...\n",
        "src/pressurebench/prompts.py": "NAMES = ['a']\n",
        "src/pressurebench/prompts/a.txt": "Say a.\n",
        "src/pressurebench/export.py": "from . import prompts\n\nif __name__ == \"__main__\":\n    pass\n",
        "src/pressurebench/unused.py": "def unused(): ...\n",
        "notebooks/01_stage.ipynb": json.dumps(NOTEBOOK),
    })
    return root


def digests(root: Path) -> dict[str, dict]:
    assert main(["code_deps", "--repo", str(root)]) == 0
    return {p.relative_to(root / "code_deps").as_posix(): json.loads(p.read_text())
            for p in (root / "code_deps").rglob("*.json")}


def test_the_closure_follows_imports_inside_functions(tmp_path):
    pkg = tmp_path / "pressurebench"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nfrom ..c import x\nif TYPE_CHECKING:\n    from .. import d\n")
    (pkg / "c.py").write_text("x = 1\n")
    (pkg / "d.py").write_text("")  # imported for annotations only: never run
    found = {p.relative_to(tmp_path).as_posix() for p in closure(tmp_path, {"pressurebench.a"})}
    assert found == {"pressurebench/__init__.py", "pressurebench/a.py", "pressurebench/sub/__init__.py",
                     "pressurebench/sub/b.py", "pressurebench/c.py"}


def test_a_name_from_a_package_face_reaches_the_module_behind_it(tmp_path):
    """`from pressurebench.stats import f` imports `stats/rates.py` when `f` is first used (the
    face's FACE table), not at the import: the closure follows the table."""
    pkg = tmp_path / "pressurebench"
    (pkg / "stats").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "stats" / "__init__.py").write_text('FACE = {"f": "rates"}\n')
    (pkg / "stats" / "rates.py").write_text("def f(): ...\n")
    (pkg / "stats" / "other.py").write_text("def g(): ...\n")
    (pkg / "a.py").write_text("from .stats import f\n")
    found = {p.relative_to(tmp_path).as_posix() for p in closure(tmp_path, {"pressurebench.a"})}
    assert found == {"pressurebench/__init__.py", "pressurebench/a.py",
                     "pressurebench/stats/__init__.py", "pressurebench/stats/rates.py"}


def test_the_closure_includes_every_provider_module_the_registry_imports():
    """The registry finds its providers at run time, so the params' closure names them all."""
    found = {p.name for p in closure(REPO / "src", {"pressurebench.params"})}
    providers = {p.name for p in (REPO / "src" / "pressurebench" / "llm" / "providers").glob("*_provider.py")}
    assert len(providers) >= 3 and providers <= found


def test_one_file_per_notebook_and_per_module_that_runs_as_a_command(tmp_path, monkeypatch):
    root = project(tmp_path)
    monkeypatch.chdir(root)
    assert set(commands(root)) == {"01_stage", "export"}
    written = digests(root)
    assert set(written) == {"01_stage.json", "export.json"}
    stage = written["01_stage.json"]
    assert set(stage["files"]) == {
        "notebooks/01_stage.ipynb", "src/pressurebench/__init__.py",
        "src/pressurebench/pipeline/__init__.py", "src/pressurebench/pipeline/notebook_run.py",
        "src/pressurebench/errors.py", "src/pressurebench/report.py", "src/pressurebench/figures.py"}
    assert set(written["export.json"]["files"]) == {
        "src/pressurebench/__init__.py", "src/pressurebench/export.py", "src/pressurebench/prompts.py",
        "src/pressurebench/prompts/a.txt"}  # the data the prompts module reads


def test_a_change_alters_exactly_the_files_of_the_commands_that_reach_it(tmp_path, monkeypatch):
    root = project(tmp_path)
    monkeypatch.chdir(root)
    before = digests(root)
    changes = {
        "src/pressurebench/figures.py": {"01_stage.json"},  # imported inside a function
        "src/pressurebench/prompts/a.txt": {"export.json"},  # data, not code
        "src/pressurebench/__init__.py": {"01_stage.json", "export.json"},
        "src/pressurebench/unused.py": set(),  # imported by no command
        "notebooks/01_stage.ipynb": {"01_stage.json"},
    }
    for rel, expected in changes.items():
        (root / rel).write_text((root / rel).read_text().replace("}", "} ", 1) + "\n")
        after = digests(root)
        assert {name for name in after if after[name] != before[name]} == expected, rel
        before = after


def test_the_results_depend_on_the_coverage_summary_they_show_beside_each_interval():
    """results.json carries the grid's coverage read from the package's summary, so a new
    `make coverage` re-runs the stages that compute statistics."""
    src = REPO / "src"
    found = {p.relative_to(src).as_posix()
             for p in with_data(src, closure(src, {"pressurebench.stats.results"}))}
    assert "pressurebench/stats/coverage/interval_coverage.json" in found
    assert "pressurebench/stats/coverage/capitulation_coverage.json" in found
