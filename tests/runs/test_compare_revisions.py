"""Runs named by a git revision or a DVC experiment are read from git and the DVC cache, never
from the working tree: the `dvc exp run -S ...` then `pressurebench compare` flow of the README."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from run_data import write_run

from pressurebench.commands import cli
from stats_support.synthetic import synthetic_scores

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
    assert "generation.turns" in out and "cluster-t, paired" in out
    assert not (tmp_path / "data").exists()
    assert run(tmp_path, "git", "status", "--porcelain") == status + "?? reports/\n"
    assert (tmp_path / "reports" / "compare" / "HEAD__vs__more-turns.html").is_file()
