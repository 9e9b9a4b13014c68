"""A study made before one folder per stage keeps its calls: a stage whose folder holds no call
record moves the one the old layout kept (`Layout.old_calls_file`) into place, says so, and
replays it, as a re-run replays its own record (test_simulate's replay tests)."""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import pytest

from pressurebench.arms.study_plan import write_plans
from pressurebench.params import load_params
from pressurebench.paths import Layout
from pressurebench.stages import simulate
from stages.test_simulate import conversing, scenario, seed_inputs


# The old layout's call records, as its dvc.yaml declared them (`outs` with `persist: true`).
@pytest.mark.parametrize(("arm", "stage", "target", "old"), [
    (None, "gen_metrics", None, "data/pressure-core/gen_metrics.calls.jsonl"),
    (None, "gen_scenarios", None, "data/pressure-core/gen_scenarios.calls.jsonl"),
    (None, "simulate", "smollm2", "data/pressure-core/runs/smollm2/simulate.calls.jsonl"),
    (None, "evaluate", "smollm2", "data/pressure-core/runs/smollm2/evaluate.calls.jsonl"),
    ("generator/gen-b", "gen_metrics", None,
     "data/pressure-core/validation/generator/gen-b/gen_metrics.calls.jsonl"),
    ("user/user-b", "simulate", "smollm2",
     "data/pressure-core/validation/user/user-b/runs/smollm2/simulate.calls.jsonl"),
    ("evaluator/judge2", "evaluate", "smollm2",
     "data/pressure-core/validation/evaluator/judge2/runs/smollm2/evaluate.calls.jsonl"),
])
def test_the_old_layouts_record_of_every_stage_calling_models(arm, stage, target, old):
    layout = Layout(Path("data"), "pressure-core", arm)
    assert layout.old_calls_file(stage, target) == Path(old)
    assert layout.old_calls_file(stage, target) != layout.calls_file(stage, target)


def first_run(project, script) -> tuple[Layout, int, bytes, bytes]:
    """Simulate once; the layout, the calls made, the record and the conversations."""
    project.write_params(generation={"num_samples": 2})
    layout = seed_inputs([scenario("m01"), scenario("m02")])
    script.responder = conversing()
    simulate.run(project.params_path, "tiny", "target-a", provider_factory=script.factory())
    return (layout, len(script.calls), layout.calls_file("simulate", "target-a").read_bytes(),
            layout.conversations_file("target-a").read_bytes())


def test_a_study_of_the_old_layout_replays_the_record_moved_into_the_stage_folder(
        project, script, capsys):
    layout, made, record, conversations = first_run(project, script)
    old = layout.old_calls_file("simulate", "target-a")
    # The study as the old layout left it: the record beside the target's artifacts, no stage
    # folder, and another machine's empty response cache.
    layout.calls_file("simulate", "target-a").rename(old)
    shutil.rmtree(layout.stage_dir("simulate", "target-a"))
    shutil.rmtree(".pbcache")
    capsys.readouterr()

    manifest = simulate.run(project.params_path, "tiny", "target-a",
                            provider_factory=script.factory())
    assert len(script.calls) == made  # not one provider call
    assert manifest.cache["replayed_from_record"] == made and manifest.cache["misses"] == 0
    assert not old.exists()
    assert layout.calls_file("simulate", "target-a").read_bytes() == record
    assert layout.conversations_file("target-a").read_bytes() == conversations
    err = capsys.readouterr().err
    assert f"moved the call record {old} to {layout.calls_file('simulate', 'target-a')}" in err


def test_a_record_in_the_stage_folder_is_kept_and_the_old_one_left_named(project, script, capsys):
    layout, made, record, _ = first_run(project, script)
    old = layout.old_calls_file("simulate", "target-a")
    old.write_text("")  # whatever it holds, the stage's own record wins
    shutil.rmtree(".pbcache")
    capsys.readouterr()

    manifest = simulate.run(project.params_path, "tiny", "target-a",
                            provider_factory=script.factory())
    assert len(script.calls) == made
    assert manifest.cache["replayed_from_record"] == made
    assert old.read_text() == "" and layout.calls_file("simulate", "target-a").read_bytes() == record
    assert f"{old} left in place" in capsys.readouterr().err


def test_without_an_old_record_the_stage_says_nothing_of_one(project, script, capsys):
    layout, *_ = first_run(project, script)
    assert "call record" not in capsys.readouterr().err
    assert not layout.old_calls_file("simulate", "target-a").exists()


def test_a_validation_arms_record_moves_from_the_old_arm_folder(project, script, capsys):
    """The old layout had no `arms/` level: `validation/user/gen/runs/...`."""
    project.write_params(validation={"user_model_bias": ["gen"], "targets": ["target-a"]})
    seed_inputs([scenario("m01"), scenario("m02")])
    write_plans(load_params(project.params_path), "tiny")
    script.responder = conversing()
    run = functools.partial(simulate.run, project.params_path, "tiny", "target-a", arm="user/gen",
                            provider_factory=script.factory())
    run()
    arm = Layout(Path("data"), "tiny", "user/gen")
    made, record = len(script.calls), arm.calls_file("simulate", "target-a").read_bytes()
    old = Path("data/tiny/validation/user/gen/runs/target-a/simulate.calls.jsonl")
    assert arm.old_calls_file("simulate", "target-a") == old
    old.parent.mkdir(parents=True)
    arm.calls_file("simulate", "target-a").rename(old)
    shutil.rmtree(arm.stage_dir("simulate", "target-a"))
    shutil.rmtree(".pbcache")
    capsys.readouterr()

    manifest = run()
    assert len(script.calls) == made
    assert manifest.cache["replayed_from_record"] == made
    assert arm.calls_file("simulate", "target-a").read_bytes() == record and not old.exists()
    assert f"moved the call record {old}" in capsys.readouterr().err
