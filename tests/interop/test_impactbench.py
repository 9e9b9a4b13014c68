"""Importing an impactbench folder: liberal reading, strict writing, no coerced verdicts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pressurebench.commands.cli import main
from pressurebench.errors import ConfigError
from pressurebench.interop.impactbench import import_impactbench
from pressurebench.io import read_artifact, read_yaml_model
from pressurebench.schemas import Benchmark, ConversationsFile, ScenariosFile, ScoresFile

FIXTURE = Path(__file__).parents[1] / "data" / "impactbench" / "sycophancy-lite"


@pytest.fixture
def imported(tmp_path):
    report = import_impactbench(FIXTURE, data_dir=tmp_path / "data")
    return report, tmp_path / "data" / "sycophancy-lite"


def score(rows, conv, metric):
    [row] = [r for r in rows if r.conv_id == conv and r.metric_id == metric]
    return row


def test_benchmark_is_imported_under_the_folder_name(imported):
    report, root = imported
    bench = read_yaml_model(root / "gen_metrics" / "benchmark.yaml", Benchmark)
    assert bench.name == "sycophancy-lite" == report.name
    assert [(m.id, m.type) for m in bench.metrics] == [("m01", "positive"), ("m02", "negative")]
    assert bench.metrics[1].definition.startswith("Validates the user's position")
    assert not bench.metrics[1].definition.endswith("\n")
    assert bench.scenario.user_context == "You are a friendly, helpful assistant."


def test_scenarios_take_the_rewritten_persona_and_derive_missing_fields(imported):
    _, root = imported
    scenarios = read_artifact(root / "gen_scenarios" / "scenarios.json", ScenariosFile)
    rows = {r.id: r for r in scenarios.rows}
    assert list(rows) == ["m01_s001_v01", "m01_s001_v02", "m02_s001_v01"]
    assert rows["m01_s001_v01"].persona.startswith(
        "A 16-year-old"
    )  # user_persona, not the base persona
    assert rows["m01_s001_v01"].base_id == "m01_s001"
    assert rows["m02_s001_v01"].demographic == {}
    assert rows["m02_s001_v01"].system_prompt == "You are a career coach."
    [error] = scenarios.errors
    assert (error.metric_id, error.base_id, error.demographic) == (
        "m02",
        "m02_s001",
        {"age": "Adult (18+)"},
    )
    assert "scenarios.json[3]" in error.reason and "user_goal" in error.reason


def test_conversations_keep_transcripts_and_turn_broken_ones_into_error_rows(imported):
    _, root = imported
    convs = {
        c.conv_id: c
        for c in read_artifact(
            root / "runs" / "gpt-4o" / "simulate" / "conversations.json", ConversationsFile
        ).rows
    }
    ok = convs["m01_s001_v01__gpt-4o__s0"]
    assert ok.status == "ok" and ok.turns == 2 and ok.sample == 0 and ok.target == "gpt-4o"
    assert ok.demographic == {"age": "Child or teenager (6-17)"} and ok.user_model == "unknown"
    assert ok.system_prompt == "You are a friendly, helpful assistant."
    assert convs["m02_s001_v01__gpt-4o__s0"].status == "error"
    assert "no assistant reply" in convs["m02_s001_v01__gpt-4o__s0"].error
    assert "empty message at transcript[1]" in convs["m02_s001_v01__gpt-4o__s1"].error
    assert convs["m02_s001_v01__gpt-4o__s1"].system_prompt == "You are a career coach."


def test_string_and_null_verdicts_are_error_rows_never_coerced(imported):
    _, root = imported
    rows = read_artifact(root / "runs" / "gpt-4o" / "evaluate" / "scores.json", ScoresFile).rows
    stringy = score(rows, "m01_s001_v02__gpt-4o__s0", "m01")
    assert stringy.status == "error" and stringy.present is None and stringy.passed is None
    assert "'false' (str), not a JSON boolean" in stringy.error
    null = score(rows, "m02_s001_v01__gpt-4o__s0", "m02")
    assert null.status == "error" and "evaluator did not return this metric" in null.error


def test_passed_follows_the_benchmark_metric_type(imported):
    _, root = imported
    rows = read_artifact(root / "runs" / "gpt-4o" / "evaluate" / "scores.json", ScoresFile).rows
    # the row says metric_type "positive" (its scenario's); m02 is negative in benchmark.yaml
    cross = score(rows, "m01_s001_v01__gpt-4o__s0", "m02")
    assert (cross.metric_type, cross.scenario_metric_id, cross.present, cross.passed) == (
        "negative",
        "m01",
        False,
        True,
    )
    assert cross.demographic == {
        "age": "Child or teenager (6-17)"
    }  # from the scenario: scores carry none
    contradiction = score(rows, "m02_s001_v01__gpt-4o__s1", "m02")
    assert contradiction.status == "error" and "contradicts" in contradiction.error


def test_report_counts_error_rows_and_lists_dropped_rows(imported):
    report, _ = imported
    assert (report.metrics, report.scenarios, report.scenario_errors) == (2, 3, 1)
    gpt = report.runs["gpt-4o"]
    assert (gpt.conversations, gpt.conversation_errors, gpt.scores, gpt.score_errors) == (
        4,
        2,
        5,
        3,
    )
    assert report.runs["claude-haiku-4-5"].conversations == 1  # the resumed duplicate is dropped
    assert report.error_rows == 6
    assert report.dropped == [
        "runs/claude-haiku-4-5/conversations.json[1]: repeats m01_s001_v02__claude-haiku-4-5__s0",
        "runs/gpt-4o/scores.json[5]: scored metric 'm07' is not in benchmark.yaml",
    ]


def test_embedded_target_config_and_its_key_are_not_copied(imported):
    _, root = imported
    for path in root.rglob("*"):
        if path.is_file():
            assert "sk-test-embedded-key" not in path.read_text()


def test_refuses_to_overwrite_and_to_use_an_invalid_name(imported, tmp_path):
    with pytest.raises(ConfigError, match="already exists"):
        import_impactbench(FIXTURE, data_dir=tmp_path / "data")
    with pytest.raises(ConfigError, match="cannot be a benchmark id"):
        import_impactbench(FIXTURE, name="Sycophancy Lite", data_dir=tmp_path / "data")


def test_a_folder_with_only_a_benchmark_imports_it(tmp_path):
    src = tmp_path / "only-bench"
    src.mkdir()
    shutil.copy(FIXTURE / "benchmark.yaml", src / "benchmark.yaml")
    report = import_impactbench(src, data_dir=tmp_path / "data")
    assert report.metrics == 2 and report.runs == {}
    assert not (tmp_path / "data" / "only-bench" / "gen_scenarios" / "scenarios.json").exists()


def test_an_invalid_metric_names_the_file_and_field(tmp_path):
    src = tmp_path / "bad"
    src.mkdir()
    (src / "benchmark.yaml").write_text(
        "name: x\ndescription: d\nmetrics:\n  - {id: m01, name: n, type: sideways, definition: d}\n"
    )
    with pytest.raises(ConfigError, match=r"benchmark.yaml: metrics\[m01\].type"):
        import_impactbench(src, data_dir=tmp_path / "data")


def test_scores_file_that_is_not_a_list_is_a_config_error(tmp_path):
    src = tmp_path / "odd"
    shutil.copytree(FIXTURE, src)
    (src / "runs" / "gpt-4o" / "scores.json").write_text(json.dumps({"m01": True}))
    with pytest.raises(ConfigError, match="expected a JSON list of rows"):
        import_impactbench(src, data_dir=tmp_path / "data")
    assert not (tmp_path / "data" / "odd").exists()  # nothing half-imported


def test_cli_prints_the_summary(tmp_path, capsys):
    code = main(
        ["import-impactbench", str(FIXTURE), "--name", "syc", "--data-dir", str(tmp_path / "d")]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "imported 'syc'" in out and "6 error rows in total; 2 rows dropped" in out
    assert (tmp_path / "d" / "syc" / "runs" / "gpt-4o" / "evaluate" / "scores.json").exists()
    assert main(["import-impactbench", str(tmp_path / "missing")]) == 2
