"""The response cache misses exactly where an answer could change, and only there.

A stale hit is a silent wrong number: transcripts from last week's settings
reported as this week's. A needless miss is money. Each test starts from a
project whose whole pipeline has run against the mock server, changes one
thing, re-runs the stage that reads it, and counts the requests that reached
the server.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from reliability_support import BENCHMARK, MODEL_NAMES, PARAMS, TARGETS, mock_model

from pressurebench import prompts
from pressurebench.io import read_artifact
from pressurebench.schemas import ConversationsFile, Manifest
from pressurebench.stages import evaluate, gen_metrics, gen_scenarios, simulate

DATA = Path("data") / BENCHMARK


def run_simulate(target: str = "target-a") -> Manifest:
    return simulate.run(PARAMS, BENCHMARK, target)


def run_evaluate(target: str = "target-a") -> Manifest:
    return evaluate.run(PARAMS, BENCHMARK, target)


def run_gen_scenarios() -> Manifest:
    return gen_scenarios.run(PARAMS, BENCHMARK)


def conversations(target: str = "target-a"):
    return read_artifact(DATA / "runs" / target / "simulate" / "conversations.json", ConversationsFile).rows


def calls_of(rows) -> int:
    return sum(u.calls for c in rows for u in c.usage.values())


def edit_params(change) -> None:
    path = Path(PARAMS)
    params = yaml.safe_load(path.read_text())
    change(params)
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def requests_to(server, model_id: str) -> int:
    return sum(e.model == MODEL_NAMES.get(model_id, model_id) for e in server.request_log)


def assert_all_missed(manifest: Manifest, server) -> None:
    assert manifest.cache["hits"] == 0, manifest.cache
    assert manifest.cache["misses"] == server.total_requests > 0


def test_changing_nothing_hits_the_cache_everywhere(proj, server):
    outputs = sorted(p for p in (proj / DATA).rglob("*.json") if "manifest" not in p.name and "cost" not in p.name)
    before = {p: p.read_bytes() for p in outputs}
    manifests = [gen_metrics.run(PARAMS, BENCHMARK), run_gen_scenarios()]
    for target in TARGETS:
        manifests += [run_simulate(target), run_evaluate(target)]
    assert server.total_requests == 0
    assert all(m.cache["misses"] == 0 for m in manifests)
    assert sum(m.cache["hits"] for m in manifests) > 0
    assert {p: p.read_bytes() for p in outputs} == before


def test_fewer_turns_replay_the_first_turns_of_the_longer_run(proj, server):
    """Nothing the user side sees depends on `generation.turns`, so a shorter run is the longer
    run's first turns: every call replays from the cache and the transcripts are its prefixes."""
    longer = {c.conv_id: c for c in conversations()}
    edit_params(lambda p: p["generation"].update(turns=2))
    manifest = run_simulate()
    assert server.total_requests == 0 and manifest.cache["misses"] == 0
    rows = conversations()
    assert all(c.turns <= 2 for c in rows)
    for c in rows:
        assert c.transcript == longer[c.conv_id].transcript[: len(c.transcript)]


@pytest.mark.parametrize(
    ("template", "run"),
    [
        ("user_system", run_simulate),
        ("user_start", run_simulate),
        ("user_direction", run_simulate),
        ("judge_system", run_evaluate),
        ("judge_user", run_evaluate),
        ("gen_scenario", run_gen_scenarios),
    ],
)
def test_an_edited_prompt_template_misses(proj, server, monkeypatch, template, run):
    original = prompts.template_text

    def edited(name: str) -> str:
        text = original(name)
        return text + "\nKeep it short." if name == template else text

    monkeypatch.setattr(prompts, "template_text", edited)
    prompts._template.cache_clear()
    try:
        manifest = run()
    finally:
        prompts._template.cache_clear()
    assert_all_missed(manifest, server)
    assert manifest.prompt_sha256[template] == hashlib.sha256(edited(template).encode()).hexdigest()


def test_another_user_model_misses(proj, server):
    edit_params(lambda p: (p["models"].update(user2=mock_model(server, "user2", "openai")),
                           p["roles"].update(user="user2")))
    assert_all_missed(run_simulate(), server)
    assert requests_to(server, "user2") > 0 and requests_to(server, "user") == 0


def test_the_same_user_id_on_another_model_misses(proj, server):
    edit_params(lambda p: p["models"]["user"].update(model="user-model-v2"))
    assert_all_missed(run_simulate(), server)


def test_another_evaluator_misses_and_leaves_the_conversations_cached(proj, server):
    edit_params(lambda p: (p["models"].update(judge2=mock_model(server, "judge2", "anthropic")),
                           p["roles"].update(evaluator="judge2")))
    for target in TARGETS:
        assert run_simulate(target).cache["misses"] == 0
    assert server.total_requests == 0
    manifest = run_evaluate()
    assert_all_missed(manifest, server)
    assert requests_to(server, "judge2") == manifest.counts["scores"]


def test_target_temperature_misses_every_target_call(proj, server):
    """The user's first message does not depend on the target, so only it may hit."""
    edit_params(lambda p: p["models"]["target-a"].update(temperature=0.2))
    manifest = run_simulate()
    rows = conversations()
    target_calls = sum(c.usage["target-a"].calls for c in rows)
    assert requests_to(server, "target-a") == target_calls > 0
    assert all(e.body["temperature"] == 0.2 for e in server.request_log if e.model == MODEL_NAMES["target-a"])
    assert manifest.cache["hits"] == len(rows)  # each conversation's first user turn


def test_user_temperature_misses_every_call(proj, server):
    edit_params(lambda p: p["models"]["user"].update(temperature=1.1))
    assert_all_missed(run_simulate(), server)


def test_edited_scenario_misses_only_its_own_conversations(proj, server):
    path = DATA / "gen_scenarios" / "scenarios.json"
    data = json.loads(path.read_text())
    changed = data["rows"][1]
    changed["persona"] += " They have asked this twice already."
    path.write_text(json.dumps(data))
    manifest = run_simulate()
    rows = conversations()
    mine = [c for c in rows if c.scenario_id == changed["id"]]
    others = [c for c in rows if c.scenario_id != changed["id"]]
    assert mine and others
    assert server.total_requests == calls_of(mine) == manifest.cache["misses"]
    assert manifest.cache["hits"] == calls_of(others)
    # And the judge sees new transcripts only for that scenario.
    server.reset()
    judged = run_evaluate()
    assert server.total_requests == judged.cache["misses"] == len(mine)
