"""`dvc repro` sees every code change: each stage depends on code_deps/<command>.json, which the
`code_deps` stage writes from the whole package and every notebook, and which lists every file
the stage's command can run (its notebook, every package module it can import at any depth, also
inside functions, and the data those modules read)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pressurebench.pipeline.code_deps import DATA_DIRS, PACKAGE, code_files, commands
from support import REPO


def stages() -> dict[str, dict]:
    return {name: stage.get("do", stage)
            for name, stage in yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"].items()}


def command_name(cmd: str) -> str:
    """The code_deps file a stage command reads: its notebook's, else its `-m` module's."""
    notebook = re.search(r"notebooks/(\S+)\.ipynb", cmd)
    if notebook:
        return notebook.group(1)
    module = re.search(r"-m\s+pressurebench\.(\S+)", cmd)
    assert module, f"{cmd!r} runs neither a notebook nor a package module"
    return module.group(1)


def test_the_code_deps_stage_reads_the_whole_package_and_every_notebook():
    stage = stages()["code_deps"]
    assert stage["cmd"].split()[:3] == ["bin/python", "-m", "pressurebench.pipeline.code_deps"]
    assert set(stage["deps"]) == {"src/pressurebench", "notebooks"}
    assert stage["outs"] == ["code_deps"]


def test_every_stage_depends_on_the_code_its_command_runs():
    available = commands(REPO)
    wrong = {}
    for name, stage in stages().items():
        if name == "code_deps":
            continue
        deps = stage.get("deps", [])
        expected = f"code_deps/{command_name(stage['cmd'])}.json"
        code = [d for d in deps if d.startswith(("code_deps", "src/", "notebooks/"))]
        if code != [expected] or command_name(stage["cmd"]) not in available:
            wrong[name] = code
    assert not wrong, f"stages whose code deps are not their command's code_deps file: {wrong}"


def test_a_notebook_command_covers_its_notebook_and_all_it_imports():
    aggregate = code_files(REPO, commands(REPO)["05_aggregate"])
    for path in ("notebooks/05_aggregate.ipynb", "src/pressurebench/pipeline/notebook_run.py",
                 "src/pressurebench/pipeline/notebook_engine.py", "src/pressurebench/stages/aggregate.py",
                 "src/pressurebench/reports/figures.py", "src/pressurebench/reports/templates/notebook.html.j2",
                 "src/pressurebench/stats/bootstrap.py"):
        assert path in aggregate, path
    simulate = code_files(REPO, commands(REPO)["03_simulate"])
    assert "src/pressurebench/prompts/user_system.txt" in simulate
    assert "src/pressurebench/reports/figures.py" not in simulate  # it draws no results figure


@pytest.mark.slow
@pytest.mark.parametrize("name", ["05_aggregate", "03_simulate", "reports.index"])
def test_the_files_cover_what_python_imports_when_the_command_starts(name):
    """What Python itself loads for a command's modules (the dynamic view) lies inside the
    command's files (found by reading the source)."""
    command = commands(REPO)[name]
    listed = set(code_files(REPO, command))
    script = ("import json, sys\n"
              f"for m in {sorted(command.modules)!r}:\n"
              "    try: __import__(m)\n    except ImportError: pass\n"
              "print(json.dumps(sorted(getattr(m, '__file__', None) or '' for m in sys.modules.values())))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", script], cwd=REPO, check=True,
                                       capture_output=True, text=True).stdout)
    package = str(REPO / "src" / PACKAGE)
    ours = {str(Path(f).relative_to(REPO)) for f in loaded if f.startswith(package)}
    assert ours and ours <= listed, sorted(ours - listed)


def test_every_data_file_of_the_package_belongs_to_a_module_that_reads_it():
    package = REPO / "src" / PACKAGE
    folders = [package / folder for folder in DATA_DIRS.values()]
    data = [p for p in package.rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")
            and "__pycache__" not in p.parts]
    assert data
    orphans = [str(p.relative_to(package)) for p in data if not any(f in p.parents for f in folders)]
    assert not orphans, f"data files no module in code_deps.DATA_DIRS reads: {orphans}"
