"""A temporary copy of the repository whose params point every model at a mock server.

The notebooks run in real kernels and DVC runs real commands, so the mock runs
in a thread of the test process and is reached over loopback.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pipeline_support import mock_params, run

from support import GIT, fresh_clone

VENV_BIN = Path(sys.executable).parent


MOCK_KEY = "mock-key-for-pipeline-tests"


@pytest.fixture(scope="session")
def pipeline_server():
    """One mock server for every pipeline test: its URL is in the params DVC hashes, so a
    reproduced copy stays up to date only against the same server."""
    from mock_providers import MockLLMServer

    with MockLLMServer(api_key=MOCK_KEY) as server:
        yield server


def pipeline_env() -> dict[str, str]:
    return {**os.environ, "PB_MOCK_KEY": MOCK_KEY,
            "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}


def copy_repository(root: Path, base_url: str) -> Path:
    """The committed-or-staged files of the repository, copied to `root` as a fresh git repo,
    with params pointing every model at `base_url`."""
    def mock(copy: Path) -> None:
        (copy / "params" / "pipeline.yaml").write_text(yaml.safe_dump(mock_params(base_url)))

    return fresh_clone(root, mock)


def enter(root: Path, monkeypatch) -> Path:
    for key, value in pipeline_env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def repo_copy(tmp_path, pipeline_server, monkeypatch):
    """A fresh copy of the repository (nothing run yet), as a git repo with DVC."""
    return enter(copy_repository(tmp_path / "repo", pipeline_server.openai_base_url), monkeypatch)


@pytest.fixture(scope="session")
def reproduced_template(tmp_path_factory, pipeline_server) -> Path:
    """A copy after a cold `dvc repro`, committed as a user would: made once per session, since
    the cold run is the slowest step of the pipeline tests."""
    root = copy_repository(tmp_path_factory.mktemp("reproduced") / "repo",
                           pipeline_server.openai_base_url)
    run(["dvc", "repro"], root, env=pipeline_env())
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-qm", "reproduced"], cwd=root, check=True)
    return root


@pytest.fixture
def reproduced_repo(reproduced_template, tmp_path, monkeypatch):
    """A private copy of `reproduced_template` (data, DVC and response caches included), so a
    test can change params and code without touching another's."""
    root = tmp_path / "repo"
    shutil.copytree(reproduced_template, root, symlinks=True)
    return enter(root, monkeypatch)
