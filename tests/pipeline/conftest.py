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
from pipeline_support import mock_params

from support import REPO

VENV_BIN = Path(sys.executable).parent


@pytest.fixture
def repo_copy(tmp_path, mock_server, monkeypatch):
    """The committed-or-staged files of the repository, copied, as a fresh git repo with DVC."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                           cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    root = tmp_path / "repo"
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file():
            dst = root / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    (root / "params" / "pipeline.yaml").write_text(yaml.safe_dump(mock_params(mock_server.openai_base_url)))
    mock_server.api_key = "mock-key-for-pipeline-tests"
    monkeypatch.setenv("PB_MOCK_KEY", "mock-key-for-pipeline-tests")
    monkeypatch.setenv("PATH", f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "copy"], cwd=root, check=True)
    monkeypatch.chdir(root)
    return root
