"""`pressurebench use FILE`: one step points `dvc repro` at a study's own params file.

DVC reads the pipeline's params from the file dvc.yaml names (`vars: - params/pipeline.yaml`),
resolving `${...}` and `matrix:` from the file itself before any pressurebench code runs
(https://dvc.org/doc/user-guide/project-structure/dvcyaml-files#templating). A short params
file copied over it stopped `dvc repro` with "Could not find 'validation.targets'" until
`check` had completed it; `use` completes the study's file and links params/pipeline.yaml to
it, so an edit of the study's file is what DVC reads next.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import yaml
from dvc.repo import Repo

from pressurebench.commands.cli import main
from pressurebench.interop.importing import declare
from pressurebench.params import load_params
from support import REPO

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
# A study's params as a researcher writes them: no key with a default.
STUDY = {
    "models": {"gpt-4-1-mini": {"provider": "openai", "model": "gpt-4.1-mini",
                                "api_key_env": "OPENAI_API_KEY"},
               "claude-haiku-4-5": {"provider": "anthropic", "model": "claude-haiku-4-5",
                                    "api_key_env": "ANTHROPIC_API_KEY"}},
    "roles": {"generator": "claude-haiku-4-5", "user": "claude-haiku-4-5",
              "evaluator": "gpt-4-1-mini"},
    "targets": ["gpt-4-1-mini", "claude-haiku-4-5"],
    "benchmarks": ["pressure-core"],
}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """dvc.yaml, the params and the benchmarks of the repository, committed to a scratch git
    repository with DVC."""
    for rel in ("dvc.yaml", "params", "benchmarks", ".dvc"):
        (shutil.copytree if (REPO / rel).is_dir() else shutil.copy)(REPO / rel, tmp_path / rel)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "repo"], cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params" / "homework.yaml").write_text(
        "# my study\n" + yaml.safe_dump(STUDY, sort_keys=False))
    return tmp_path


def dvc_stages() -> set[str]:
    """The stages as DVC expands them from params/pipeline.yaml."""
    with Repo(".") as dvc:
        return {s.addressing for s in dvc.index.stages}


def test_use_links_the_pipeline_params_to_the_study_and_dvc_expands_it(repo, capsys):
    assert main(["use", "params/homework.yaml"]) == 0
    out = capsys.readouterr().out
    pipeline = repo / "params" / "pipeline.yaml"
    assert pipeline.is_symlink() and os.readlink(pipeline) == "homework.yaml"
    assert "now links to params/homework.yaml" in out and "validation.targets" in out
    assert "all " in out and "params its stages watch are in params/homework.yaml" in out
    written = (repo / "params" / "homework.yaml").read_text()
    assert written.startswith("# my study\n") and "# default, written by pressurebench" in written
    assert load_params(pipeline).validation.targets == STUDY["targets"]
    stages = dvc_stages()
    assert "simulate@pressure-core-claude-haiku-4-5" in stages

    # An edit of the study's file is what DVC reads: no step in between.
    study = yaml.safe_load((repo / "params" / "homework.yaml").read_text())
    study["targets"] = ["gpt-4-1-mini"]
    study["validation"]["targets"] = ["gpt-4-1-mini"]
    (repo / "params" / "homework.yaml").write_text(yaml.safe_dump(study))
    stages = dvc_stages()
    assert "simulate@pressure-core-gpt-4-1-mini" in stages
    assert "simulate@pressure-core-claude-haiku-4-5" not in stages


def test_a_short_file_copied_over_the_pipeline_params_does_not_parse_but_one_used_does(repo):
    """What `use` replaces: the copy over the default that DVC refused."""
    shutil.copy(repo / "params" / "homework.yaml", repo / "params" / "pipeline.yaml")
    with pytest.raises(Exception, match="Could not find 'validation"):
        dvc_stages()
    subprocess.run(["git", "checkout", "-q", "params/pipeline.yaml"], cwd=repo, check=True)
    assert main(["use", "params/homework.yaml"]) == 0
    assert dvc_stages()


def test_writes_to_the_pipeline_params_go_into_the_study_and_keep_the_link(repo):
    assert main(["use", "params/homework.yaml"]) == 0
    pipeline = repo / "params" / "pipeline.yaml"
    params = load_params(pipeline)
    entry = {"provider": "imported", "model": "ext",
             "imported": {"pressure-core": {"sources": ["chats.jsonl"], "conversations": 2,
                                            "sha256": "0" * 64}}}
    declare(pipeline, params, "ext", entry)  # what `pressurebench import` writes
    assert pipeline.is_symlink()
    assert "ext" in yaml.safe_load((repo / "params" / "homework.yaml").read_text())["targets"]


def test_use_refuses_to_replace_uncommitted_changes_of_the_pipeline_params(repo, capsys):
    pipeline = repo / "params" / "pipeline.yaml"
    edited = pipeline.read_text() + "# my own change\n"
    pipeline.write_text(edited)
    assert main(["use", "params/homework.yaml"]) == 2
    err = capsys.readouterr().err
    assert "params/pipeline.yaml: holds changes git has not committed" in err
    assert "mv params/pipeline.yaml params/mine.yaml" in err
    assert not pipeline.is_symlink() and pipeline.read_text() == edited
    # Nothing was written into the study's file either.
    assert "default, written by" not in (repo / "params" / "homework.yaml").read_text()


def test_use_switches_from_one_study_to_another_and_git_brings_the_shipped_params_back(repo):
    shutil.copy(repo / "params" / "homework.yaml", repo / "params" / "other.yaml")
    assert main(["use", "params/homework.yaml"]) == 0
    assert main(["use", "params/other.yaml"]) == 0
    assert os.readlink(repo / "params" / "pipeline.yaml") == "other.yaml"
    subprocess.run(["git", "checkout", "-q", "params/pipeline.yaml"], cwd=repo, check=True)
    assert not (repo / "params" / "pipeline.yaml").is_symlink()
    assert (repo / "params" / "pipeline.yaml").read_text() == (
        REPO / "params" / "pipeline.yaml").read_text()


def test_use_refuses_a_file_outside_the_repository_or_an_invalid_one(repo, tmp_path, capsys):
    outside = tmp_path.parent / "outside.yaml"
    outside.write_text(yaml.safe_dump(STUDY))
    assert main(["use", str(outside)]) == 2
    assert "lies outside the repository" in capsys.readouterr().err
    bad = {**STUDY, "targets": ["gpt-4-1-mini", "no-such-model"]}
    (repo / "params" / "bad.yaml").write_text(yaml.safe_dump(bad))
    assert main(["use", "params/bad.yaml"]) == 2
    assert "params/bad.yaml: targets[1]: unknown model id 'no-such-model'" in capsys.readouterr().err
    assert not (repo / "params" / "pipeline.yaml").is_symlink()
