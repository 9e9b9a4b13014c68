"""The README's API example runs end to end against servers as strict as the real APIs.

`params/examples/openai-reasoning-judge-claude-user.yaml` names an OpenAI reasoning model as
evaluator and a recent Claude model as generator and user, with no base URL, exactly as a
user writes it; the official SDKs' OPENAI_BASE_URL / ANTHROPIC_BASE_URL point them at the
mock server, which refuses every request the real APIs refuse (`test_provider_rules`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from reliability_support import PARAMS, write_project

from mock_providers import MockLLMServer
from pressurebench.io import read_artifact
from pressurebench.params import load_params
from pressurebench.paths import Layout
from pressurebench.schemas import ConversationsFile, ScenariosFile, ScoresFile
from pressurebench.stages import aggregate, evaluate, gen_metrics, gen_scenarios, simulate
from pressurebench.stats.results import Results

EXAMPLE = Path(__file__).parents[2] / "params" / "examples" / "openai-reasoning-judge-claude-user.yaml"
KEY = "example-key"


@pytest.fixture
def example_project(tmp_path, monkeypatch):
    with MockLLMServer(api_key=KEY) as server:
        params = yaml.safe_load(EXAMPLE.read_text())
        params["benchmarks"] = ["tiny"]
        params["generation"].update(scenarios_per_metric=2, turns=3, scenario_turns=3)
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", server.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.anthropic_base_url)
        write_project(tmp_path, params)
        yield server


def test_the_api_example_runs_with_no_error_rows(example_project):
    server = example_project
    params = load_params(PARAMS)
    gen_metrics.run(PARAMS, "tiny")
    gen_scenarios.run(PARAMS, "tiny")
    for target in params.targets:
        simulate.run(PARAMS, "tiny", target)
        evaluate.run(PARAMS, "tiny", target)
    aggregate.run(PARAMS, "tiny")

    layout = Layout(Path("data"), "tiny")
    scenarios = read_artifact(layout.scenarios_file, ScenariosFile)
    assert scenarios.rows and not scenarios.errors
    for target in params.targets:
        conversations = read_artifact(layout.conversations_file(target), ConversationsFile).rows
        scores = read_artifact(layout.scores_file(target), ScoresFile).rows
        assert conversations and all(c.status == "ok" for c in conversations)
        assert scores and all(s.status == "ok" for s in scores)
    assert read_artifact(layout.results_file, Results)
    refused = [e for e in server.request_log if e.status != 200]
    assert not refused, [(e.model, e.status) for e in refused]
    judged = [e.body for e in server.request_log if e.model == "gpt-5.4-mini"]
    assert judged and all("max_completion_tokens" in b and "temperature" not in b for b in judged)
    assert all(b["reasoning_effort"] == "low" and b["response_format"]["json_schema"]["strict"] for b in judged)
    played = [e.body for e in server.request_log if e.model == "claude-sonnet-4-6"]
    assert played and all(b["temperature"] == 0.8 and "top_p" not in b for b in played)
