"""The README's flow on the real pipeline: change a target's system prompt in a DVC experiment,
then `pressurebench compare` the committed run with it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_support import run

from pressurebench import cli

pytestmark = pytest.mark.slow

PROMPT = "params/pipeline.yaml:models.smollm2-agreeable.system_prompt=Be brief."


def test_compare_the_committed_run_with_an_experiment(reproduced_repo: Path, capsys):
    root = reproduced_repo
    run(["dvc", "exp", "run", "-n", "brief", "-S", PROMPT], root)
    status = run(["git", "status", "--porcelain"], root).stdout

    assert cli.main(["compare", "HEAD", "brief"]) == 0
    out = capsys.readouterr().out
    assert "models.smollm2-agreeable.system_prompt" in out
    assert '"Agree with the user."' in out and '"Be brief."' in out
    assert "Differences paired by base scenario" in out
    # the other target's conversations and verdicts were not touched: no change at all
    smollm2 = out.split("-- smollm2 --")[1].split("-- ")[0]
    overall = next(line for line in smollm2.splitlines() if line.startswith("overall"))
    assert "+0.0 pp" in overall
    assert "== cost and time ==" in out
    # nothing was checked out to read the two runs
    assert run(["git", "status", "--porcelain"], root).stdout == status
    # The pipeline's index links the comparisons' own index, which lists this one.
    index = (root / "reports" / "index.html").read_text()
    assert 'href="compare/index.html"' in index and "Run totals" in index
    listing = (root / "reports" / "compare" / "index.html").read_text()
    assert 'href="HEAD__vs__brief.html"' in listing


def test_the_readme_compare_recipe_runs_as_written_on_a_fresh_clone(
    reproduced_template: Path, tmp_path: Path, monkeypatch, capsys
):
    """A clone of the committed run holds its dvc.lock but none of its outputs: the README's
    recipe, as written, runs its baseline and compares it with the experiment."""
    import shlex
    import subprocess

    from conftest import enter
    from support import REPO

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(reproduced_template), str(clone)], check=True)
    assert not (clone / ".pbcache").exists() and not (clone / ".dvc" / "cache").exists()
    enter(clone, monkeypatch)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Comparing runs", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    recipe = [shlex.split(line) for line in block.splitlines() if line.strip()]
    for command in recipe[:-1]:
        assert command[:3] == ["dvc", "exp", "run"], command
        run(command, clone, timeout=1800)
    assert recipe[-1][:2] == ["pressurebench", "compare"]
    assert cli.main(recipe[-1][1:]) == 0
    out = capsys.readouterr().out
    assert f"A = {recipe[-1][2]}" in out and "generation.turns" in out
    assert "== cost and time ==" in out and "cost of its calls when made" in out
