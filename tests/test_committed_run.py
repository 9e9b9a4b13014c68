"""The first `make repro` of a clone says why it wrote other numbers than the committed run.

The embedded model's floating point differs between CPUs, so a clone's cold run (its call
records are not in git) writes another `dvc.lock` and other metrics; `git status` shows them
modified. `pressurebench.commands.committed_run` names the stages and rates that differ and
the reason, and keeps quiet when nothing differs or when the study itself was changed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from pressurebench.commands.committed_run import note
from support import REPO, tiny_params

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]


def lock(md5: str) -> dict:
    return {"schema": "2.0", "stages": {
        "gen_metrics@b": {"cmd": "bin/python -m x", "outs": [
            {"path": "data/b/gen_metrics", "md5": f"{md5}.dir", "size": 10, "nfiles": 2}]},
        "code_deps": {"cmd": "bin/python -m y", "outs": [
            {"path": "code_deps", "md5": "c.dir", "size": 1, "nfiles": 1}]},
    }}


def write_params(root: Path, generator: dict) -> None:
    """Params whose generator is `generator` (the other models are API models)."""
    params = tiny_params()
    params["models"]["gen"] = generator
    (root / "params" / "pipeline.yaml").write_text(yaml.safe_dump(params))


def metrics(rate: float) -> str:
    return json.dumps({"targets": {"smollm2": {"pass_rate": rate, "n": 16}}}, indent=1)


@pytest.fixture
def committed(tmp_path) -> Path:
    """A repository whose committed run is the default study's (an embedded model)."""
    (tmp_path / "params").mkdir()
    write_params(tmp_path, {"provider": "local", "model": "smollm2-135m-instruct"})
    (tmp_path / "data" / "b").mkdir(parents=True)
    (tmp_path / "data" / "b" / "metrics.json").write_text(metrics(0.5625))
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(lock("aaa")))
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "run"], cwd=tmp_path, check=True)
    return tmp_path


def rerun_on_another_cpu(root: Path) -> None:
    (root / "dvc.lock").write_text(yaml.safe_dump(lock("bbb")))
    (root / "data" / "b" / "metrics.json").write_text(metrics(0.625))


def test_a_run_of_the_committed_study_with_other_outputs_says_why(committed):
    rerun_on_another_cpu(committed)
    said = note(committed)
    assert said is not None
    assert "for 1 of its stages (gen_metrics@b)" in said
    assert "dvc.lock and data/b/metrics.json as modified" in said
    assert "floating point with the kernels this CPU has" in said
    assert "smollm2 62.5% (committed 56.2%)" in said
    assert "git checkout dvc.lock data/b/metrics.json" in said
    assert "docs/sharing-and-comparing.md" in said


def test_only_the_files_that_differ_are_named(committed):
    """Other call records can make the very same rates: then only dvc.lock is modified."""
    (committed / "dvc.lock").write_text(yaml.safe_dump(lock("bbb")))
    said = note(committed)
    assert said is not None
    assert "`git status` shows dvc.lock as modified" in said
    assert "metrics.json" not in said and "git checkout dvc.lock`" in said


def test_nothing_is_said_when_the_run_wrote_what_git_holds(committed):
    assert note(committed) is None


def test_nothing_is_said_when_the_study_itself_changed(committed):
    rerun_on_another_cpu(committed)
    params = committed / "params" / "pipeline.yaml"
    params.write_text(params.read_text() + "targets: [smollm2]\n")
    assert note(committed) is None


def test_api_models_are_named_as_the_cause_instead(committed):
    write_params(committed, {"provider": "openai", "model": "gpt-4.1-mini"})
    subprocess.run([*GIT, "commit", "-qam", "api"], cwd=committed, check=True)
    rerun_on_another_cpu(committed)
    said = note(committed)
    assert said is not None and "dvc pull" in said and "CPU" not in said


def test_make_repro_ends_with_the_note():
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    done = subprocess.run(["make", "-n", "-W", ".venv/.installed-stamp", "repro"], cwd=REPO,
                          capture_output=True, text=True, check=True, env=env)
    commands = done.stdout.strip().splitlines()
    assert commands[-2:] == ["dvc repro", ".venv/bin/python -m pressurebench.commands.committed_run"]
