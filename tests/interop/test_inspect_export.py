"""`pressurebench export inspect`: Inspect reads the logs back as the run wrote it.

Inspect's own readers are the check: `inspect_ai.log.read_eval_log` validates every field of
the log as Inspect's viewer and tools read it, and `inspect_ai.analysis.samples_df` is the data
frame researchers analyse logs with (https://inspect.aisi.org.uk/dataframe.html).
"""

from __future__ import annotations

import math
import subprocess
import sys

import pandas as pd
import pytest
from interop_support import (
    CONVERSATION_ERROR,
    CUT_OFF,
    EVALUATOR_ARM,
    FAILED_CONVERSATION,
    JUDGE_ERROR,
    JUDGE_FAILED,
)

from pressurebench.commands.cli import main
from pressurebench.io import read_artifact
from pressurebench.paths import Layout, inspect_log_file, inspect_logs_dir
from pressurebench.schemas import ConversationsFile, ScenariosFile, ScoresFile
from pressurebench.stats.results import Results
from support import WAIT_S

pytest.importorskip("inspect_ai")

TARGETS = ("target-a", "target-b")
# Inspect names a model provider/model; the mock params serve target-b as an Anthropic model.
MODELS = {"target-a": "openai/target-a-model", "target-b": "anthropic/target-b-model"}


LAYOUT = Layout("data", "tiny")
ARM_LAYOUT = Layout("data", "tiny", EVALUATOR_ARM)
LOGS = inspect_logs_dir("reports", "tiny")


def logs_of(root):
    return {t: root / inspect_log_file(LOGS, None, t) for t in TARGETS}


def test_every_conversation_is_a_sample_with_its_turns_lineage_and_scores(run_dir, capsys):
    from inspect_ai.log import read_eval_log

    assert main(["export", "inspect", "--benchmark", "tiny"]) == 0
    assert f"inspect view --log-dir {LOGS}" in capsys.readouterr().out
    scenarios = {s.id: s for s in read_artifact(run_dir / LAYOUT.scenarios_file,
                                                 ScenariosFile).rows}
    for target, path in logs_of(run_dir).items():
        log = read_eval_log(str(path))
        convs = read_artifact(run_dir / LAYOUT.conversations_file(target),
                              ConversationsFile).rows
        scores = read_artifact(run_dir / LAYOUT.scores_file(target), ScoresFile)
        assert log.status == "success" and log.eval.model == MODELS[target]
        assert log.eval.metadata["target"] == target and log.eval.metadata["arm"] == "main"
        assert len(log.samples) == len(convs) == log.results.total_samples
        samples = {s.metadata["conv_id"]: s for s in log.samples}
        for conv in convs:
            s = samples[conv.conv_id]
            assert (s.id, s.epoch) == (conv.scenario_id, conv.sample + 1)
            assert [(m.role, m.text) for m in s.messages] == (
                [("system", conv.system_prompt)] * bool(conv.system_prompt)
                + [(m.role, m.content) for m in conv.transcript])
            sc = scenarios[conv.scenario_id]
            assert s.metadata["base_id"] == conv.base_id and s.metadata["metric_id"] == sc.metric_id
            assert s.metadata["demographic"] == conv.demographic
            assert s.metadata["sample"] == conv.sample and s.metadata["persona"] == sc.persona
            assert s.metadata["landmarks"] == [lm.model_dump() for lm in sc.landmarks]
            fidelity = {f.conv_id: f for f in scores.fidelity}.get(conv.conv_id)
            assert (s.metadata["fidelity"] or {}).get("breaks") == (
                fidelity.breaks if fidelity else None)
        for row in scores.rows:
            got = samples[row.conv_id].scores[row.metric_id]
            assert got.metadata["turn_verdicts"] == [t.model_dump() for t in row.turn_verdicts]
            assert [j["present"] for j in got.metadata["judges"]] == [j.present for j in row.judges]
            if row.status == "ok":
                assert got.value == ("C" if row.passed else "I")
                assert got.explanation == row.justification


def test_failures_are_errors_and_unscored_scores_with_their_reasons(run_dir):
    from inspect_ai.log import read_eval_log

    assert main(["export", "inspect", "--benchmark", "tiny", "--arm", "main"]) == 0
    log = read_eval_log(str(logs_of(run_dir)["target-a"]))
    samples = {s.metadata["conv_id"]: s for s in log.samples}
    failed = samples[FAILED_CONVERSATION]
    assert failed.error.message == CONVERSATION_ERROR
    assert all(math.isnan(s.value) and CONVERSATION_ERROR in s.reason
               for s in failed.scores.values())
    (unjudged,) = samples[JUDGE_FAILED].scores.values()
    assert math.isnan(unjudged.value) and unjudged.reason == JUDGE_ERROR
    assert samples[JUDGE_FAILED].error is None
    cut = samples[CUT_OFF]
    assert cut.metadata["cut_off_replies"] == [cut.metadata["turns"]]
    assert cut.output.stop_reason == "max_tokens"
    assert log.results.completed_samples == len(log.samples) - 1


def test_the_results_hold_the_runs_pass_rates_with_their_intervals(run_dir):
    from inspect_ai.log import headline_metric, read_eval_log

    assert main(["export", "inspect", "--benchmark", "tiny", "--out", "logs"]) == 0
    results = read_artifact(run_dir / LAYOUT.results_file, Results)
    for target in TARGETS:
        log = read_eval_log(str(run_dir / inspect_log_file("logs", None, target)))
        expected = results.targets[target]
        by_name = {s.name: s for s in log.results.scores}
        assert list(by_name) == ["overall", *expected.by_metric]
        assert by_name["overall"].metrics["pass_rate"].value == pytest.approx(
            expected.overall.rate)
        assert headline_metric(log).metric.value == pytest.approx(expected.overall.rate)
        for metric_id, estimate in expected.by_metric.items():
            got = by_name[metric_id]
            assert got.metrics["pass_rate"].value == pytest.approx(estimate.rate)
            assert got.metrics["ci_low"].value == pytest.approx(estimate.ci_low)
            assert got.metrics["ci_high"].value == pytest.approx(estimate.ci_high)
            assert got.metadata["ci_method"] == estimate.ci_method
            assert got.unscored_samples == estimate.n_error
        overall = log.results.metadata["overall"]
        assert overall["pass_rate"] == pytest.approx(expected.overall.rate)
        assert (overall["ci_low"], overall["ci_high"]) == (expected.overall.ci_low,
                                                          expected.overall.ci_high)
        assert overall["confidence_level"] == 0.95


def test_samples_df_gives_one_row_per_conversation_whose_scores_equal_scores_json(run_dir):
    from inspect_ai.analysis import samples_df

    assert main(["export", "inspect", "--benchmark", "tiny"]) == 0
    for target, path in logs_of(run_dir).items():
        frame = samples_df(str(path))
        convs = read_artifact(run_dir / LAYOUT.conversations_file(target),
                              ConversationsFile).rows
        assert len(frame) == len(convs)
        assert sorted(frame["metadata_conv_id"]) == sorted(c.conv_id for c in convs)
        rows = frame.set_index("metadata_conv_id")
        for score in read_artifact(run_dir / LAYOUT.scores_file(target),
                                   ScoresFile).rows:
            value = rows.loc[score.conv_id, f"score_{score.metric_id}"]
            if score.status == "ok":
                assert value == ("C" if score.passed else "I"), score.conv_id
            else:
                assert pd.isna(value), score.conv_id  # missing: no verdict


def test_a_validation_arm_gets_its_own_logs_with_its_rates_from_the_study(run_dir, capsys):
    from inspect_ai.log import read_eval_log

    from pressurebench.validation import EvaluatorBiasStudy

    assert main(["export", "inspect", "--benchmark", "tiny"]) == 0
    assert f"({EVALUATOR_ARM} arm)" in capsys.readouterr().out
    study = read_artifact(run_dir / LAYOUT.study_file("evaluator_bias"), EvaluatorBiasStudy)
    (arm,) = study.arms
    for target in TARGETS:
        log = read_eval_log(str(run_dir / inspect_log_file(LOGS, EVALUATOR_ARM, target)))
        rows = read_artifact(run_dir / ARM_LAYOUT.scores_file(target), ScoresFile).rows
        assert sorted(s.metadata["conv_id"] for s in log.samples) == sorted(
            r.conv_id for r in rows)  # the main arm's conversations it re-judged, no others
        assert log.eval.metadata["evaluators"] == ["judge2"]
        assert log.results.metadata["overall"]["pass_rate"] == pytest.approx(
            arm.rates_arm[target].rate)
        assert all("only its overall rate" in s.metadata["withheld"]
                   for s in log.results.scores[1:])
    assert main(["export", "inspect", "--benchmark", "tiny", "--arm", EVALUATOR_ARM,
                 "--out", "arm-only"]) == 0
    assert sorted(p.relative_to(run_dir) for p in (run_dir / "arm-only").rglob("*.eval")) == [
        inspect_log_file("arm-only", EVALUATOR_ARM, t) for t in TARGETS]


def test_a_missing_results_file_withholds_the_rates_with_the_reason(run_dir):
    from inspect_ai.log import read_eval_log

    (run_dir / LAYOUT.results_file).unlink()
    assert main(["export", "inspect", "--benchmark", "tiny"]) == 0
    log = read_eval_log(str(logs_of(run_dir)["target-b"]))
    assert all(not s.metrics for s in log.results.scores)
    assert "aggregate stage has not run" in log.results.metadata["overall"]["withheld"]


def test_paper_export_options_are_refused_where_they_do_not_belong(run_dir, capsys):
    assert main(["export", "--benchmark", "tiny", "--out", "x"]) == 2
    assert "belong to `export inspect`" in capsys.readouterr().err


def test_without_the_extra_the_command_says_which_to_install(run_dir, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # what an absent package imports as
    assert main(["export", "inspect", "--benchmark", "tiny"]) == 2
    assert "needs the 'inspect' extra" in capsys.readouterr().err
    assert not (run_dir / LOGS).exists()


def test_the_pipeline_and_the_command_line_load_no_extra():
    """`make repro` runs without the extras: nothing but the commands themselves imports them."""
    code = ("import sys, pressurebench.commands.cli as cli, pressurebench.interop.inspect_export, "
            "pressurebench.interop.release, pressurebench.stages.aggregate; cli.build_parser(); "
            "print(sorted({'inspect_ai', 'datasets', 'mlcroissant'} & set(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=WAIT_S)
    assert done.stdout.strip() == "[]"


def test_an_arm_the_params_do_not_list_is_refused(run_dir, capsys):
    assert main(["export", "inspect", "--benchmark", "tiny", "--arm", "evaluator/nobody"]) == 2
    assert "'nobody' is not listed" in capsys.readouterr().err
    assert not (run_dir / LOGS).exists()
