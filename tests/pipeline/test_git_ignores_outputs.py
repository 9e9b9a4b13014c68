"""Git ignores every pipeline output before any run, and no input, so `git add -A` never takes one.

DVC adds a `.gitignore` entry for an output when it saves the output, and a `dvc repro` that
fails removes every entry it added in that run (`dvc.repo.scm_context.SCMContext.__call__`),
those of the stages that finished, whose outputs stay on disk and in dvc.lock, too. So the root
.gitignore covers every output path up front: checked here on the pipeline as DVC expands it,
and on a run of a new benchmark that stops on an error halfway.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from dvc.repo import Repo
from dvc.repo.experiments.utils import EXEC_TMP_DIR
from pipeline_support import mock_params

from conftest import GIT, copy_repository, pipeline_env
from support import REPO


def ignored_up_front(paths: list[str], scratch: Path) -> set[str]:
    """Which of `paths` the repository's own ignore files (the root's, .dvc's) cover, in a
    repository holding nothing else: as in a clone before any run, for any benchmark."""
    subprocess.run(["git", "init", "-q", str(scratch)], check=True)
    (scratch / ".dvc").mkdir()
    for name in (".gitignore", ".dvc/.gitignore"):
        shutil.copy(REPO / name, scratch / name)
    done = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=scratch,
                          input="\n".join(paths), capture_output=True, text=True, check=False)
    assert done.returncode in (0, 1), done.stderr
    return set(done.stdout.split())


def test_every_output_is_ignored_up_front_and_no_input_is(tmp_path):
    with Repo(str(REPO)) as repo:
        outs = [out for stage in repo.index.stages for out in stage.outs]
        deps = [dep.def_path for stage in repo.index.stages for dep in stage.deps
                if dep.def_path != "params/pipeline.yaml"]
    cached = sorted({out.def_path for out in outs if out.use_cache})
    in_git = sorted({out.def_path for out in outs if not out.use_cache})
    assert len(cached) > 20 and in_git == ["data/pressure-core/metrics.json"]

    def written(path: str) -> bool:
        """An output, inside one, or a folder holding outputs (it orders a stage after them)."""
        return any(path == o or path.startswith(f"{o}/") or o.startswith(f"{path}/")
                   for o in cached + in_git)

    inputs = sorted({d for d in deps if not written(d)})
    assert {"benchmarks/pressure-core/benchmark.yaml", "labels", "imports"} <= set(inputs)
    # DVC's copies for experiments, under .dvc/tmp/, are ignored too
    copy = f".dvc/tmp/{EXEC_TMP_DIR}/tmpabc/data/pressure-core/gen_metrics"
    ignored = ignored_up_front([*cached, *in_git, *inputs, copy], tmp_path / "scratch")
    assert sorted(set(cached) - ignored) == []
    assert sorted(ignored & {*in_git, *inputs}) == []
    assert copy in ignored


@pytest.mark.slow
def test_a_repro_stopped_by_an_error_leaves_no_output_for_git(tmp_path, pipeline_server):
    """A new benchmark's run that stops when the judge's key is missing: the stages before it
    finished (their outputs are on disk and in dvc.lock), and git sees none of them."""
    root = copy_repository(tmp_path / "repo", pipeline_server.openai_base_url)
    source = (REPO / "benchmarks" / "pressure-core" / "benchmark.yaml").read_text()
    (root / "benchmarks" / "own-study").mkdir()
    (root / "benchmarks" / "own-study" / "benchmark.yaml").write_text(
        source.replace("name: pressure-core", "name: own-study"))
    params = mock_params(pipeline_server.openai_base_url)
    judge = {**params["models"]["smollm2"], "api_key_env": "PB_JUDGE_KEY"}
    params["models"]["judge"] = judge
    params["roles"]["evaluator"] = "judge"
    params["benchmarks"] = ["own-study"]
    params["targets"] = params["validation"]["targets"] = ["smollm2"]
    (root / "params" / "pipeline.yaml").write_text(yaml.safe_dump(params))
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-qm", "own study"], cwd=root, check=True)

    env = {k: v for k, v in pipeline_env().items() if k != "PB_JUDGE_KEY"}
    done = subprocess.run(["dvc", "repro"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    assert done.returncode != 0 and "PB_JUDGE_KEY is not set" in done.stdout + done.stderr, (
        done.stdout[-3000:] + done.stderr[-3000:])
    simulated = root / "data" / "own-study" / "runs" / "smollm2" / "simulate"
    assert (simulated / "conversations.json").is_file() and (simulated / "calls.jsonl").is_file()
    assert "data/own-study/runs/smollm2/simulate" in (root / "dvc.lock").read_text()

    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root,
                            capture_output=True, text=True, check=True).stdout
    added = subprocess.run([*GIT, "add", "-A", "--dry-run"], cwd=root, capture_output=True,
                           text=True, check=True).stdout
    assert status.split() and added.split(), "the run changed nothing git sees: dvc.lock at least"
    for listing in (status, added):
        assert [line for line in listing.splitlines()
                if "data/" in line or "reports/" in line] == [], listing
