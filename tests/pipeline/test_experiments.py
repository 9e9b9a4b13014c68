"""docs/experiments.md on the real pipeline, its blocks run as written: a queued sweep of two
settings, read, one applied and committed, the two compared; then a later temporary
experiment and a change in the workspace. Each call is sent to the server exactly once.

The keys are only in the workspace's `.env`, as the docs recommend (never exported), so the
queued and temporary experiments, which DVC runs in copies without git-ignored files, find
them there. Every call answered is one entry of the response cache, so the requests the
server counted equal the entries of the workspace's cache exactly when no call was sent
twice, by an experiment, a later one or the workspace.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from pipeline_support import mock_params, run

from conftest import GIT, MOCK_KEY, copy_repository, pipeline_env
from docs_support import recipes
from mock_providers.mock_llm_server import OPENAI_PATH

pytestmark = pytest.mark.slow

PAGE = "docs/experiments.md"
BENCHMARK, TARGET = "pressure-core", "smollm2"


def tiny_study(root: Path, base_url: str) -> None:
    """The mock params with one target, one sample and the validation studies off: every stage
    of the main run, little to run (the studies' stages are exercised by test_own_benchmark)."""
    params = mock_params(base_url)
    params["targets"] = params["validation"]["targets"] = [TARGET]
    for study in ("generator_bias", "user_model_bias", "evaluator_bias", "judge_probes"):
        params["validation"][study] = []
    params["generation"]["num_samples"] = 1
    (root / "params" / "pipeline.yaml").write_text(yaml.safe_dump(params))
    subprocess.run([*GIT, "commit", "-qam", "A tiny study"], cwd=root, check=True)


def experiments(root: Path) -> dict[int, str]:
    """Each experiment's git reference by its `generation.turns`."""
    refs = subprocess.run(["git", "for-each-ref", "--format=%(refname)", "refs/exps/"], cwd=root,
                          capture_output=True, text=True, check=True).stdout.split()
    found = {}
    for ref in refs:
        parts = ref.split("/")
        if len(parts) != 5:  # refs/exps/<baseline[:2]>/<baseline[2:]>/<name>, not DVC's own
            continue
        params = subprocess.run(["git", "show", f"{ref}:params/pipeline.yaml"], cwd=root,
                                capture_output=True, text=True, check=True).stdout
        found[yaml.safe_load(params)["generation"]["turns"]] = ref
    return found


def cache_entries(root: Path) -> int:
    return sum(1 for _ in (root / ".pbcache").glob("??/*.json"))


def test_a_queued_sweep_then_applying_one_sends_each_call_once(tmp_path, pipeline_server):
    root = copy_repository(tmp_path / "repo", pipeline_server.openai_base_url)
    tiny_study(root, pipeline_server.openai_base_url)
    (root / ".env").write_text(f"PB_MOCK_KEY={MOCK_KEY}\n")
    env = {k: v for k, v in pipeline_env().items() if k != "PB_MOCK_KEY"}
    env |= {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    sweep, show, diff, keep, compare = recipes(PAGE)
    pipeline_server.reset()

    def sent() -> int:
        return pipeline_server.path_counts.get(OPENAI_PATH, 0)

    def shell(line: str, names: dict[int, str]) -> str:
        """A line of the page, its placeholders the experiments of two and three turns."""
        for placeholder, turns in (("<experiment-a>", 2), ("<experiment-b>", 3)):
            if placeholder in line:
                line = line.replace(placeholder, names[turns])
        return run(["bash", "-c", line], root, env=env, timeout=1800).stdout

    for line in sweep.commands():
        shell(line, {})
    refs = experiments(root)
    assert sorted(refs) == [2, 3], run(["dvc", "queue", "status"], root, env=env).stdout
    names = {turns: ref.rsplit("/", 1)[-1] for turns, ref in refs.items()}
    paid = sent()
    assert paid > 0 and paid == cache_entries(root), (paid, cache_entries(root))
    assert not list((root / ".dvc" / "tmp" / "exps").glob("**/.pbcache"))
    # The key stayed in the workspace's .env: not in an experiment's commit (the tests hold
    # it as a constant) nor in any output in the DVC cache.
    for ref in refs.values():
        tree = run(["git", "ls-tree", "-r", "--name-only", ref], root).stdout.split()
        assert ".env" not in tree
        found = subprocess.run(["git", "grep", "-q", MOCK_KEY, ref, "--", ":!tests"], cwd=root,
                               check=False)
        assert found.returncode == 1, f"the key is in experiment {ref}"
    found = subprocess.run(["grep", "-rlF", MOCK_KEY, ".dvc/cache"], cwd=root, check=False)
    assert found.returncode == 1, "the key is in an output"

    # Without a terminal DVC prints the table its pager would show, whole up to 1024 characters.
    changed, chosen = (shell(line, names) for line in show.commands())
    for table in (changed, chosen):
        header = table.splitlines()[1]
        assert "…" not in table and "generation.turns" in header, table
        assert f"targets.{TARGET}.pass_rate" in header and "code_deps" not in header, table
        assert names[2] in table and names[3] in table, table
    (differences,) = (shell(line, names) for line in diff.commands())
    assert "generation.turns" in differences and f"targets.{TARGET}.pass_rate" in differences

    applied, repro, commit = keep.commands()
    shell(applied, names)
    assert yaml.safe_load((root / "params" / "pipeline.yaml").read_text())["generation"]["turns"] == 3
    assert "Data and pipelines are up to date." in shell(repro, names)
    shell(commit, names)
    committed = run(["git", "show", "--name-only", "--format=", "HEAD"], root).stdout.split()
    assert sorted(committed) == ["data/pressure-core/metrics.json", "dvc.lock", "params/pipeline.yaml"]
    (compared,) = (shell(line, names) for line in compare.commands())
    assert f"-- {TARGET} --" in compared and "generation.turns" in compared

    # A later experiment in a temporary copy, and the workspace back at two turns: simulate
    # re-runs in each, and its calls are those the first experiment paid for.
    two_turns = "params/pipeline.yaml:generation.turns=2"
    stage = f"simulate@{BENCHMARK}-{TARGET}"
    run(["dvc", "exp", "run", "--temp", "-S", two_turns, stage], root, env=env, timeout=900)
    run(["dvc", "exp", "run", "-S", two_turns, stage], root, env=env, timeout=900)
    manifest = json.loads(
        (root / "data" / BENCHMARK / "runs" / TARGET / "simulate" / "manifest.json").read_text())
    assert manifest["params"]["generation.turns"] == 2 and manifest["cache"]["misses"] == 0
    assert sent() == paid == cache_entries(root)
