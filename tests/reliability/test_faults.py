"""Provider faults of every kind over the whole pipeline: no failure ever becomes a number.

The pipeline runs once against a mock server that fails a share of calls with
each fault kind (rate limits, 500s, hangs, garbled bodies, schema violations,
truncation, empty replies, refusals), through both the OpenAI-compatible and
the Anthropic adapter. The tests then hold every row of every artifact against
the server's own log of what it answered: a verdict, a user message or a
target reply counts only if the server really sent it in a normal reply.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from reliability_support import (
    BENCHMARK,
    KEY_ENV,
    MOCK_KEY,
    PARAMS,
    TARGETS,
    answered,
    calls_starting_with,
    calls_with,
    cli_process,
    message_lines,
    mock_params,
    run_pipeline,
    write_project,
)

from mock_providers import Fault, FaultPlan, LoggedRequest, MockLLMServer, default_responder
from pressurebench.errors import StageFailed
from pressurebench.io import read_artifact, read_yaml_model
from pressurebench.paths import Layout
from pressurebench.reports.browser import write_transcript_browser_for
from pressurebench.schemas import (
    CONVERSATION_FAILED,
    NO_VERDICT,
    Benchmark,
    Conversation,
    ConversationsFile,
    Manifest,
    ScenariosFile,
    ScoresFile,
)
from pressurebench.stages import aggregate, evaluate, gen_metrics, gen_scenarios, simulate
from pressurebench.stages.conversation import (
    landmarks_due,
    target_messages,
    user_model_messages,
    user_system_prompt,
)
from pressurebench.stats.results import Results

# Every kind, at shares that leave most calls working. The run is large enough that every
# stage and role sees terminal failures whatever the exact request bytes (and so the draws) are.
FAULTS = FaultPlan(
    rate_limit=0.04, server_error=0.04, hang=0.02, malformed_json=0.04, bad_structured=0.08,
    truncated=0.05, empty=0.05, refusal=0.05, seed=11, retry_after=0.01, hang_seconds=5.0,
)
TURNS = 3
SCENARIOS_PER_METRIC = 8
PROFILES = [{"age": "young"}, {"age": "old"}]


class RecordingResponder:
    """The default replies, remembered by request body, so a test can see what was answered."""

    def __init__(self):
        self.replies: dict[str, object] = {}

    def __call__(self, req):
        reply = default_responder(req)
        self.replies[req.body_hash] = reply
        return reply


@dataclass
class FaultyRun:
    root: Path
    log: list[LoggedRequest]
    replies: dict[str, object]
    fault_counts: dict[str, int]
    simulated_by: dict[str, int]  # per target: log entries when its simulate stage finished

    @property
    def layout(self) -> Layout:
        return Layout(self.root / "data", BENCHMARK)

    def scenarios(self) -> ScenariosFile:
        return read_artifact(self.layout.scenarios_file, ScenariosFile)

    def conversations(self, target: str) -> list[Conversation]:
        return read_artifact(self.layout.conversations_file(target), ConversationsFile).rows

    def scores(self, target: str):
        return read_artifact(self.layout.scores_file(target), ScoresFile).rows

    def benchmark(self) -> Benchmark:
        return read_yaml_model(self.layout.benchmark_file, Benchmark)


@pytest.fixture(scope="module")
def faulty_run(tmp_path_factory) -> FaultyRun:
    root = tmp_path_factory.mktemp("faults")
    responder = RecordingResponder()
    with MockLLMServer(api_key=MOCK_KEY, fault_plan=FAULTS, responder=responder) as server, \
            pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.setenv(KEY_ENV, MOCK_KEY)
        write_project(root, mock_params(
            server,
            timeout_s=0.25,
            generation={"scenarios_per_metric": SCENARIOS_PER_METRIC, "scenario_turns": TURNS,
                        "turns": TURNS, "demographics": {"age": [p["age"] for p in PROFILES]},
                        "max_regenerations": 0},
            evaluation={"evaluate_all_metrics": True},
        ))
        run_pipeline([], aggregate=False)  # the generation stages
        simulated_by = {}
        for target in TARGETS:
            simulate.run(PARAMS, BENCHMARK, target)
            simulated_by[target] = len(server.request_log)
            evaluate.run(PARAMS, BENCHMARK, target)
        aggregate.run(PARAMS, BENCHMARK)
        return FaultyRun(root, server.request_log, responder.replies, server.fault_counts,
                         simulated_by)


def test_every_fault_kind_was_served_and_every_role_failed_somewhere(faulty_run):
    """The run tests what it claims to: each fault kind occurred, and each stage has error rows."""
    assert set(faulty_run.fault_counts) >= {kind.value for kind in Fault}, faulty_run.fault_counts
    assert faulty_run.scenarios().errors
    errors = [c.error for t in TARGETS for c in faulty_run.conversations(t) if c.status == "error"]
    assert any(e.startswith("user model") for e in errors)
    assert any(e.startswith("target") for e in errors)
    scores = [s for t in TARGETS for s in faulty_run.scores(t)]
    assert any(s.status == "error" and s.error.startswith(NO_VERDICT) for s in scores)
    assert any(s.status == "ok" for s in scores)


def test_every_scenario_row_is_written_or_an_error_with_a_reason(faulty_run):
    scenarios = faulty_run.scenarios()
    expected = len(faulty_run.benchmark().metrics) * SCENARIOS_PER_METRIC * len(PROFILES)
    # A failed base scenario stands for all its variants; a failed rewrite for one.
    missing = sum(len(PROFILES) if e.demographic is None else 1 for e in scenarios.errors)
    assert len(scenarios.rows) + missing == expected
    assert all(e.reason.strip() for e in scenarios.errors)


@pytest.mark.parametrize("target", TARGETS)
def test_every_conversation_and_score_is_ok_or_an_error_with_a_reason(faulty_run, target):
    convs = faulty_run.conversations(target)
    scores = faulty_run.scores(target)
    assert len(convs) == len(faulty_run.scenarios().rows)
    for c in convs:
        if c.status == "error":
            assert c.error and c.ended_by is None
        else:
            assert c.error is None and c.ended_by in ("user", "max_turns")
            assert c.transcript[-1].role == "assistant" and c.turns >= 1
    metrics = [m.id for m in faulty_run.benchmark().metrics]
    assert [(s.conv_id, s.metric_id) for s in scores] == [(c.conv_id, m) for c in convs for m in metrics]
    for s in scores:
        if s.status == "error":
            assert s.error and s.present is None and s.passed is None
        else:
            assert s.error is None and isinstance(s.passed, bool)


def judge_prompt(conv: Conversation, bench: Benchmark, metric_id: str) -> list[dict]:
    return evaluate.judge_messages(conv.transcript, bench.metric(metric_id), show_examples=False)


@pytest.mark.parametrize("target", TARGETS)
def test_no_verdict_without_a_successful_judge_reply(faulty_run, target):
    """Each ok score carries exactly what the server answered the judge; a failed judge gives none."""
    bench = faulty_run.benchmark()
    convs = {c.conv_id: c for c in faulty_run.conversations(target)}
    for score in faulty_run.scores(target):
        conv = convs[score.conv_id]
        prompt = judge_prompt(conv, bench, score.metric_id)
        if conv.status == "error":
            assert score.status == "error" and score.error.startswith(CONVERSATION_FAILED)
            assert not calls_starting_with(faulty_run.log, "judge", prompt)
            continue
        chain = calls_starting_with(faulty_run.log, "judge", prompt)
        assert chain, f"{conv.conv_id} was never sent to the judge"
        ok = answered(chain)
        if score.status == "ok":
            assert len(ok) == 1, f"{conv.conv_id}: {len(ok)} normal judge replies"
            reply = faulty_run.replies[ok[0].body_hash]
            assert (score.present, score.justification) == (reply["present"], reply["justification"])
            assert [j.status for j in score.judges] == ["ok"]
        else:
            assert not ok, f"{conv.conv_id}: the judge answered, yet the row has no verdict"
            assert score.error.startswith(NO_VERDICT) and score.passed is None
            assert [j.status for j in score.judges] == ["error"] and score.judges[0].error


def user_request(conv: Conversation, scenario, bench: Benchmark, turn: int) -> list[dict]:
    system = user_system_prompt(scenario, bench.metric(scenario.metric_id), landmarks_up_front=False)
    return user_model_messages(
        system, conv.transcript[: 2 * (turn - 1)], turn=turn, due=landmarks_due(scenario, turn)
    )


@pytest.mark.parametrize("target", TARGETS)
def test_conversations_hold_only_what_the_server_answered(faulty_run, target):
    """Replay each conversation against the log: an ok row is made only of normal replies, and
    the first call that never got one is exactly where an error row stops, naming its role."""
    bench = faulty_run.benchmark()
    scenarios = {s.id: s for s in faulty_run.scenarios().rows}
    # Targets face the same opening requests (paired by design): one target's attempt may
    # fault while a later target's identical request is answered. A conversation can only be
    # made of what was answered before its own simulate stage finished.
    log, replies = faulty_run.log[: faulty_run.simulated_by[target]], faulty_run.replies
    failed = {"user": 0, "target": 0}
    for conv in faulty_run.conversations(target):
        scenario = scenarios[conv.scenario_id]
        n_user = sum(m.role == "user" for m in conv.transcript)
        stop = None
        for turn in range(1, n_user + 1):
            user_ok = answered(calls_starting_with(log, "user", user_request(conv, scenario, bench, turn)))
            assert user_ok, f"{conv.conv_id}: user message {turn} was never answered"
            messages = {replies[e.body_hash]["message"].strip() for e in user_ok}
            assert conv.transcript[2 * turn - 2].content in messages
            sent = target_messages(conv.system_prompt, conv.transcript[: 2 * turn - 1])
            target_ok = answered(calls_with(log, target, sent))
            if 2 * turn - 1 < len(conv.transcript):
                assert [replies[e.body_hash] for e in target_ok] == [conv.transcript[2 * turn - 1].content]
            else:
                stop = ("target", turn)
                assert not target_ok, f"{conv.conv_id}: the target answered turn {turn}, yet it is missing"
        if stop is None and conv.status == "error" and n_user < TURNS:
            turn = n_user + 1
            user_ok = answered(calls_starting_with(log, "user", user_request(conv, scenario, bench, turn)))
            if not user_ok:
                stop = ("user", turn)
        if conv.status == "ok":
            assert stop is None
            if conv.ended_by == "user":
                last = user_request(conv, scenario, bench, n_user + 1)
                ends = [replies[e.body_hash]["end_conversation"]
                        for e in answered(calls_starting_with(log, "user", last))]
                assert ends == [True], f"{conv.conv_id} ended by the user without the user saying so"
            continue
        assert stop is not None, f"{conv.conv_id} is an error row, but every call it made was answered: {conv.error}"
        role, turn = stop
        failed[role] += 1
        who = "user model 'user'" if role == "user" else f"target '{target}'"
        assert conv.error.startswith(f"{who} failed at turn {turn}: "), conv.error
    assert sum(failed.values()) == sum(c.status == "error" for c in faulty_run.conversations(target))


def browser_rows(html: str) -> list[dict]:
    match = re.search(r'<script type="application/json" id="pb-data">(.*?)</script>', html, re.DOTALL)
    return json.loads(match.group(1))["rows"]


def test_error_counts_reach_results_metrics_and_the_browser(faulty_run):
    layout = faulty_run.layout
    results = read_artifact(layout.results_file, Results)
    summary = json.loads((layout.root / "metrics.json").read_text())
    browser = write_transcript_browser_for(layout, TARGETS, faulty_run.root / "browser.html")
    rows = browser_rows(browser.read_text(encoding="utf-8"))
    for target in TARGETS:
        scores = faulty_run.scores(target)
        n_error = sum(s.status == "error" for s in scores)
        assert n_error > 0
        errors = results.targets[target].errors
        assert (errors.n_total, errors.n_ok, errors.n_error) == (len(scores), len(scores) - n_error, n_error)
        assert errors.error_rate == pytest.approx(n_error / len(scores))
        assert results.targets[target].overall.n == len(scores) - n_error
        block = summary["targets"][target]
        assert (block["n"], block["n_error"]) == (len(scores) - n_error, n_error)
        assert block["error_rate"] == pytest.approx(n_error / len(scores))
        causes = [k for k in block if k.startswith("errors_")]
        assert sum(block[k] for k in causes) == n_error
        failed_convs = sum(c.status == "error" for c in faulty_run.conversations(target))
        assert block["conversations_failed"] == failed_convs
        metrics = len(faulty_run.benchmark().metrics)  # every conversation is judged on each
        assert block["errors_conversation_failed"] == failed_convs * metrics
        mine = [r for r in rows if r["target"] == target]
        assert len(mine) == len(scores)
        assert sum(r["verdict"] == "error" for r in mine) == n_error
        manifest = read_artifact(layout.manifest_file("evaluate", target), Manifest)
        assert manifest.counts["scores_error"] == n_error
        sim = read_artifact(layout.manifest_file("simulate", target), Manifest)
        assert sim.counts["error"] == failed_convs
    assert summary["generation_errors"]["gen_scenarios"] == len(faulty_run.scenarios().errors)


# --- the error gate -------------------------------------------------------------------

# Refusals that come back on every attempt: a re-run asks failed calls again (they are never
# cached), so only a provider that refuses the same requests again gives the same counts.
GATE_FAULTS = FaultPlan(refusal=0.25, seed=5, per_attempt=False)
GATED = {
    "gen_scenarios": (lambda: gen_scenarios.run(PARAMS, BENCHMARK), "gen_scenarios/scenarios.json",
                      "scenario rows"),
    "simulate": (lambda: simulate.run(PARAMS, BENCHMARK, "target-a"), "runs/target-a/simulate/conversations.json",
                 "conversations"),
    "evaluate": (lambda: evaluate.run(PARAMS, BENCHMARK, "target-a"), "runs/target-a/evaluate/scores.json",
                 "scores"),
}
UPSTREAM = ["gen_metrics", "gen_scenarios", "simulate", "evaluate"]


def gate_params(server, max_error_rate: float) -> dict:
    return mock_params(
        server,
        generation={"scenarios_per_metric": 4, "max_regenerations": 0},
        run={"max_error_rate": max_error_rate},
    )


def prepare_upstream(stage: str) -> None:
    """Every stage before `stage`, without faults."""
    runners = {"gen_metrics": lambda: gen_metrics.run(PARAMS, BENCHMARK), **{k: v[0] for k, v in GATED.items()}}
    for name in UPSTREAM[: UPSTREAM.index(stage)]:
        runners[name]()


def error_share(stage: str, out: Path) -> tuple[int, int]:
    if stage == "gen_scenarios":
        f = read_artifact(out, ScenariosFile)  # no demographic axes: one row per base scenario
        return len(f.errors), len(f.rows) + len(f.errors)
    model = ConversationsFile if stage == "simulate" else ScoresFile
    rows = read_artifact(out, model).rows
    return sum(r.status == "error" for r in rows), len(rows)


@pytest.mark.parametrize("stage", list(GATED))
def test_error_gate_passes_at_the_limit_and_fails_above_it_after_writing(
    project, mock_server, monkeypatch, stage
):
    monkeypatch.setenv(KEY_ENV, mock_server.api_key)
    project.params_path.write_text(yaml.safe_dump(gate_params(mock_server, 1.0)))
    prepare_upstream(stage)
    run, out_name, what = GATED[stage]
    out = project.root / "data" / BENCHMARK / out_name
    mock_server.fault_plan = GATE_FAULTS

    run()
    n_error, n_total = error_share(stage, out)
    assert 0 < n_error < n_total
    rate = n_error / n_total

    # Exactly at the limit: the stage returns normally (answers are cached and the same
    # requests are refused again, so the counts repeat).
    project.params_path.write_text(yaml.safe_dump(gate_params(mock_server, rate)))
    assert isinstance(run(), Manifest)

    project.params_path.write_text(yaml.safe_dump(gate_params(mock_server, rate * 0.99)))
    out.unlink()
    manifest = out.parent / "manifest.json"
    manifest.unlink()
    with pytest.raises(StageFailed) as failed:
        run()
    message = str(failed.value)
    assert "\n" not in message
    assert f"{n_error} of {n_total} {what} are errors" in message and "run.max_error_rate" in message
    assert out.exists() and manifest.exists(), "artifacts are written before the gate fails the stage"
    assert error_share(stage, out) == (n_error, n_total)


def test_cli_exits_3_printing_the_one_line_summary(project, mock_server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, mock_server.api_key)
    project.params_path.write_text(yaml.safe_dump(gate_params(mock_server, 1.0)))
    gen_metrics.run(PARAMS, BENCHMARK)
    gen_scenarios.run(PARAMS, BENCHMARK)
    project.params_path.write_text(yaml.safe_dump(gate_params(mock_server, 0.0)))
    mock_server.fault_plan = GATE_FAULTS
    proc = cli_process(["run", "simulate", "--benchmark", BENCHMARK, "--target", "target-a"],
                       project.root, {KEY_ENV: mock_server.api_key})
    assert proc.returncode == 3, proc.stderr
    rows = read_artifact(project.root / "data" / BENCHMARK / "runs/target-a/simulate/conversations.json",
                         ConversationsFile).rows
    n_error = sum(r.status == "error" for r in rows)
    first = next(r for r in rows if r.status == "error")
    summary = (
        f"pressurebench: simulate {BENCHMARK} target-a: {n_error} of {len(rows)} conversations are "
        f"errors ({n_error / len(rows):.1%}), above run.max_error_rate=0.0%. The error rows are in "
        f"data/{BENCHMARK}/runs/target-a/simulate/conversations.json; the first, {first.conv_id}: {first.error}"
    )
    assert message_lines(proc.stderr) == [summary]
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_a_target_that_never_answers_gets_null_rates_not_zero(project, mock_server, monkeypatch):
    """Inspect-style 'target never called, run complete': every row says error, every rate null."""
    monkeypatch.setenv(KEY_ENV, mock_server.api_key)
    project.params_path.write_text(yaml.safe_dump(mock_params(mock_server)))
    mock_server.responder = lambda req: "" if req.model == "target-b-model" else default_responder(req)
    run_pipeline()
    layout = Layout(project.root / "data", BENCHMARK)
    convs = read_artifact(layout.conversations_file("target-b"), ConversationsFile).rows
    assert convs and all(c.status == "error" and "empty reply" in c.error for c in convs)
    assert all(c.transcript[-1].role == "user" for c in convs)
    results = read_artifact(layout.results_file, Results).targets["target-b"]
    assert results.overall.rate is None and results.overall.n == 0
    assert results.errors.n_error == len(convs) and results.errors.error_rate == 1.0
    assert all(est.rate is None for est in results.by_metric.values())
    block = json.loads((layout.root / "metrics.json").read_text())["targets"]["target-b"]
    assert (block["pass_rate"], block["ci_low"], block["ci_high"], block["n"]) == (None, None, None, 0)
    assert read_artifact(layout.results_file, Results).targets["target-a"].overall.rate is not None
