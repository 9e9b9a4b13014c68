"""Bad input: one line naming the file and field, a non-zero exit, and nothing touched.

Every case starts from a project whose pipeline has run (data, cache, manifests
all present), breaks one input, and runs the command line on it. The command
must exit 2 with a single `pressurebench: <file>: <field>: <problem>` line,
make no model call, and leave every file of the project byte-for-byte and
mtime-for-mtime as it was. A stage given bad data raises ConfigError before
it writes anything.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml
from reliability_support import BENCHMARK, KEY_ENV, PARAMS, cli_process, message_lines, snapshot

from pressurebench.commands import cli
from pressurebench.errors import ConfigError
from pressurebench.stages import aggregate, evaluate, gen_metrics, gen_scenarios, simulate

DATA = Path("data") / BENCHMARK
SOURCE = Path("benchmarks") / BENCHMARK / "benchmark.yaml"
STAGES = {
    "gen_metrics": (lambda: gen_metrics.run(PARAMS, BENCHMARK), ["run", "gen_metrics"]),
    "gen_scenarios": (lambda: gen_scenarios.run(PARAMS, BENCHMARK), ["run", "gen_scenarios"]),
    "simulate": (lambda: simulate.run(PARAMS, BENCHMARK, "target-a"),
                 ["run", "simulate", "--target", "target-a"]),
    "evaluate": (lambda: evaluate.run(PARAMS, BENCHMARK, "target-a"),
                 ["run", "evaluate", "--target", "target-a"]),
    "aggregate": (lambda: aggregate.run(PARAMS, BENCHMARK), ["run", "aggregate"]),
}


def edit_yaml(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def refused(capsys, server, root: Path, argv: list[str], *fragments: str) -> str:
    """Run `pressurebench ARGV`: exit 2, one line holding every fragment, no call, nothing touched."""
    before = snapshot(root)
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = message_lines(err)
    assert len(lines) == 1 and err.strip() == lines[0], err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert server.total_requests == 0
    assert snapshot(root) == before, "a refused command changed files"
    return lines[0]


def stage_refuses(capsys, server, root: Path, stage: str, file: Path, field: str | None, *fragments: str):
    """The stage raises ConfigError naming `file` and `field`, and its command exits 2 the same way."""
    run, argv = STAGES[stage]
    before = snapshot(root)
    with pytest.raises(ConfigError) as err:
        run()
    assert Path(err.value.path) == file and err.value.field == field, str(err.value)
    assert snapshot(root) == before
    where = f"{file}: {field}: " if field else f"{file}: "
    refused(capsys, server, root, [*argv, "--benchmark", BENCHMARK], where, *fragments)


# --- params and benchmark definitions -------------------------------------------------


def test_malformed_yaml_in_params(proj, capsys, server):
    (proj / PARAMS).write_text("models:\n  gen: {provider: openai\nroles: [\n")
    refused(capsys, server, proj, ["check"], f"{PARAMS}: malformed YAML at line ")
    refused(capsys, server, proj, ["run", "simulate", "--benchmark", BENCHMARK, "--target", "target-a"],
            f"{PARAMS}: malformed YAML at line ")


def test_malformed_yaml_in_a_benchmark_definition(proj, capsys, server):
    (proj / SOURCE).write_text("name: tiny\ndescription: [unclosed\n")
    refused(capsys, server, proj, ["check"], f"{SOURCE}: malformed YAML at line ")


@pytest.mark.parametrize("field", ["name", "description"])
def test_benchmark_without_name_or_description(proj, capsys, server, field):
    edit_yaml(proj / SOURCE, lambda b: b.pop(field))
    refused(capsys, server, proj, ["check"], f"{SOURCE}: {field}: Field required")
    stage_refuses(capsys, server, proj, "gen_metrics", SOURCE, field, "Field required")


def test_metric_with_an_invalid_type(proj, capsys, server):
    edit_yaml(proj / SOURCE, lambda b: b["metrics"][1].update(type="neutral"))
    refused(capsys, server, proj, ["check"], f"{SOURCE}: metrics[m02].type: Input should be 'positive' or 'negative'")
    # The same mistake in the pipeline's own copy stops the next stage.
    edit_yaml(proj / DATA / "gen_metrics" / "benchmark.yaml", lambda b: b["metrics"][1].update(type="neutral"))
    stage_refuses(capsys, server, proj, "gen_scenarios", DATA / "gen_metrics" / "benchmark.yaml", "metrics[m02].type",
                  "Input should be 'positive' or 'negative'")


def test_duplicate_metric_ids(proj, capsys, server):
    edit_yaml(proj / SOURCE, lambda b: b["metrics"][1].update(id="m01"))
    refused(capsys, server, proj, ["check"], f"{SOURCE}: metrics: ", "duplicate metric id 'm01'")
    edit_yaml(proj / DATA / "gen_metrics" / "benchmark.yaml", lambda b: b["metrics"][1].update(id="m01"))
    stage_refuses(capsys, server, proj, "evaluate", DATA / "gen_metrics" / "benchmark.yaml", "metrics",
                  "duplicate metric id 'm01'")


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("roles.user", lambda p: p["roles"].update(user="ghost")),
        ("roles.evaluator", lambda p: p["roles"].update(evaluator=["judge", "ghost"])),
        ("targets[1]", lambda p: p["targets"].__setitem__(1, "ghost")),
    ],
)
def test_unknown_model_id_in_roles_or_targets(proj, capsys, server, field, change):
    edit_yaml(proj / PARAMS, change)
    refused(capsys, server, proj, ["check"], f"{PARAMS}: {field}: unknown model id 'ghost' (known: ")
    refused(capsys, server, proj, ["run", "evaluate", "--benchmark", BENCHMARK, "--target", "target-a"],
            f"{PARAMS}: {field}: unknown model id 'ghost'")


def test_missing_api_key_fails_before_any_call(proj, server):
    """In a real process, with no key anywhere: exit 2 naming the variable, and no request."""
    before = snapshot(proj)
    proc = cli_process(["run", "simulate", "--benchmark", BENCHMARK, "--target", "target-a"], proj)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (
        f"pressurebench: {PARAMS}: models.user.api_key_env: environment variable {KEY_ENV} is not set "
        "(needed by model 'user'); export it or put it in .env"
    )
    assert server.total_requests == 0
    assert snapshot(proj) == before


@pytest.mark.parametrize("turns", [0, -3])
def test_turns_not_positive(proj, capsys, server, turns):
    edit_yaml(proj / PARAMS, lambda p: p["generation"].update(turns=turns))
    refused(capsys, server, proj, ["check"], f"{PARAMS}: generation.turns: Input should be greater than or equal to 1")
    refused(capsys, server, proj, ["run", "simulate", "--benchmark", BENCHMARK, "--target", "target-a"],
            f"{PARAMS}: generation.turns: ")


def test_empty_demographic_axis(proj, capsys, server):
    edit_yaml(proj / PARAMS, lambda p: p["generation"].update(demographics={"age": ["young", "old"], "region": []}))
    refused(capsys, server, proj, ["check"],
            f"{PARAMS}: generation.demographics: ", "demographic axis 'region' has no values")
    refused(capsys, server, proj, ["run", "gen_scenarios", "--benchmark", BENCHMARK],
            f"{PARAMS}: generation.demographics: ")


# --- data files ------------------------------------------------------------------------


def truncate(path: Path) -> None:
    text = path.read_bytes()
    path.write_bytes(text[: len(text) // 2])


@pytest.mark.parametrize(
    ("stage", "file"),
    [
        ("simulate", DATA / "gen_scenarios" / "scenarios.json"),
        ("evaluate", DATA / "runs" / "target-a" / "simulate" / "conversations.json"),
        ("aggregate", DATA / "runs" / "target-b" / "evaluate" / "scores.json"),
    ],
)
def test_truncated_data_file(proj, capsys, server, stage, file):
    truncate(proj / file)
    stage_refuses(capsys, server, proj, stage, file, None, "corrupted JSON at line ")


def test_data_file_that_is_not_text(proj, capsys, server):
    (proj / DATA / "gen_metrics" / "benchmark.yaml").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00binary")
    stage_refuses(capsys, server, proj, "gen_scenarios", DATA / "gen_metrics" / "benchmark.yaml", None,
                  "cannot read file (UnicodeDecodeError")


def test_data_file_replaced_by_a_directory(proj, capsys, server):
    """Unreadable input, portably: even root cannot read a directory as a file."""
    path = proj / DATA / "gen_scenarios" / "scenarios.json"
    path.unlink()
    path.mkdir()
    stage_refuses(capsys, server, proj, "simulate", DATA / "gen_scenarios" / "scenarios.json", None,
                  "cannot read file (IsADirectoryError")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their permissions; "
                    "the directory case above covers unreadable input")
def test_data_file_without_read_permission(proj, capsys, server):
    path = proj / DATA / "runs" / "target-a" / "simulate" / "conversations.json"
    path.chmod(0)
    try:
        stage_refuses(capsys, server, proj, "evaluate", DATA / "runs" / "target-a" / "simulate" / "conversations.json",
                      None, "cannot read file (PermissionError")
    finally:
        path.chmod(0o644)


@pytest.mark.parametrize(
    ("stage", "file"),
    [
        ("simulate", DATA / "gen_scenarios" / "scenarios.json"),
        ("evaluate", DATA / "runs" / "target-a" / "simulate" / "conversations.json"),
        ("aggregate", DATA / "runs" / "target-a" / "evaluate" / "scores.json"),
    ],
)
def test_artifact_from_an_older_schema_version(proj, capsys, server, stage, file):
    edit_json(proj / file, lambda d: d.update(schema_version=0))
    stage_refuses(capsys, server, proj, stage, file, "schema_version",
                  "written by schema version 0, this pressurebench reads version 1; re-run the stage")


def test_scenarios_of_a_metric_the_benchmark_lacks(proj, capsys, server):
    """A scenario whose metric is gone would play against nothing; refuse the file, not the rows."""
    edit_yaml(proj / DATA / "gen_metrics" / "benchmark.yaml", lambda b: b["metrics"].pop(1))
    stage_refuses(capsys, server, proj, "simulate", DATA / "gen_scenarios" / "scenarios.json", "rows[2].metric_id",
                  "metric 'm02' is not defined in ")


@pytest.mark.parametrize(
    ("stage", "file"),
    [("simulate", DATA / "gen_scenarios" / "scenarios.json"),
     ("evaluate", DATA / "runs" / "target-a" / "simulate" / "conversations.json")],
)
def test_input_without_rows(proj, capsys, server, stage, file):
    """No rows means nothing was measured: a stage that called no model must not report success."""
    edit_json(proj / file, lambda d: d.update(rows=[]))
    stage_refuses(capsys, server, proj, stage, file, "rows", "no ")


@pytest.mark.parametrize("key", ["mock-key-for-reliability-tests\n", " mock-key-for-reliability-tests",
                                 "mock-key\r\nX-Injected: 1"])
def test_api_key_with_whitespace_or_a_line_break(proj, capsys, server, monkeypatch, key):
    """Sent as a header such a key fails every call (or injects a header); refuse it up front."""
    monkeypatch.setenv(KEY_ENV, key)
    line = refused(capsys, server, proj, ["run", "simulate", "--benchmark", BENCHMARK, "--target", "target-a"],
                   f"{PARAMS}: models.user.api_key_env: environment variable {KEY_ENV} holds whitespace")
    assert key.strip().split()[0] not in line
