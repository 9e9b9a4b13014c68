"""Artifact schemas: consistency rules that keep failures from looking like results."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from pressurebench.errors import ConfigError
from pressurebench.io import read_artifact, write_artifact
from pressurebench.schemas import (
    Benchmark,
    Conversation,
    ConversationsFile,
    JudgeOutput,
    Scenario,
    Score,
    base_id_of,
    conv_id,
    scenario_id,
)


def score(**kw) -> dict:
    row = {"conv_id": "m01_s001_v01__t__s0", "scenario_id": "m01_s001_v01", "base_id": "m01_s001",
               "metric_id": "m01", "scenario_metric_id": "m01", "metric_type": "negative", "target": "t",
               "sample": 0, "status": "ok", "present": True, "passed": False, "justification": "j"}
    row.update(kw)
    return row


def test_lineage_ids():
    assert scenario_id("m01", 2, 1) == "m01_s002_v01"
    assert base_id_of("m12_s010_v03") == "m12_s010"
    assert conv_id("m01_s002_v01", "gpt-4o", 3) == "m01_s002_v01__gpt-4o__s3"
    with pytest.raises(ValueError):
        base_id_of("m1_s2_v3")


def test_scenario_lineage_must_match():
    ok = {"id": "m01_s002_v01", "metric_id": "m01", "base_id": "m01_s002", "persona": "p", "user_goal": "g",
              "latent_adversarial_goal": "l"}
    Scenario.model_validate(ok)
    with pytest.raises(ValidationError, match="base_id"):
        Scenario.model_validate({**ok, "base_id": "m01_s003"})
    with pytest.raises(ValidationError, match="metric_id"):
        Scenario.model_validate({**ok, "metric_id": "m02"})


def test_score_passed_must_follow_from_present_and_type():
    Score.model_validate(score())
    Score.model_validate(score(metric_type="positive", present=True, passed=True))
    with pytest.raises(ValidationError, match="passed does not follow"):
        Score.model_validate(score(present=True, passed=True))


def test_error_score_carries_no_verdict():
    Score.model_validate(score(status="error", present=None, passed=None, error="judge failed"))
    with pytest.raises(ValidationError, match="no verdict"):
        Score.model_validate(score(status="error", present=False, passed=True, error="x"))
    with pytest.raises(ValidationError, match="needs a reason"):
        Score.model_validate(score(status="error", present=None, passed=None))


def test_ok_conversation_needs_a_reply():
    base = {"conv_id": "c", "scenario_id": "m01_s001_v01", "base_id": "m01_s001", "metric_id": "m01",
                "target": "t", "sample": 0, "user_model": "u"}
    with pytest.raises(ValidationError, match="assistant reply"):
        Conversation.model_validate({**base, "status": "ok", "transcript": []})
    Conversation.model_validate({**base, "status": "error", "error": "empty transcript"})


def test_judge_output_rejects_string_booleans():
    assert JudgeOutput.model_validate_json('{"justification": "x", "present": false}').present is False
    for bad in ('"false"', '"true"', "0", "1", "null"):
        with pytest.raises(ValidationError):
            JudgeOutput.model_validate_json(f'{{"justification": "x", "present": {bad}}}')


def test_duplicate_metric_ids_rejected():
    metric = {"id": "m01", "name": "n", "type": "positive", "definition": "d"}
    with pytest.raises(ValidationError, match="duplicate metric id 'm01'"):
        Benchmark(name="b", description="d", metrics=[metric, metric])


def test_invalid_metric_type_rejected():
    with pytest.raises(ValidationError):
        Benchmark(name="b", description="d", metrics=[{"id": "m01", "name": "n", "type": "neutral", "definition": "d"}])


def test_artifact_round_trip_and_version_check(tmp_path):
    path = tmp_path / "conversations.json"
    write_artifact(path, ConversationsFile(benchmark="b", target="t", rows=[]))
    assert read_artifact(path, ConversationsFile).target == "t"
    data = json.loads(path.read_text())
    data["schema_version"] = 0
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="schema version 0"):
        read_artifact(path, ConversationsFile)


def test_corrupted_artifact_names_file_and_position(tmp_path):
    path = tmp_path / "scores.json"
    path.write_text('{"schema_version": 1, "rows": [')
    with pytest.raises(ConfigError) as exc:
        read_artifact(path, ConversationsFile)
    assert str(path) in str(exc.value) and "corrupted JSON at line 1" in str(exc.value)


def test_invalid_artifact_field_named(tmp_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps({"schema_version": 1, "benchmark": "b", "target": "t",
                                "rows": [{"conv_id": "c"}]}))
    with pytest.raises(ConfigError) as exc:
        read_artifact(path, ConversationsFile)
    assert "rows[0]." in str(exc.value)


def test_atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    import os

    from pressurebench import io

    path = tmp_path / "out.json"
    path.write_text("old")

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        io.atomic_write_text(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


@pytest.mark.parametrize("binary", [False, True])
def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary_one(tmp_path, binary):
    from pressurebench.io import atomic_write

    path = tmp_path / "batches" / "b1.json"
    path.parent.mkdir()
    path.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_write(path, binary=binary, durable=False) as fh:
        fh.write(b"new" if binary else "new")
        raise KeyboardInterrupt
    assert path.read_text() == "old"
    assert [p.name for p in path.parent.iterdir()] == ["b1.json"]
    with atomic_write(tmp_path / "new" / "folder" / "x.txt") as fh:  # the folder is made
        fh.write("x")
    assert (tmp_path / "new" / "folder" / "x.txt").read_text() == "x"


def test_every_file_the_package_replaces_goes_through_the_one_atomic_writer():
    """`io.atomic_write` cleans up after a failed write; a hand-made temp-and-rename elsewhere
    (as the batch records had, without the cleanup) is one that may not."""
    from support import REPO

    package = REPO / "src" / "pressurebench"
    # local_weights renames the file llama.cpp wrote, which no Python writer can produce
    allowed = {package / "io.py", package / "llm" / "providers" / "local_weights.py"}
    renaming = sorted(str(p.relative_to(package)) for p in package.rglob("*.py")
                      if p not in allowed and ("os.replace(" in (text := p.read_text())
                                               or "temp_file_beside(" in text
                                               or "mkstemp(" in text))
    assert renaming == []
