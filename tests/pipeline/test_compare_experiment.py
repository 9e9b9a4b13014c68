"""The documented flow on the real pipeline (docs/sharing-and-comparing.md, "Comparing runs"),
on a fresh clone of a committed run, which holds its dvc.lock but none of its outputs: run the
baseline as an experiment, change a target's system prompt in another, then `pressurebench
compare` the two. The commands are the page's own block, run line by line as written. The
clone's study is first committed with the validation studies off: each experiment reruns every
stage from nothing, and the studies' stages are not what a comparison reads."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from pipeline_support import run

from conftest import GIT, enter
from docs_support import recipes

pytestmark = pytest.mark.slow

PAGE = "docs/sharing-and-comparing.md"


def test_the_compare_recipe_runs_as_written_on_a_fresh_clone(
    reproduced_template: Path, tmp_path: Path, monkeypatch
):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(reproduced_template), str(clone)], check=True)
    assert not (clone / ".pbcache").exists() and not (clone / ".dvc" / "cache").exists()
    enter(clone, monkeypatch)
    params_file = clone / "params" / "pipeline.yaml"
    params = yaml.safe_load(params_file.read_text())
    for study in ("generator_bias", "user_model_bias", "evaluator_bias", "judge_probes"):
        params["validation"][study] = []
    params_file.write_text(yaml.safe_dump(params))
    subprocess.run([*GIT, "commit", "-qam", "The validation studies off"], cwd=clone, check=True)
    (recipe,) = [b for b in recipes(PAGE) if "pressurebench compare" in b.body]
    *experiments, compare = recipe.commands()
    assert all(line.startswith("dvc exp run") for line in experiments)
    assert compare.startswith("pressurebench compare")
    for line in experiments:
        run(["bash", "-c", line], clone, timeout=1800)
    status = run(["git", "status", "--porcelain"], clone).stdout

    out = run(["bash", "-c", compare], clone).stdout
    assert "models.smollm2-agreeable.system_prompt" in out
    assert '"Agree with the user."' in out and '"Be brief."' in out
    assert "Differences paired by base scenario" in out
    # the other target's conversations and verdicts were not touched: no change at all
    smollm2 = out.split("-- smollm2 --")[1].split("-- ")[0]
    overall = next(line for line in smollm2.splitlines() if line.startswith("overall"))
    assert "+0.0 pp" in overall
    assert "== cost and time ==" in out and "cost of its calls when made" in out
    # nothing was checked out to read the two runs
    assert run(["git", "status", "--porcelain"], clone).stdout == status
    # The pipeline's index links the comparisons' own index, which lists this one.
    index = (clone / "reports" / "index.html").read_text()
    assert 'href="compare/index.html"' in index and "Run totals" in index
    listing = (clone / "reports" / "compare" / "index.html").read_text()
    assert 'href="baseline__vs__brief.html"' in listing
