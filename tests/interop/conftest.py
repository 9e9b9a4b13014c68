"""Fixtures of the interop tests: a run finished against the mock providers, to export."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "reliability"))

from interop_support import EVALUATOR_ARM, plant_failures
from reliability_support import (
    BENCHMARK,
    KEY_ENV,
    MOCK_KEY,
    PARAMS,
    TARGETS,
    mock_model,
    mock_params,
    run_pipeline,
    write_project,
)

from mock_providers import MockLLMServer
from pressurebench.arms.study_plan import write_plans
from pressurebench.params import load_params
from pressurebench.paths import Layout
from pressurebench.stages import aggregate, evaluate
from pressurebench.validation import evaluator_bias

# Every part of a conversation the exports carry: demographic variants, two samples,
# per-turn verdicts and the fidelity checks of the simulated user.
# Five base scenarios per metric: enough for the rates' intervals (stats.interval_rules).
SETTINGS = {
    "generation": {"demographics": {"gender": ["female", "male"]}, "num_samples": 2,
                   "scenarios_per_metric": 5},
    "evaluation": {"per_turn": True},
    "fidelity": {"check": True},
    "validation": {"evaluator_bias": ["judge2"], "fraction": 0.4},
}



@pytest.fixture(scope="session")
def finished_run(tmp_path_factory) -> Path:
    """A project after a complete pipeline run against the mock providers."""
    root = tmp_path_factory.mktemp("finished-run")
    with MockLLMServer(api_key=MOCK_KEY) as server, pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.setenv(KEY_ENV, MOCK_KEY)
        params = mock_params(server, models={"judge2": mock_model(server, "judge2", "openai")},
                             **SETTINGS)
        params["roles"]["fidelity"] = "judge"
        write_project(root, params)
        run_pipeline(aggregate=False)
        plant_failures(Layout(Path("data"), BENCHMARK))
        aggregate.run(PARAMS, BENCHMARK)
        write_plans(load_params(PARAMS), BENCHMARK)
        for target in TARGETS:
            evaluate.run(PARAMS, BENCHMARK, target, arm=EVALUATOR_ARM)
        evaluator_bias.run(PARAMS, BENCHMARK)
    return root


@pytest.fixture
def run_dir(finished_run, tmp_path, monkeypatch) -> Path:
    """A copy of the finished run as the working directory."""
    root = tmp_path / "project"
    shutil.copytree(finished_run, root)
    monkeypatch.chdir(root)
    return root
