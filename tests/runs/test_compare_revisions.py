"""Runs named by a git revision or a DVC experiment are read from git and the DVC cache, never
from the working tree: the `dvc exp run -S ...` then `pressurebench compare` flow of
docs/sharing-and-comparing.md (tests/pipeline/test_compare_experiment.py runs that page's
recipe as written on the real pipeline)."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest
import yaml
from run_data import write_run

from pressurebench.commands import cli
from pressurebench.stats.sweeps.synthetic import synthetic_scores

STAGE = """\
stages:
  collect:
    cmd: >-
      python -c "import shutil, yaml;
      t = yaml.safe_load(open('params/pipeline.yaml'))['generation']['turns'];
      shutil.copytree(f'fixtures/run{t}', 'data')"
    deps: [fixtures]
    params:
      - params/pipeline.yaml:
          - generation.turns
    outs: [data]
"""


def run(cwd, *args):
    return subprocess.run(args, cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.mark.slow
def test_compare_a_commit_with_a_dvc_experiment_from_the_cache(tmp_path, monkeypatch, capsys):
    from support import tiny_params

    frame = synthetic_scores(target_rates={"a": 0.5, "b": 0.6}, metrics=4, base_per_metric=8,
                             samples=1, seed=4)
    write_run(tmp_path / "fixtures" / "run2", frame[frame.target == "a"].assign(target="t1"))
    write_run(tmp_path / "fixtures" / "run3", frame[frame.target == "b"].assign(target="t1"),
              turns=3)
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "pipeline.yaml").write_text(
        yaml.safe_dump(tiny_params(generation={**tiny_params()["generation"], "turns": 2}))
    )
    (tmp_path / "dvc.yaml").write_text(STAGE)
    dvc = [sys.executable, "-m", "dvc"]
    run(tmp_path, "git", "init", "-q")
    run(tmp_path, "git", "config", "user.email", "t@example.org")
    run(tmp_path, "git", "config", "user.name", "t")
    run(tmp_path, *dvc, "init", "-q")
    run(tmp_path, *dvc, "repro", "-q")
    run(tmp_path, "git", "add", "-A")
    run(tmp_path, "git", "commit", "-qm", "baseline")
    run(tmp_path, *dvc, "exp", "run", "-q", "-n", "more-turns",
        "-S", "params/pipeline.yaml:generation.turns=3")
    # Only the cache holds the runs now; the working tree is not checked out to read them.
    subprocess.run(["rm", "-rf", str(tmp_path / "data")], check=True)
    status = run(tmp_path, "git", "status", "--porcelain")

    monkeypatch.chdir(tmp_path)
    assert cli.main(["compare", "HEAD", "more-turns"]) == 0
    out = capsys.readouterr().out
    assert "A = HEAD" in out and "B = more-turns" in out
    assert "generation.turns" in out and "cluster-t MOVER, paired" in out
    assert not (tmp_path / "data").exists()
    assert run(tmp_path, "git", "status", "--porcelain") == status + "?? reports/\n"
    assert (tmp_path / "reports" / "compare" / "HEAD__vs__more-turns.html").is_file()


def committed_study(root):
    """A repository whose run (turns 2) is committed with its dvc.lock, as a project ships."""
    from support import tiny_params

    frame = synthetic_scores(target_rates={"a": 0.5, "b": 0.6}, metrics=4, base_per_metric=8,
                             samples=1, seed=4)
    write_run(root / "fixtures" / "run2", frame[frame.target == "a"].assign(target="t1"))
    write_run(root / "fixtures" / "run3", frame[frame.target == "b"].assign(target="t1"),
              turns=3)
    (root / "params").mkdir()
    (root / "params" / "pipeline.yaml").write_text(
        yaml.safe_dump(tiny_params(generation={**tiny_params()["generation"], "turns": 2}))
    )
    (root / "dvc.yaml").write_text(STAGE)
    run(root, "git", "init", "-q")
    run(root, "git", "config", "user.email", "t@example.org")
    run(root, "git", "config", "user.name", "t")
    run(root, sys.executable, "-m", "dvc", "init", "-q")
    run(root, sys.executable, "-m", "dvc", "repro", "-q")
    run(root, "git", "add", "-A")
    run(root, "git", "commit", "-qm", "the shipped run")


def fresh_clone(tmp_path):
    """A clone of a committed study: its dvc.lock, none of its outputs in the DVC cache."""
    committed_study(tmp_path / "origin")
    subprocess.run(["git", "clone", "-q", str(tmp_path / "origin"), str(tmp_path / "clone")],
                   check=True)
    clone = tmp_path / "clone"
    run(clone, "git", "config", "user.email", "t@example.org")
    run(clone, "git", "config", "user.name", "t")
    assert not (clone / "data").exists() and not (clone / ".dvc" / "cache").exists()
    return clone


def follow(clone, monkeypatch, command: list[str]) -> int:
    """Run one documented command in `clone`: dvc and git as processes, pressurebench here."""
    if command[0] == "pressurebench":
        monkeypatch.chdir(clone)
        return cli.main(command[1:])
    program = [sys.executable, "-m", "dvc"] if command[0] == "dvc" else [command[0]]
    done = subprocess.run([*program, *command[1:]], cwd=clone, capture_output=True, check=False)
    return done.returncode


@pytest.mark.slow
def test_a_baseline_missing_from_a_fresh_clones_cache_is_one_line_saying_how_to_make_it(
    tmp_path, monkeypatch, capsys
):
    """`compare HEAD turns3` right after `dvc exp run` on a fresh clone: HEAD's outputs were
    never made here. The error says in one line how to make the baseline, and doing so works."""
    clone = fresh_clone(tmp_path)
    set_turns = ["dvc", "exp", "run", "-n", "turns3", "-S",
                 "params/pipeline.yaml:generation.turns=3"]
    assert follow(clone, monkeypatch, set_turns) == 0
    assert follow(clone, monkeypatch, ["pressurebench", "compare", "HEAD", "turns3"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "a fresh clone's DVC cache holds no outputs of HEAD" in err
    advice = err.split("make the baseline with `", 1)[1].split("`", 1)[0]
    assert advice == "git stash && dvc exp run -n baseline"
    for command in advice.split(" && "):
        assert follow(clone, monkeypatch, shlex.split(command)) == 0, command
    assert follow(clone, monkeypatch, ["pressurebench", "compare", "baseline", "turns3"]) == 0
    out = capsys.readouterr().out
    assert "generation.turns" in out and "cluster-t MOVER, paired" in out
