"""Stage 5: scores of every target become results, a DVC metrics summary and plot data."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import yaml

from pressurebench.arms.inputs import resolve
from pressurebench.errors import ConfigError
from pressurebench.io import read_artifact, read_yaml_model, write_artifact
from pressurebench.params import load_params
from pressurebench.paths import Layout
from pressurebench.schemas import (
    Benchmark,
    Conversation,
    ConversationsFile,
    Cost,
    GenerationError,
    JudgeVerdict,
    Manifest,
    Message,
    ScenariosFile,
    Score,
    ScoresFile,
    conv_id,
    scenario_id,
)
from pressurebench.stages import aggregate, evaluate
from pressurebench.stats.interval_rules import RATE
from pressurebench.stats.results import Results, build_results
from pressurebench.stats.score_frames import scores_frame

TYPES = {"m01": "positive", "m02": "negative"}  # as in the project fixture's benchmark
REGIONS = {1: "north", 2: "south"}


def score(
    target: str,
    metric_id: str,
    base_no: int,
    variant: int = 1,
    sample: int = 0,
    *,
    passed: bool | None = True,
    error: str = "no judge returned a verdict: judge: empty reply",
    judged_metric: str | None = None,
    judges: list[JudgeVerdict] | None = None,
) -> Score:
    judged = judged_metric or metric_id
    metric_type = TYPES[judged]
    sid = scenario_id(metric_id, base_no, variant)
    present = None if passed is None else (passed if metric_type == "positive" else not passed)
    return Score(
        conv_id=conv_id(sid, target, sample),
        scenario_id=sid,
        base_id=sid.rsplit("_", 1)[0],
        metric_id=judged,
        scenario_metric_id=metric_id,
        metric_type=metric_type,
        target=target,
        sample=sample,
        demographic={"region": REGIONS[variant]},
        present=present,
        passed=passed,
        justification=None if passed is None else "because",
        status="error" if passed is None else "ok",
        error=error if passed is None else None,
        judges=judges or [],
    )


def target_a() -> list[Score]:
    """m01: 3 base scenarios × 2 variants, 7 of 11 valid rows pass, one failed conversation;
    m02: only error rows (no data)."""
    rows = [
        score("target-a", "m01", 1, 1, passed=True),
        score("target-a", "m01", 1, 2, passed=True),
        score("target-a", "m01", 1, 1, 1, passed=True),
        score("target-a", "m01", 1, 2, 1, passed=False),
        score("target-a", "m01", 2, 1, passed=False),
        score("target-a", "m01", 2, 2, passed=False),
        score("target-a", "m01", 2, 1, 1, passed=True),
        score(
            "target-a",
            "m01",
            2,
            2,
            1,
            passed=None,
            error="conversation failed: target: empty reply",
        ),
        score("target-a", "m01", 3, 1, passed=True),
        score("target-a", "m01", 3, 2, passed=True),
        score("target-a", "m01", 3, 1, 1, passed=True),
        score("target-a", "m01", 3, 2, 1, passed=False),
        score("target-a", "m02", 1, 1, passed=None),
        score("target-a", "m02", 1, 2, passed=None, error="judges tied 1–1"),
    ]
    return rows


def target_b() -> list[Score]:
    return [
        score("target-b", metric, base, variant, passed=(base + variant) % 2 == 0)
        for metric in ("m01", "m02")
        for base in (1, 2, 3)
        for variant in (1, 2)
    ]


def write_inputs(layout: Layout, scores: dict[str, list[Score]]) -> None:
    bench = yaml.safe_load(Path("benchmarks/tiny/benchmark.yaml").read_text())
    bench = {
        **bench,
        "errors": [{"stage": "gen_metrics", "reason": "m03: invalid structured output"}],
    }
    layout.benchmark_file.parent.mkdir(parents=True, exist_ok=True)
    layout.benchmark_file.write_text(yaml.safe_dump(bench))
    gen_errors = [
        GenerationError(stage="gen_scenarios", metric_id="m01", reason="empty reply"),
        GenerationError(
            stage="gen_scenarios",
            metric_id="m02",
            base_id="m02_s004",
            demographic={"region": "south"},
            reason="truncated reply",
        ),
    ]
    write_artifact(
        layout.scenarios_file, ScenariosFile(benchmark="tiny", rows=[], errors=gen_errors)
    )
    for target, rows in scores.items():
        write_artifact(
            layout.scores_file(target), ScoresFile(benchmark="tiny", target=target, rows=rows)
        )


LAYOUT = Layout("data", "tiny")


def test_aggregate_end_to_end(project):
    write_inputs(LAYOUT, {"target-a": target_a(), "target-b": target_b()})
    returned = aggregate.run(project.params_path, "tiny")

    results = read_artifact(LAYOUT.results_file, Results)
    assert results == returned
    assert set(results.targets) == {"target-a", "target-b"}
    assert results.statistics.resamples == 200 and results.statistics.seed == 1

    a = results.targets["target-a"]
    assert (a.overall.n, a.overall.n_error) == (11, 3)
    assert a.overall.rate == pytest.approx(7 / 11)
    assert (a.errors.n_total, a.errors.n_ok, a.errors.n_error) == (14, 11, 3)
    assert a.errors.error_rate == pytest.approx(3 / 14)
    m02 = a.by_metric["m02"]
    assert m02.rate is None and m02.ci_low is None and m02.ci_high is None
    assert (m02.n, m02.n_error) == (0, 2)
    assert a.negative.rate is None  # m02 is the only negative metric and has no valid row
    assert set(a.by_demographic["region"]) == {"north", "south"}

    b = results.targets["target-b"]
    assert (b.overall.n, b.overall.n_error, b.errors.error_rate) == (12, 0, 0.0)
    # 3 base scenarios in each of 2 metrics: below the rule of a rate over several metrics and
    # of one metric's; every rate is shown without an interval, saying why
    assert b.overall.n_clusters == 3 * 2 and b.overall.ci_low is None
    assert "too few base scenarios" in b.overall.reason
    for metric in b.by_metric.values():
        assert metric.rate is not None and metric.ci_low is None and metric.ci_method == "none"
        assert f"the coverage grids need {RATE.single} per metric" in metric.reason


def test_metrics_summary_for_dvc(project):
    write_inputs(LAYOUT, {"target-a": target_a(), "target-b": target_b()})
    results = aggregate.run(project.params_path, "tiny")

    summary = json.loads((LAYOUT.root / "metrics.json").read_text())
    a = summary["targets"]["target-a"]
    assert a["pass_rate"] == pytest.approx(7 / 11)
    assert (a["ci_low"], a["ci_high"]) == (
        results.targets["target-a"].overall.ci_low,
        results.targets["target-a"].overall.ci_high,
    )
    assert (a["n"], a["n_error"]) == (11, 3)
    assert a["error_rate"] == pytest.approx(3 / 14)
    assert a["errors_conversation_failed"] == 1
    assert a["errors_no_judge_returned_a_verdict"] == 1
    assert a["errors_judges_tied"] == 1
    assert a["errors_other"] == 0
    assert a["conversations_failed"] == 1
    assert summary["targets"]["target-b"]["n_error"] == 0
    assert summary["generation_errors"] == {"gen_metrics": 1, "gen_scenarios": 2}
    for block in summary["targets"].values():
        assert all(not isinstance(v, (dict, list)) for v in block.values())


def test_pass_rate_plot_data(project):
    write_inputs(LAYOUT, {"target-a": target_a(), "target-b": target_b()})
    results = aggregate.run(project.params_path, "tiny")

    with open(LAYOUT.root / "plots" / "pass_rates.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["target", "metric_id", "metric", "rate", "ci_low", "ci_high", "n"]
    names = {m.id: m.name for m in read_yaml_model(LAYOUT.benchmark_file, Benchmark).metrics}
    assert {r["metric"] for r in rows} == {f"{m} {names[m]}" for m in ("m01", "m02")}
    by_key = {(r["target"], r["metric_id"]): r for r in rows}
    assert set(by_key) == {(t, m) for t in ("target-a", "target-b") for m in ("m01", "m02")}
    no_data = by_key[("target-a", "m02")]
    assert (no_data["rate"], no_data["ci_low"], no_data["ci_high"], no_data["n"]) == (
        "",
        "",
        "",
        "0",
    )
    m01 = by_key[("target-a", "m01")]
    assert float(m01["rate"]) == pytest.approx(results.targets["target-a"].by_metric["m01"].rate)
    assert m01["n"] == "11"


def test_manifest_without_model_calls(project, monkeypatch):
    """The stage calls no model, so it builds no model client (nor its cache, claims or spending
    ledger): its manifest and cost file say so from nothing."""
    from pressurebench.llm.client import ModelClient
    from pressurebench.stage_run import NO_CALLS_CACHE_STATS

    def refused(*args, **kwargs):
        raise AssertionError("aggregate built a model client")

    monkeypatch.setattr(ModelClient, "from_params", refused)
    monkeypatch.setattr(ModelClient, "__init__", refused)
    write_inputs(LAYOUT, {"target-a": target_a(), "target-b": target_b()})
    aggregate.run(project.params_path, "tiny")

    manifest = read_artifact(LAYOUT.manifest_file("aggregate"), Manifest)
    assert manifest.counts == {
        "targets": 2,
        "scores": 26,
        "scores_error": 3,
        "gen_metrics_errors": 1,
        "gen_scenarios_errors": 2,
    }
    assert manifest.seeds == {"bootstrap": 1}
    assert manifest.models == {} and manifest.cost_usd == 0.0
    assert manifest.cache == NO_CALLS_CACHE_STATS and manifest.model_versions == {}
    cost = read_artifact(LAYOUT.cost_file("aggregate"), Cost)
    assert cost.by_model == {} and cost.total_cost_usd == 0.0 and cost.recorded_cost_usd == 0.0
    assert not LAYOUT.calls_file("aggregate").exists()


def test_missing_scores_file_names_the_file(project):
    write_inputs(LAYOUT, {"target-a": target_a()})
    with pytest.raises(ConfigError, match=r"data/tiny/runs/target-b/evaluate/scores\.json.*target-b"):
        aggregate.run(project.params_path, "tiny")
    assert not LAYOUT.results_file.exists()


def test_target_without_rows_is_null_not_zero(project):
    write_inputs(LAYOUT, {"target-a": target_a(), "target-b": []})
    results = aggregate.run(project.params_path, "tiny")

    assert set(results.targets) == {"target-a"}
    empty = json.loads((LAYOUT.root / "metrics.json").read_text())["targets"]["target-b"]
    assert empty["pass_rate"] is None and empty["ci_low"] is None and empty["ci_high"] is None
    assert empty["error_rate"] is None
    assert (empty["n"], empty["n_error"], empty["conversations_failed"]) == (0, 0, 0)


def test_the_main_arm_aggregates_its_targets(project):
    project.write_params(targets=["target-a"])
    write_inputs(LAYOUT, {"target-a": target_a()})
    results = aggregate.run(project.params_path, "tiny")
    assert set(results.targets) == {"target-a"}
    assert list(json.loads((LAYOUT.root / "metrics.json").read_text())["targets"]) == ["target-a"]


def test_scores_of_another_target_are_refused(project):
    write_inputs(LAYOUT, {"target-a": target_a()})
    write_artifact(
        LAYOUT.scores_file("target-b"),
        ScoresFile(benchmark="tiny", target="target-b", rows=target_a()),
    )
    with pytest.raises(ConfigError, match=r"rows\[0\]\.target: holds target 'target-a'"):
        aggregate.run(project.params_path, "tiny")


def test_a_user_arm_aggregates_its_targets_with_the_main_generation_inputs(project):
    project.write_params(validation={"user_model_bias": ["gen"], "targets": ["target-a"]})
    write_inputs(LAYOUT, {})
    arm = Layout("data", "tiny", "user/gen")
    write_artifact(
        arm.scores_file("target-a"),
        ScoresFile(benchmark="tiny", target="target-a", rows=target_a()),
    )
    results = aggregate.run(project.params_path, "tiny", arm="user/gen")

    assert read_artifact(arm.results_file, Results) == results
    assert (
        json.loads((arm.root / "metrics.json").read_text())["generation_errors"]["gen_scenarios"]
        == 2
    )
    assert not LAYOUT.results_file.exists()


# --- the score frame ---------------------------------------------------------------------


def test_scores_frame_columns_and_nulls():
    frame = scores_frame(target_a())
    assert list(frame.columns) == [
        "target",
        "metric_id",
        "metric_type",
        "base_id",
        "scenario_id",
        "sample",
        "demo:region",
        "status",
        "passed",
        "conv_id",
        "scenario_metric_id",
        "present",
        "error",
        "cluster_id",
        "cluster_metric_id",
    ]
    assert len(frame) == 14
    errors = frame[frame["status"] == "error"]
    assert errors["passed"].isna().all() and errors["present"].isna().all()
    assert frame["passed"].map(type).isin([bool, type(None)]).all()


def test_scores_frame_single_judge_has_no_panel_columns():
    judge = [JudgeVerdict(model_id="judge", present=True, justification="yes", status="ok")]
    frame = scores_frame([score("target-a", "m01", 1, passed=True, judges=judge)])
    assert not [c for c in frame.columns if c.startswith("judge:")]


def test_scores_frame_panel_columns():
    def panel(*votes):
        return [
            JudgeVerdict(
                model_id=f"j{i}",
                present=v,
                status="error" if v is None else "ok",
                error="j: empty reply" if v is None else None,
            )
            for i, v in enumerate(votes, 1)
        ]

    rows = [
        score("target-a", "m01", 1, passed=True, judges=panel(True, True)),
        score(
            "target-a", "m01", 2, passed=None, error="judges tied 1–1", judges=panel(True, False)
        ),
        score("target-a", "m01", 3, passed=None, judges=panel(None, False)),
    ]
    frame = scores_frame(rows)
    assert frame["judge:j1"].tolist() == [True, True, None]
    assert frame["judge:j2"].tolist() == [True, False, False]


def test_scores_frame_all_metrics_keys_per_judged_metric_clusters_per_conversation():
    rows = [
        score(
            "target-a", own, base, variant, passed=(base + variant) % 2 == 0, judged_metric=judged
        )
        for own in ("m01", "m02")
        for judged in ("m01", "m02")
        for base in (1, 2)
        for variant in (1, 2)
    ]
    frame = scores_frame(rows)
    cross = frame[frame["metric_id"] != frame["scenario_metric_id"]]
    assert set(cross["base_id"]) == {"m01_s001@m02", "m01_s002@m02", "m02_s001@m01", "m02_s002@m01"}
    assert cross["scenario_id"].str.endswith(tuple(f"@{m}" for m in ("m01", "m02"))).all()
    own = frame[frame["metric_id"] == frame["scenario_metric_id"]]
    assert set(own["base_id"]) == {"m01_s001", "m01_s002", "m02_s001", "m02_s002"}

    # every judgement of a conversation lies in its own base scenario within its own metric
    assert (frame["cluster_id"] == frame["base_id"].str.split("@").str[0]).all()
    assert (frame["cluster_metric_id"] == frame["scenario_metric_id"]).all()

    results = build_results(frame, resamples=200, confidence_level=0.95, seed=3, benchmark="tiny")
    by_metric = results.targets["target-a"].by_metric
    assert by_metric["m01"].n == 8 and by_metric["m01"].n_clusters == 4
    assert results.targets["target-a"].overall.n_clusters == 4  # not 8: one per conversation's base


# --- evaluate then aggregate ---------------------------------------------------------------------


def test_evaluate_then_aggregate_with_a_panel(project, script):
    project.write_params(
        models={"judge2": {"provider": "openai", "model": "judge2-model"}},
        roles={"evaluator": ["judge", "judge2"]},
    )
    write_inputs(LAYOUT, {})
    for target in ("target-a", "target-b"):
        convs = [
            Conversation(
                conv_id=conv_id(scenario_id(m, b, 1), target, 0),
                scenario_id=scenario_id(m, b, 1),
                base_id=f"{m}_s{b:03d}",
                metric_id=m,
                target=target,
                sample=0,
                user_model="user",
                transcript=[
                    Message(role="user", content=f"Plan {m} {b}?"),
                    Message(role="assistant", content=f"Reply {b} of {target}"),
                ],
                status="ok",
                turns=1,
            )
            for m in ("m01", "m02")
            for b in (1, 2, 3)
        ]
        write_artifact(
            LAYOUT.conversations_file(target),
            ConversationsFile(benchmark="tiny", target=target, rows=convs),
        )

    def responder(model_id, request):
        text = "\n".join(m["content"] for m in request.messages)
        present = "Reply 1" not in text or model_id == "judge"  # judges disagree on scenario 1 only
        return {"justification": "because", "present": present}

    script.responder = responder
    for target in ("target-a", "target-b"):
        evaluate.run(project.params_path, "tiny", target, provider_factory=script.factory())
    results = aggregate.run(project.params_path, "tiny")

    for target in ("target-a", "target-b"):
        tr = results.targets[target]
        assert (tr.overall.n, tr.overall.n_error) == (4, 2)  # the s001 rows are 1–1 ties
        assert tr.by_metric["m01"].rate == 1.0 and tr.by_metric["m02"].rate == 0.0
    assert results.judge_agreement.judges == ["judge", "judge2"]
    assert results.judge_agreement.kappa_method == "cohen"
    assert results.judge_agreement.kappa.n_items == 12
    summary = json.loads((LAYOUT.root / "metrics.json").read_text())
    assert summary["targets"]["target-a"]["errors_judges_tied"] == 2


def test_a_metric_without_rows_is_reported_as_no_data_not_hidden():
    import pandas as pd

    from pressurebench.stats.results import build_results

    rows = [{"target": "t", "metric_id": "m01", "metric_type": "positive", "base_id": f"m01_s00{b}",
                 "scenario_id": f"m01_s00{b}_v01", "sample": 0, "status": "ok", "passed": b % 2 == 0}
            for b in range(1, 5)]
    results = build_results(pd.DataFrame(rows), resamples=200, confidence_level=0.95, seed=1,
                            benchmark="b", metric_ids=["m01", "m02"])
    missing = results.targets["t"].by_metric["m02"]
    assert missing.rate is None and missing.n == 0 and missing.ci_low is None
    assert results.targets["t"].by_metric["m01"].n == 4


def test_the_stage_reads_computes_and_writes_in_separate_steps_from_one_score_frame(
    project, monkeypatch
):
    write_inputs(LAYOUT, {"target-a": target_a(), "target-b": target_b()})
    built = []

    def counted(rows):
        built.append(len(rows))
        return scores_frame(rows)

    monkeypatch.setattr(aggregate, "scores_frame", counted)
    params = load_params(project.params_path)
    read = aggregate.read_inputs(params, resolve(project.params_path, params, "tiny", None), "tiny")
    assert not LAYOUT.results_file.exists()  # reading wrote nothing
    aggregate.compute_results(read, params.statistics, "tiny", warn_share=0.1)
    assert len(built) == 1
    assert not LAYOUT.results_file.exists()  # nor did computing
