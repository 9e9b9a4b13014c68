"""Under CI=true only the skips listed in skips_by_design.py may skip; any other fails by name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import WAIT_S

TESTS = Path(__file__).resolve().parent

SUITE = '''
import pytest
import skips_by_design

skips_by_design.BY_DESIGN["test_suite.py::test_listed"] = "right by design"


@pytest.mark.skipif(True, reason="frobnicator not installed: apt-get install frobnicator")
def test_missing_tool():
    pass


@pytest.mark.skipif(True, reason="right by design")
def test_listed():
    pass


@pytest.mark.xfail(reason="known")
def test_expected_failure():
    assert False


def test_plain():
    pass
'''

CONFTEST = f'''
import sys
sys.path.insert(0, {str(TESTS)!r})
from skips_by_design import *  # noqa: F401,F403  (the hooks)
'''


def run_suite(tmp_path: Path, ci: str | None, *options: str) -> subprocess.CompletedProcess:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "test_module_skip.py").write_text(
        'import pytest\npytest.importorskip("no_such_module_xyz")\n\n\ndef test_never():\n    pass\n')
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider",
                           "-o", "addopts=", "-rfEs", *options, "."],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=WAIT_S, check=False)


# `make test` runs the suite in pytest-xdist workers, where the controller, not the process that
# collected a module, decides the exit status.
@pytest.mark.parametrize("options", [(), ("-n", "2")], ids=["one process", "two workers"])
def test_a_missing_tool_fails_under_ci_and_names_the_tool(tmp_path, options):
    proc = run_suite(tmp_path, "true", *options)
    # A skipif skips while setting the test up, so pytest counts the failure as an error.
    assert proc.returncode == 1, proc.stdout
    assert "1 passed, 2 skipped, 1 xfailed, 1 error" in proc.stdout, proc.stdout
    assert "ERROR test_suite.py::test_missing_tool" in proc.stdout
    assert "frobnicator not installed" in proc.stdout
    assert "FAILED (module) test_module_skip.py: skipped under CI=true" in proc.stdout
    assert "no_such_module_xyz" in proc.stdout


def test_outside_ci_a_missing_tool_skips(tmp_path):
    proc = run_suite(tmp_path, None)
    assert proc.returncode == 0, proc.stdout
    assert "1 passed, 3 skipped, 1 xfailed" in proc.stdout, proc.stdout


def test_every_listed_skip_names_a_test_that_exists():
    from skips_by_design import BY_DESIGN

    repo = TESTS.parent
    for nodeid, reason in BY_DESIGN.items():
        path, name = nodeid.split("::")
        assert reason.strip()
        assert f"def {name}(" in (repo / path).read_text(), nodeid
