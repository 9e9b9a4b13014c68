"""`pressurebench import` validates every file before it writes anything: a bad input is
refused with its file and sample, and what was imported before stays as it was."""

from __future__ import annotations

import hashlib
import os
import sys

import pytest
import yaml

from pressurebench.commands.cli import main
from pressurebench.errors import ConfigError
from pressurebench.interop import (
    import_conversations,
    imported_conversations,
    judged_on_every_metric,
)
from pressurebench.interop.importing import MAX_IMPORT_BYTES
from pressurebench.params import load_params
from pressurebench.paths import imported_file
from pressurebench.schemas import Benchmark
from support import TINY_BENCHMARK
from transcripts_support import chat, inspect_log, jsonl


def rows(*ids, **extra):
    return [{"id": i, "messages": [{"role": r, "content": t} for r, t in chat()], **extra}
            for i in ids]


@pytest.fixture
def imported(project):
    """A first import, which every bad one below must leave as it was."""
    import_conversations(project.params_path, "tiny", "chats",
                         [jsonl(project.root / "good.jsonl", rows("a", "b"))])
    return {p: p.read_bytes() for p in (project.params_path, imported_file("tiny", "chats"))}


def refused(project, before, files, match, **kw):
    with pytest.raises(ConfigError, match=match) as err:
        import_conversations(project.params_path, "tiny", "chats", files, **kw)
    for path, data in before.items():
        assert path.read_bytes() == data, f"{path} was replaced"
    return str(err.value)


def test_an_import_declares_the_target_and_keeps_a_normalized_copy(project, imported):
    params = load_params(project.params_path)
    assert "chats" in params.targets
    spec = params.models["chats"]
    assert spec.provider == "imported"
    declared = spec.imported["tiny"]
    assert declared.conversations == 2 and declared.cluster_by is None
    copy = imported_file("tiny", "chats")
    assert declared.sha256 == hashlib.sha256(copy.read_bytes()).hexdigest()


def test_a_sample_without_a_metric_is_one_row_judged_on_every_metric_its_own_cluster(
        project, imported):
    params = load_params(project.params_path)
    bench = Benchmark.model_validate(TINY_BENCHMARK)
    convs = imported_conversations(params, project.params_path, "tiny", "chats", bench)
    assert [c.base_id for c in convs] == ["a", "b"]
    assert all(judged_on_every_metric(c) and c.metric_id == bench.metrics[0].id for c in convs)
    assert all(c.system_prompt == "You are helpful." and c.transcript[0].role == "user"
               for c in convs)


def test_a_named_metric_and_a_cluster_field_are_followed(project):
    metric = TINY_BENCHMARK["metrics"][0]["id"]
    src = jsonl(project.root / "m.jsonl", rows("a", "b", group="g1", metadata={"metric": metric}))
    import_conversations(project.params_path, "tiny", "chats", [src], cluster_by="group")
    params = load_params(project.params_path)
    convs = imported_conversations(params, project.params_path, "tiny", "chats",
                                   Benchmark.model_validate(TINY_BENCHMARK))
    assert [c.metric_id for c in convs] == [metric, metric]
    assert not any(judged_on_every_metric(c) for c in convs)
    assert {c.base_id for c in convs} == {f"{metric}/group=g1"}


def test_not_a_log_is_refused(project, imported):
    bad = project.root / "notes.eval"
    bad.write_text("hello")
    refused(project, imported, [bad], r"notes\.eval: not an Inspect eval log")
    bad = project.root / "notes.jsonl"
    bad.write_text("hello\n")
    refused(project, imported, [bad], r"notes\.jsonl: line 1: not JSON")


def test_a_sample_without_chat_messages_is_refused(project, imported):
    bad = jsonl(project.root / "empty.jsonl", [{"id": "x", "messages": []}])
    refused(project, imported, [bad], r"empty\.jsonl: sample 'x': it has no chat messages")


def test_a_system_only_sample_is_refused(project, imported):
    bad = inspect_log(project.root / "sys.eval", [{"id": "s1", "messages": [("system", "Be nice.")]}])
    refused(project, imported, [bad], r"sys\.eval: sample 's1': .*system-only")


def test_a_sample_with_tool_messages_is_refused(project, imported):
    bad = inspect_log(project.root / "tool.eval",
                      [{"id": "t1", "messages": [*chat(), ("tool", "42")]}])
    refused(project, imported, [bad], r"tool\.eval: sample 't1': it has a 'tool' message")


def test_duplicate_ids_are_refused_within_and_across_files(project, imported):
    twice = jsonl(project.root / "twice.jsonl", rows("a", "a"))
    refused(project, imported, [twice], r"twice\.jsonl: sample 'a': duplicate id: .*twice")
    one = jsonl(project.root / "one.jsonl", rows("z"))
    log = inspect_log(project.root / "log.eval", [{"id": "z", "messages": chat()}])
    message = refused(project, imported, [one, log], r"sample 'z': duplicate id")
    assert "one.jsonl" in message and "log.eval" in message


def test_a_missing_cluster_field_is_refused(project, imported):
    src = jsonl(project.root / "nogroup.jsonl", rows("a"))
    refused(project, imported, [src], r"nogroup\.jsonl: sample 'a': --cluster-by topic",
            cluster_by="topic")


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(project, imported):
    big = project.root / "big.jsonl"
    with open(big, "wb") as f:  # sparse: no disk used, and never read
        f.truncate(MAX_IMPORT_BYTES + 1)
    refused(project, imported, [big], r"big\.jsonl: file is 2\.0 GiB; imported files are limited")


def test_a_simulated_target_is_never_replaced(project):
    src = jsonl(project.root / "a.jsonl", rows("a"))
    with pytest.raises(ConfigError, match="'target-a' is a openai model"):
        import_conversations(project.params_path, "tiny", "target-a", [src])


def test_a_copy_edited_by_hand_is_refused(project, imported):
    copy = imported_file("tiny", "chats")
    copy.write_text(copy.read_text().replace("I see your point", "I agree"))
    params = load_params(project.params_path)
    with pytest.raises(ConfigError, match="differs from the copy"):
        imported_conversations(params, project.params_path, "tiny", "chats",
                               Benchmark.model_validate(TINY_BENCHMARK))


def test_the_params_keep_their_comments(project):
    project.params_path.write_text("# my notes\n" + project.params_path.read_text())
    import_conversations(project.params_path, "tiny", "chats",
                         [jsonl(project.root / "c.jsonl", rows("a"))])
    text = project.params_path.read_text()
    assert text.startswith("# my notes\n")
    assert yaml.safe_load(text)["models"]["chats"]["provider"] == "imported"


def test_the_command_says_what_it_imported_and_exits_2_on_bad_input(project, capsys):
    src = jsonl(project.root / "c.jsonl", rows("a", "b"))
    assert main(["import", "--benchmark", "tiny", "--target", "chats", str(src),
                 "--params", str(project.params_path)]) == 0
    out = capsys.readouterr().out
    assert "2 conversations" in out and "each conversation its own cluster" in out
    bad = jsonl(project.root / "d.jsonl", [{"id": "x", "messages": []}])
    assert main(["import", "--benchmark", "tiny", "--target", "chats", str(bad),
                 "--params", str(project.params_path)]) == 2
    assert "sample 'x'" in capsys.readouterr().err
    assert os.path.getsize(imported_file("tiny", "chats")) > 0


def test_check_names_the_imported_target_and_refuses_a_missing_copy(project, imported, capsys):
    args = ["check", "--offline", "--params", str(project.params_path)]
    assert main(args) == 0
    assert "ok  imported target chats of tiny: 2 conversations from 1 file(s)" in capsys.readouterr().out
    imported_file("tiny", "chats").unlink()
    assert main(args) == 2
    assert "chats.json: not found: run `pressurebench import` again" in capsys.readouterr().err


def test_estimate_counts_only_the_judging_of_an_imported_target(project, imported):
    from pressurebench.commands.cost_forecast import estimate

    params = load_params(project.params_path)
    lines = [line for line in estimate(params) if line.arm.endswith("/chats")]
    assert lines and {line.stage for line in lines} == {"evaluate"}
    judge = next(line for line in lines if line.role == "evaluator")
    turns = params.generation.turns if params.evaluation.per_turn else 1
    assert judge.calls == 2 * len(TINY_BENCHMARK["metrics"]) * turns


def test_jsonl_needs_no_inspect_ai_and_a_log_without_it_says_what_to_install(
        project, monkeypatch):
    log = inspect_log(project.root / "task.eval", [{"id": "s1", "messages": chat()}])
    for name in [m for m in sys.modules if m == "inspect_ai" or m.startswith("inspect_ai.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # as if not installed
    import_conversations(project.params_path, "tiny", "chats",
                         [jsonl(project.root / "c.jsonl", rows("a"))])
    with pytest.raises(ConfigError, match=r"task\.eval: reading Inspect logs needs inspect-ai"):
        import_conversations(project.params_path, "tiny", "chats", [log])


def test_the_epochs_of_an_inspect_sample_are_samples_of_one_scenario_in_one_cluster(project):
    log = inspect_log(project.root / "epochs.eval", [
        {"id": "s1", "messages": chat()},
        {"id": "s1", "epoch": 2, "messages": chat(reply="Fine, you win.")},
    ], model="anthropic/claude-x")
    import_conversations(project.params_path, "tiny", "chats", [log])
    params = load_params(project.params_path)
    assert params.models["chats"].model == "anthropic/claude-x"
    first, second = imported_conversations(params, project.params_path, "tiny", "chats",
                                           Benchmark.model_validate(TINY_BENCHMARK))
    assert first.scenario_id == second.scenario_id and first.base_id == second.base_id == "s1"
    assert (first.sample, second.sample) == (0, 1) and first.conv_id != second.conv_id
    assert first.model_versions == {"target": "anthropic/claude-x"}


def test_the_validation_studies_run_on_the_simulated_targets_and_refuse_an_imported_one(
    project, imported
):
    from pressurebench.arms.naming import validation_targets
    from pressurebench.params_fill import DVC_VALUES

    params = load_params(project.params_path)
    assert "chats" in params.targets and params.validation.targets is None
    assert "chats" not in validation_targets(params)
    assert "chats" not in DVC_VALUES["validation.targets"](params)
    raw = yaml.safe_load(project.params_path.read_text())
    raw.setdefault("validation", {})["targets"] = ["chats"]
    project.params_path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="'chats' is an imported target") as err:
        load_params(project.params_path)
    assert "validation.targets[0]" in str(err.value)
