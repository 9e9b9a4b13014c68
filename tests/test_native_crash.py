"""A stage whose process dies natively (as llama.cpp does on some CPUs) ends in a report that
names the stage, the embedded models and what to try, from the CLI and under DVC alike.

The crash is real: a SIGSEGV delivered to the stage's own process (the CLI's child process,
or the process running the notebook's cells), as a segfault inside llama.cpp would.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import nbformat
import pytest
import yaml

from pressurebench.errors import PressurebenchError
from pressurebench.pipeline.native_crash import EXIT_NATIVE_CRASH
from pressurebench.pipeline.notebook_run import run_notebook
from support import WAIT_S


@pytest.fixture
def local_project(project):
    params = yaml.safe_load(project.params_path.read_text())
    params["models"]["gen"] = {"provider": "local", "model": "smollm2-135m-instruct"}
    project.params_path.write_text(yaml.safe_dump(params))
    return project


def test_cli_stage_killed_by_a_segfault_exits_4_with_a_report(local_project, tmp_path):
    crash = tmp_path / "crash"
    crash.mkdir()
    # Loaded by the child's interpreter at start-up: it dies the way a native crash kills it.
    (crash / "sitecustomize.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n")
    env_python = f"import os; os.environ['PYTHONPATH'] = {str(crash)!r}; "
    proc = subprocess.run(
        [sys.executable, "-c", env_python + "from pressurebench.commands.cli import main; raise SystemExit(main())",
         "run", "gen_metrics", "--benchmark", "tiny"],
        check=False, capture_output=True, text=True, cwd=local_project.root, timeout=WAIT_S,
    )
    assert proc.returncode == EXIT_NATIVE_CRASH, proc.stderr
    assert "stage run gen_metrics tiny died natively (the process was killed by SIGSEGV)" in proc.stderr
    assert "local models: gen" in proc.stderr and "weight_repacking: false" in proc.stderr
    assert "llama.cpp reports" in proc.stderr


def test_a_notebook_whose_process_dies_names_the_stage_and_what_to_try(local_project, tmp_path):
    nb = nbformat.v4.new_notebook(metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    })
    nb.cells = [
        nbformat.v4.new_code_cell("params_path = ''\nbenchmark = ''", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(textwrap.dedent("""
            import os, signal
            os.kill(os.getpid(), signal.SIGSEGV)
        """)),
    ]
    path = tmp_path / "03_simulate.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(PressurebenchError) as err:
        run_notebook(path, local_project.root / "reports" / "tiny" / "03_simulate",
                     {"params_path": str(local_project.params_path), "benchmark": "tiny"})
    message = str(err.value)
    assert "stage 03_simulate tiny died natively (its process was killed by SIGSEGV)" in message
    assert "local models: gen" in message and "weight_repacking: false" in message
