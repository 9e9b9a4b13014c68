"""docs/inspect-and-release.md runs as written: its shell blocks, then its Python blocks, in a
finished run, and what they print or return is what the page says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from docs_support import REPO, blocks, recipes
from pressurebench.paths import inspect_log_file, inspect_logs_dir

PAGE = "docs/inspect-and-release.md"
LOGS = inspect_logs_dir("reports", "tiny")

pytest.importorskip("inspect_ai")
pytest.importorskip("datasets")


def test_the_pages_commands_and_python_blocks_run_as_written(run_dir, tmp_path, monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "HF_DATASETS_CACHE": str(tmp_path / "hf-cache")}
    for block in recipes(PAGE):
        done = subprocess.run(["bash", "-ec", block.body], cwd=run_dir, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, (block.body, done.stderr[-2000:])
    assert (run_dir / inspect_log_file(LOGS, None, "target-a")).is_file()
    assert (run_dir / "reports/tiny/inspect-site/index.html").is_file()
    assert (run_dir / "release/tiny/croissant.json").is_file()
    python = [b for b in blocks(REPO / PAGE) if b.lang == "python"]
    assert len(python) == 3
    scope: dict = {}
    for block in python:
        exec(compile(block.body, PAGE, "exec"), scope)  # the page's own code
    conversations = 2 * 40  # 2 targets x 2 metrics x 5 base scenarios x 2 variants x 2 samples
    assert len(scope["frame"]) == conversations  # both targets' logs of the main arm
    assert scope["conversations"].num_rows == conversations
    assert len(list(scope["records"])) > 0
