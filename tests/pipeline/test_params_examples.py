"""Every params file under `params/examples/` runs as shipped, the way its header says to use
it: copied to a file of the study's own and chosen with `pressurebench use`, `pressurebench
check` passes (it asks the mock servers for their model lists, answered as the services answer
them) and `dvc repro` runs every stage.

The examples name no base URL, as a user writes them; the official SDKs' OPENAI_BASE_URL,
ANTHROPIC_BASE_URL and GOOGLE_GEMINI_BASE_URL point them at the mock server, which refuses
every request the real APIs refuse. A model an example does not price is priced from the
price table: its cost files hold what the table bills for the usage the server returned.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from pipeline_support import run

from mock_providers import default_responder, planning_responder
from pressurebench.io import read_artifact
from pressurebench.params import load_params
from pressurebench.paths import Layout
from pressurebench.schemas import ConversationsFile, ScoresFile
from pressurebench.stats import methods
from pressurebench.stats.interval_rules import RATE, with_margin
from pressurebench.stats.results import Results
from pressurebench.stats.sweeps.common import LOW
from support import REPO

pytestmark = pytest.mark.slow

EXAMPLES = sorted((REPO / "params" / "examples").glob("*.yaml"))


def test_there_are_examples_to_run():
    assert EXAMPLES


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_a_shipped_example_passes_check_and_runs_dvc_repro(example: Path, repo_copy: Path,
                                                           pipeline_server, monkeypatch):
    root = repo_copy
    shipped = yaml.safe_load(example.read_text())
    served = pipeline_server.models
    pipeline_server.models = tuple(spec["model"] for spec in shipped["models"].values())
    pipeline_server.responder = planning_responder
    try:
        shutil.copy(example, root / "params" / "mine.yaml")
        run(["pressurebench", "use", "params/mine.yaml"], root, env=dict(os.environ))
        for var in {spec["api_key_env"] for spec in shipped["models"].values()}:
            monkeypatch.setenv(var, pipeline_server.api_key)
        monkeypatch.setenv("OPENAI_BASE_URL", pipeline_server.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", pipeline_server.anthropic_base_url)
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", pipeline_server.gemini_base_url)
        env = dict(os.environ)
        checked = run(["pressurebench", "check"], root, env=env)
        assert "every endpoint answers" in checked.stdout, checked.stdout
        assert "Could not find" not in checked.stderr
        run(["dvc", "repro"], root, env=env, timeout=1500)
    finally:
        pipeline_server.models = served
        pipeline_server.responder = default_responder

    params = load_params(root / "params" / "pipeline.yaml")
    for benchmark in params.benchmarks:
        layout = Layout(root / "data", benchmark)
        for target in params.targets:
            conversations = read_artifact(layout.conversations_file(target), ConversationsFile).rows
            scores = read_artifact(layout.scores_file(target), ScoresFile).rows
            assert conversations and all(c.status == "ok" for c in conversations)
            assert scores and all(s.status == "ok" for s in scores)
        results = read_artifact(layout.results_file, Results)
        _shows_what_its_design_supports(results, params.generation.scenarios_per_metric)
    _costs_are_what_the_price_table_bills(root, params)


def _costs_are_what_the_price_table_bills(root: Path, params) -> None:
    """Every stage's cost file names where each model's prices came from, and a model the
    params do not price costs what the table bills for the tokens its calls used (cached
    input, cache writes and hidden reasoning included) on the date the file records."""
    from datetime import date

    from pressurebench.llm.prices import table_name
    from pressurebench.llm.providers.registry import api_class
    from pressurebench.schemas import Cost, Manifest

    files = sorted((root / "data").rglob("cost.json"))
    assert files
    checked = 0
    for path in files:
        cost = read_artifact(path, Cost)
        manifest = read_artifact(path.with_name("manifest.json"), Manifest)
        assert manifest.prices == cost.prices
        for mid, usage in cost.by_model.items():
            spec = params.models[mid]
            record = cost.prices[mid]
            if spec.price_per_mtok_in is not None:
                assert record.source == "params"
                continue
            assert record.source == table_name() and record.on is not None, (path, mid, record)
            api = api_class(spec.provider)(spec, None, date.fromisoformat(record.on))
            billed = api.price(usage.input_tokens, usage.output_tokens, usage.cached_input_tokens,
                               usage.cache_write_tokens)
            assert cost.recorded[mid].cost_usd == pytest.approx(billed, rel=1e-9), (path, mid)
            checked += 1
    unpriced = [m for m, s in params.models.items() if s.price_per_mtok_in is None]
    assert checked or not unpriced


def _shows_what_its_design_supports(results: Results, planned: int) -> None:
    """An example plans enough base scenarios for the pooled intervals (`interval_rules`:
    5 per metric with valid rows for a rate over metrics), so they are shown with their method
    and both grids' figures beside them; each metric's rate (5 per metric) too."""
    assert planned >= with_margin(RATE.pooled)
    kinds = {entry.interval: entry for entry in results.intervals}
    for kind in ("overall rate", "difference between targets", "demographic gap"):
        entry = kinds[kind]
        assert entry.reason is None and entry.coverage_low is not None, entry
        assert LOW - 0.02 <= entry.coverage_low <= entry.coverage_high, entry
        assert entry.stress_low is not None and entry.stress_low <= entry.stress_high, entry
    for target, found in results.targets.items():
        assert found.overall.ci_low is not None, (target, found.overall.reason)
        assert found.overall.ci_method != methods.NONE
    metric_rate = kinds["rate of a metric"]
    if planned < RATE.single:
        assert metric_rate.reason and str(RATE.single) in metric_rate.reason, metric_rate
