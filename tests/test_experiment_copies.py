"""A run in a DVC experiment's temporary copy reads the workspace's keys and uses its cache.

DVC runs `dvc exp run --queue` (then `--run-all`) and `dvc exp run --temp` in a copy it makes
from git under the workspace's `.dvc/tmp/exps/` (`tmpXXXX/`, `standalone/tmpXXXX/` for
`--temp`): the git-ignored `.env` and `.pbcache/` are not in it. The folders below are laid out
as DVC lays them out (`dvc.repo.experiments.executor.local.TempDirExecutor`, whose copy holds
the tracked `.dvc/`); tests/pipeline/test_experiments.py runs the real thing.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import Script
from pressurebench.llm import ModelClient
from pressurebench.params import Params
from pressurebench.workspace import dotenv_files, in_workspace, shared_cache_dir
from support import WAIT_S, tiny_params


def dvc_project(root: Path) -> Path:
    (root / ".dvc").mkdir(parents=True)
    (root / "dvc.yaml").write_text("stages: {}\n")
    return root


@pytest.fixture
def workspace(tmp_path) -> Path:
    return dvc_project(tmp_path / "study")


def queued_copy(workspace: Path) -> Path:
    return dvc_project(workspace / ".dvc" / "tmp" / "exps" / "tmpq1w2e3r4")


def temp_copy(workspace: Path) -> Path:
    return dvc_project(workspace / ".dvc" / "tmp" / "exps" / "standalone" / "tmpa1s2d3f4")


def test_a_queued_or_temporary_copy_belongs_to_its_workspace(workspace):
    assert in_workspace(workspace) is None
    assert in_workspace(queued_copy(workspace)) == workspace.resolve()
    copy = temp_copy(workspace)
    assert in_workspace(copy) == workspace.resolve()
    (copy / "notebooks").mkdir()
    assert in_workspace(copy / "notebooks") == workspace.resolve() / "notebooks"


def test_a_project_in_a_subfolder_of_its_git_repository_maps_to_the_same_subfolder(tmp_path):
    """DVC copies the whole git repository; the DVC project is the copy's subfolder."""
    project = dvc_project(tmp_path / "repo" / "study")
    copy = project / ".dvc" / "tmp" / "exps" / "tmpz9x8c7v6"
    (copy / ".git").mkdir(parents=True)
    dvc_project(copy / "study")
    assert in_workspace(copy / "study") == project.resolve()


def test_dvc_s_own_folders_of_copies_are_in_no_copy(workspace):
    celery = workspace / ".dvc" / "tmp" / "exps" / "celery"
    celery.mkdir(parents=True)
    assert in_workspace(celery) is None
    assert in_workspace(workspace / ".dvc" / "tmp" / "exps") is None


def test_the_cache_directory_of_a_copy_is_the_workspace_s(workspace, tmp_path):
    copy = queued_copy(workspace)
    assert shared_cache_dir(".pbcache", copy) == workspace.resolve() / ".pbcache"
    assert shared_cache_dir(".pbcache", workspace) == Path(".pbcache")
    elsewhere = tmp_path / "caches" / "study"
    assert shared_cache_dir(elsewhere, copy) == elsewhere
    assert dotenv_files(copy) == [copy / ".env", workspace.resolve() / ".env"]
    assert dotenv_files(workspace) == [workspace / ".env"]


def test_a_call_the_workspace_paid_for_is_replayed_in_a_copy_and_back(workspace, monkeypatch):
    script = Script(lambda model_id, request: f"reply to {request.messages[-1]['content']}")
    params = Params.model_validate(tiny_params())
    copy = queued_copy(workspace)

    def ask(where: Path, content: str) -> str:
        monkeypatch.chdir(where)

        async def go():
            async with ModelClient.from_params(params, provider_factory=script.factory()) as client:
                return (await client.chat("target-a", [{"role": "user", "content": content}])).text
        return asyncio.run(go())

    assert ask(workspace, "one") == "reply to one"
    assert ask(copy, "one") == "reply to one"
    assert ask(copy, "two") == "reply to two"
    assert ask(workspace, "two") == "reply to two"
    assert [c.request.messages[-1]["content"] for c in script.calls] == ["one", "two"]
    assert not (copy / ".pbcache").exists()


KEY = "PB_EXPERIMENT_TEST_KEY"
READ_KEY = ("from pressurebench.params import load_dotenv_once; import os; load_dotenv_once(); "
            f"print(os.environ.get({KEY!r}, 'unset'))")


def key_seen(cwd: Path, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k != KEY}
    done = subprocess.run([sys.executable, "-c", READ_KEY], cwd=cwd, env={**base, **env},
                          capture_output=True, text=True, timeout=WAIT_S, check=True)
    return done.stdout.strip()


def test_a_copy_reads_the_workspace_s_env_after_its_environment_and_its_own(workspace):
    """python-dotenv never overrides: the environment first, then the copy's `.env` (as
    `dvc exp run --copy-paths .env` would give it), then the workspace's."""
    (workspace / ".env").write_text(f"{KEY}=from-the-workspace\n")
    copy = queued_copy(workspace)
    assert key_seen(copy) == "from-the-workspace"
    assert key_seen(copy, **{KEY: "exported"}) == "exported"
    (copy / ".env").write_text(f"{KEY}=from-the-copy\n")
    assert key_seen(copy) == "from-the-copy"
    # a folder that is no experiment copy reads its own .env only
    assert key_seen(dvc_project(workspace.parent / "other")) == "unset"
