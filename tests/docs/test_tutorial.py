"""The tutorial (docs/tutorial.md) runs as written, in a fresh clone, against servers as strict as
the real APIs.

Its files are written where their blocks' titles say, and its shell blocks run one line at a
time, in order, through the installed `pressurebench` and `dvc` commands. The only thing added
is where the official SDKs send their requests: OPENAI_BASE_URL and ANTHROPIC_BASE_URL
(variables both SDKs read) point at the mock server, which refuses what the real APIs refuse
(each rule cited in tests/llm/test_provider_rules.py). The mock accepts any key: the
tutorial's `.env` holds placeholders, as a reader's copy of it would before they paste their
own. What the page says of the run is then checked against what the run wrote.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from docs_support import DOCS, blocks, recipes
from mock_providers import MockLLMServer, planning_responder
from pressurebench.io import read_artifact
from pressurebench.paths import Layout
from pressurebench.stats.interval_rules import DIFFERENCE, GAP, RATE
from pressurebench.stats.results import Results
from support import WAIT_S, fresh_clone

pytestmark = pytest.mark.slow

TUTORIAL = DOCS / "tutorial.md"
VENV_BIN = Path(sys.executable).parent
MODELS = ("gpt-5.4-mini", "claude-sonnet-4-6", "gpt-4.1-mini", "claude-haiku-4-5")
BENCHMARK = "homework-help"
PLANNED = 5  # generation.scenarios_per_metric in the tutorial's params


def run_tutorial(root: Path, server: MockLLMServer) -> list[tuple[str, str]]:
    """Write the tutorial's files and run its commands; each command with what it printed."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{env['PATH']}",
               OPENAI_BASE_URL=server.openai_base_url,
               ANTHROPIC_BASE_URL=server.anthropic_base_url)
    ran = []
    for block in blocks(TUTORIAL):
        if block.title:
            path = root / block.title
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.body + "\n", encoding="utf-8")
        elif block.lang == "bash":
            for command in block.commands():
                done = subprocess.run(["bash", "-c", command], check=False, cwd=root, env=env,
                                      capture_output=True, text=True, timeout=WAIT_S * 3)
                assert done.returncode == 0, (
                    f"`{command}` exited {done.returncode}:\n{done.stdout[-3000:]}\n"
                    f"{done.stderr[-3000:]}")
                ran.append((command, done.stdout))
    return ran


def readme_recipe() -> list[str]:
    """README.md's "Your own study" commands, with the tutorial's file for the placeholder."""
    (block,) = [b for b in recipes("README.md") if "pressurebench use" in b.body]
    return [c.replace("<your-study>", "homework") for c in block.commands()]


def model_calls(server: MockLLMServer) -> int:
    return sum(e.path.endswith(("/chat/completions", "/messages")) for e in server.request_log)


def test_the_tutorial_goes_from_a_benchmark_to_a_paper_table_through_the_pipeline(tmp_path):
    page = " ".join(TUTORIAL.read_text(encoding="utf-8").split())  # its text, line breaks aside
    root = fresh_clone(tmp_path / "clone")
    with MockLLMServer(api_key=None, models=MODELS) as server:
        # Landmarks on distinct turns, as a model asked for a plan writes them: no scenario
        # is lost in generation, so the design is the one the page describes.
        server.responder = planning_responder
        ran = run_tutorial(root, server)

    commands = [c for c, _ in ran]
    assert commands[:4] == ["pressurebench use params/homework.yaml", "pressurebench check",
                            "pressurebench estimate", "dvc repro"]
    assert readme_recipe() == commands[:4]  # the README's summary is the path run here
    said = dict(ran)
    assert "every endpoint answers" in said["pressurebench check"]
    refused = [(e.model, e.status) for e in server.request_log if e.status >= 400]
    assert not refused, refused
    assert {e.model for e in server.request_log if e.model} == set(MODELS)
    calls = model_calls(server)
    stated = int(re.search(r"about ([\d,]+) model calls", page).group(1).replace(",", ""))
    assert 0.75 * stated <= calls <= 1.25 * stated, calls  # "about", as the page says

    # The pipeline ran every stage and left nothing to do.
    status = subprocess.run([str(VENV_BIN / "dvc"), "status"], cwd=root, capture_output=True,
                            text=True, check=True).stdout
    assert "Data and pipelines are up to date." in status, status
    reports = root / "reports" / BENCHMARK
    for report in ("aggregate/05_aggregate.html", "validation/evaluator/bias",
                   "validation/probes/bias", "export/index.json"):
        assert (reports / report).exists(), report
    assert (root / "reports" / "index.html").is_file()
    assert (reports / "transcripts.html").is_file()

    # The paper table, as the page shows it.
    table = reports / "export" / "tables" / "pass_rates.tex"
    latex = table.read_text(encoding="utf-8")
    assert "\\begin{table}" in latex and "\\toprule" in latex and "\\caption" in latex

    # What the page says of the intervals at this design, from the rules and from the run.
    assert RATE.pooled <= PLANNED and RATE.single <= PLANNED and DIFFERENCE.pooled <= PLANNED
    assert GAP.pooled <= PLANNED
    flat = " ".join(page.split())
    assert GAP.pooled == DIFFERENCE.pooled and (
        f"a rate needs {RATE.single} base scenarios per metric, a difference or a gap "
        f"{DIFFERENCE.pooled}") in flat
    results = read_artifact(root / Layout("data", BENCHMARK).results_file, Results)
    for target, found in results.targets.items():
        assert found.overall.ci_low is not None, (target, found.overall.reason)
        assert found.overall.n_clusters == 2 * PLANNED
    kinds = {entry.interval: entry for entry in results.intervals}
    for kind in ("overall rate", "rate of a metric", "difference between targets",
                 "demographic gap"):
        assert kinds[kind].reason is None, kinds[kind]
    rows = list(csv.DictReader(io.StringIO((table.parent / "pass_rates.csv").read_text())))
    per_metric = [r for r in rows if r["scope"] in ("metric", "metric type")]
    assert len(per_metric) == 8, per_metric
    assert all(r["ci_low"] for r in rows), rows

    # "At the design below ... conversations per target", as the page counts them.
    simulated = json.loads((root / Layout("data", BENCHMARK).manifest_file(
        "simulate", "gpt-4-1-mini")).read_text())
    assert simulated["counts"]["conversations"] == 40
    assert "2 metrics × 5 × 2 × 2 = 40 conversations per target" in page

    # "this one's estimate is about $N", under its cap: no warning that the cap would stop it.
    priced = said["pressurebench estimate"]
    total = next(line for line in priced.splitlines() if line.startswith("total"))
    estimated = float(re.search(r"this one's estimate is about \$([\d.]+)", page).group(1))
    assert 0.75 * estimated <= float(total.split()[-2]) <= 1.25 * estimated, total
    assert "warn" not in priced
