"""The documented flow on the real pipeline (docs/sharing-and-comparing.md, "Comparing runs"):
change a target's system prompt in a DVC experiment, then `pressurebench compare` the committed
run with it. The commands are the page's own block, run line by line as written."""

from __future__ import annotations

from pathlib import Path

import pytest
from pipeline_support import run

from docs_support import recipes

pytestmark = pytest.mark.slow

PAGE = "docs/sharing-and-comparing.md"


def test_compare_the_committed_run_with_an_experiment(reproduced_repo: Path):
    root = reproduced_repo
    (recipe,) = [b for b in recipes(PAGE) if "pressurebench compare" in b.body]
    experiment, compare = recipe.commands()
    assert experiment.startswith("dvc exp run") and compare.startswith("pressurebench compare")
    run(["bash", "-c", experiment], root)
    status = run(["git", "status", "--porcelain"], root).stdout

    out = run(["bash", "-c", compare], root).stdout
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
