"""Two runs at once over one cache directory: no call paid twice, the cap holds for both together.

The same `pressurebench run simulate` is started twice, as two processes, against
the mock server with list prices and a spending cap. The server's log says what was
paid: every request body reaches it at most once, and what the spending record
holds is what the server answered, within the cap.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from reliability_support import (
    BENCHMARK,
    KEY_ENV,
    MOCK_KEY,
    MODEL_NAMES,
    PARAMS,
    mock_params,
    write_project,
)

from mock_providers import MockLLMServer
from pressurebench.io import read_artifact
from pressurebench.llm.providers.registry import api_for
from pressurebench.llm.spending import SpendingLedger, call_cost_bound
from pressurebench.params import load_params
from pressurebench.schemas import ConversationsFile
from pressurebench.stages import gen_metrics, gen_scenarios, simulate
from support import WAIT_S

TARGET = "target-a"
PRICES = {"price_per_mtok_in": 1.0, "price_per_mtok_out": 1.0}


def start_simulate(root: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != KEY_ENV} | {KEY_ENV: MOCK_KEY}
    return subprocess.Popen(
        [sys.executable, "-m", "pressurebench.commands.cli", "run", "simulate", "--benchmark", BENCHMARK,
         "--target", TARGET],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def spent_alone(root: Path, tmp_path: Path) -> float:
    """What the same run costs on its own, from a copy of the project (the server is
    deterministic, so each call costs the same every time it is paid)."""
    alone = tmp_path / "alone"
    shutil.copytree(root, alone)
    here = Path.cwd()
    os.chdir(alone)
    try:
        simulate.run(PARAMS, BENCHMARK, TARGET)
    finally:
        os.chdir(here)
    return ledger(alone)["spent_usd"]


def ledger(root: Path) -> dict:
    return json.loads((root / ".pbcache" / SpendingLedger.FILE).read_text())


@pytest.fixture
def project_with_scenarios(tmp_path, monkeypatch):
    """A project whose scenarios are written, its models priced, the server slow enough that
    two runs overlap."""
    with MockLLMServer(api_key=MOCK_KEY, latency=0.05) as server:
        params = mock_params(server, anthropic=(), timeout_s=10)
        for spec in params["models"].values():
            spec.update(PRICES)
        root = tmp_path / "project"
        write_project(root, params)
        monkeypatch.chdir(root)
        monkeypatch.setenv(KEY_ENV, MOCK_KEY)
        gen_metrics.run(PARAMS, BENCHMARK)
        gen_scenarios.run(PARAMS, BENCHMARK)
        yield root, server


def set_cap(root: Path, cap: float) -> None:
    path = root / PARAMS
    params = yaml.safe_load(path.read_text())
    params["run"]["max_cost_usd"] = cap
    path.write_text(yaml.safe_dump(params, sort_keys=False))


@pytest.mark.slow
def test_two_runs_at_once_pay_each_call_once(project_with_scenarios, tmp_path):
    root, server = project_with_scenarios
    set_cap(root, 100.0)
    alone = spent_alone(root, tmp_path)
    server.reset()
    first, second = start_simulate(root), start_simulate(root)
    outs = [p.communicate(timeout=WAIT_S) for p in (first, second)]
    assert first.returncode == 0 and second.returncode == 0, outs
    assert max(server.body_hash_counts.values()) == 1  # no request asked (and paid for) twice
    spent = ledger(root)
    assert spent["spent_usd"] == pytest.approx(alone)  # paid once, and nothing of it lost
    assert spent["in_flight_usd"] == {}
    rows = read_artifact(root / "data" / BENCHMARK / "runs" / TARGET / "simulate" / "conversations.json",
                         ConversationsFile).rows
    assert rows and all(r.status == "ok" for r in rows)
    assert any(e.model == MODEL_NAMES[TARGET] for e in server.request_log)


@pytest.mark.slow
def test_two_runs_at_once_stay_within_one_cap(project_with_scenarios):
    root, server = project_with_scenarios
    server.reset()
    params = load_params(root / PARAMS)
    # A cap a few calls wide: both runs stop at it, together.
    bound = call_cost_bound(api_for(params.models[TARGET]), [{"role": "user", "content": "x" * 3000}], 512)
    cap = 4 * bound
    set_cap(root, cap)
    first, second = start_simulate(root), start_simulate(root)
    outs = [p.communicate(timeout=WAIT_S) for p in (first, second)]
    assert {first.returncode, second.returncode} <= {0, 2}, outs
    assert any("spending cap reached" in err for _, err in outs), outs
    assert max(server.body_hash_counts.values()) == 1
    spent = ledger(root)
    assert spent["in_flight_usd"] == {}
    assert 0 < spent["spent_usd"] <= cap  # bounds are held in flight for both processes at once
