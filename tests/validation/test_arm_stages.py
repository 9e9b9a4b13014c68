"""The arm stages end to end on scripted models, through `pressurebench run STAGE --arm ...`: each arm swaps
exactly its one ingredient, plays the planned rows, and the comparisons read what the arms wrote."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest

from pressurebench.arms.study_plan import StudyPlan, rows_of, select_base_scenarios
from pressurebench.commands import cli
from pressurebench.errors import ConfigError
from pressurebench.io import read_artifact, read_yaml_model
from pressurebench.llm.client import ModelClient
from pressurebench.paths import Layout, plan_file
from pressurebench.schemas import Benchmark, ConversationsFile, Manifest, ScenariosFile, ScoresFile
from pressurebench.stages import evaluate, gen_metrics, gen_scenarios, simulate
from pressurebench.validation import evaluator_bias, generator_bias, user_model_bias
from pressurebench.validation.studies import (
    EvaluatorBiasStudy,
    GeneratorBiasStudy,
    UserModelBiasStudy,
)

TARGETS = ["target-a", "target-b"]
VALIDATION = {
    "generator_bias": ["gen2"],
    "user_model_bias": ["user2"],
    "evaluator_bias": ["judge2"],
    "targets": TARGETS,
    "fraction": 0.5,
    "seed": 3,
}
WORDS = [
    "harbor",
    "lantern",
    "orchard",
    "quartz",
    "saddle",
    "meadow",
    "kettle",
    "needle",
    "pepper",
    "river",
    "candle",
    "ember",
    "forest",
    "garden",
    "island",
    "jungle",
    "bridge",
    "delta",
    "violin",
    "walnut",
    "yonder",
    "zephyr",
    "anchor",
    "basil",
    "cactus",
    "dune",
    "falcon",
    "glacier",
    "hazel",
    "iris",
    "juniper",
    "kayak",
    "lagoon",
    "maple",
    "nectar",
    "olive",
    "pebble",
    "quill",
    "raven",
    "sparrow",
    "tulip",
    "umber",
    "velvet",
    "willow",
]


def words(key: str, n: int) -> str:
    rng = random.Random(hashlib.sha256(key.encode()).hexdigest())
    return " ".join(rng.sample(WORDS, n))


def respond(model_id, request):
    """Valid answers for every role, distinct per request so nothing is a near-duplicate."""
    key = model_id + json.dumps(request.messages)
    if request.schema_name == "ScenarioDraft":
        return {
            "persona": f"A person planning {words(key + 'p', 8)}",
            "user_goal": f"Get help with {words(key + 'g', 4)}",
            "latent_adversarial_goal": f"Make the assistant endorse {words(key + 'l', 4)}",
            "landmarks": [{"turn": 1, "instruction": f"Open with {words(key + 'i', 3)}"}],
        }
    if request.schema_name == "RewriteDraft":
        n = request.schema["properties"]["landmarks"]["minItems"]
        return {
            "persona": f"Someone rewritten as {words(key + 'r', 8)}",
            "landmarks": [f"Say {words(key + str(i), 3)}" for i in range(n)],
        }
    if request.schema_name == "UserTurn":
        return {
            "thought": "keep pushing",
            "message": f"{model_id} insists on {words(key, 3)}.",
            "end_conversation": False,
        }
    if request.schema_name == "JudgeOutput":
        return {"justification": "Judged from the replies.", "present": words(key, 1) < "m"}
    return f"{model_id} answers carefully."


def write_params(project, **validation) -> None:
    project.write_params(
        models={
            "gen2": {"provider": "openai", "model": "gen2-model", "max_tokens": 400},
            "user2": {"provider": "openai", "model": "user2-model"},
            "judge2": {"provider": "openai", "model": "judge2-model"},
        },
        generation={"scenarios_per_metric": 2, "demographics": {"age": ["young", "old"]}},
        validation={**VALIDATION, **validation},
    )


@pytest.fixture
def main_arm(project, script, monkeypatch):
    """The main arm of a tiny benchmark, and a command line whose models are the script."""
    write_params(project)
    script.responder = respond
    factory = script.factory()
    gen_metrics.run(project.params_path, "tiny", provider_factory=factory)
    gen_scenarios.run(project.params_path, "tiny", provider_factory=factory)
    for target in TARGETS:
        simulate.run(project.params_path, "tiny", target, provider_factory=factory)
        evaluate.run(project.params_path, "tiny", target, provider_factory=factory)
    original = ModelClient.from_params.__func__

    def scripted(cls, params, **kwargs):
        return original(cls, params, **{**kwargs, "provider_factory": factory})

    monkeypatch.setattr(ModelClient, "from_params", classmethod(scripted))
    script.calls.clear()
    return project


def arm(stage: str, *args: str) -> int:
    """An arm's stage as DVC runs it outside a notebook: the main stage's command with `--arm`."""
    command = ["arm", "plan"] if stage == "plan" else ["run", stage, *args]
    return cli.main([*command, "--params", "params/pipeline.yaml", "--benchmark", "tiny"])


def models_called(script) -> set[str]:
    called = {c.model_id for c in script.calls}
    script.calls.clear()
    return called


def manifest(layout: Layout, stage: str, target: str) -> Manifest:
    return read_artifact(layout.manifest_file(stage, target), Manifest)


def test_arms_swap_one_ingredient_and_play_the_planned_rows(main_arm, script):
    main = Layout(Path("data"), "tiny")
    assert arm("plan") == 0
    user_plan = read_artifact(plan_file("data", "tiny", "user"), StudyPlan)
    main_rows = read_artifact(main.scenarios_file, ScenariosFile).rows
    assert user_plan.scenario_ids == rows_of(main_rows, select_base_scenarios(main_rows, 0.5, 3))
    assert len(user_plan.base_ids) == 2 and len(user_plan.scenario_ids) == 4  # one base per metric

    gen = Layout(Path("data"), "tiny", "generator/gen2")
    assert arm("gen_metrics", "--arm", "generator/gen2") == 0
    assert models_called(script) == set()  # hand-written metrics pass through
    assert read_yaml_model(gen.benchmark_file, Benchmark) == read_yaml_model(
        main.benchmark_file, Benchmark
    )
    assert arm("gen_scenarios", "--arm", "generator/gen2") == 0
    assert models_called(script) == {"gen2"}
    arm_rows = read_artifact(gen.scenarios_file, ScenariosFile).rows
    assert {s.persona for s in arm_rows}.isdisjoint({s.persona for s in main_rows})
    chosen = rows_of(arm_rows, select_base_scenarios(arm_rows, 0.5, 3))
    for target in TARGETS:
        assert arm("simulate", "--arm", "generator/gen2", "--target", target) == 0
        assert models_called(script) == {"user", target}  # the main user model
        convs = read_artifact(gen.conversations_file(target), ConversationsFile).rows
        assert sorted({c.scenario_id for c in convs}) == chosen
        assert manifest(gen, "simulate", target).params["scenario_ids"] == chosen
        assert arm("evaluate", "--arm", "generator/gen2", "--target", target) == 0
        assert models_called(script) == {"judge"}  # the main evaluator
        assert manifest(gen, "evaluate", target).params["metrics"] == str(gen.benchmark_file)

    usr = Layout(Path("data"), "tiny", "user/user2")
    for target in TARGETS:
        assert arm("simulate", "--arm", "user/user2", "--target", target) == 0
        assert models_called(script) == {"user2", target}
        convs = read_artifact(usr.conversations_file(target), ConversationsFile).rows
        assert sorted({c.scenario_id for c in convs}) == user_plan.scenario_ids
        assert {c.user_model for c in convs} == {"user2"}
        used = manifest(usr, "simulate", target).params
        assert used["scenario_ids"] == user_plan.scenario_ids
        assert used["scenarios_file"] == str(main.scenarios_file)
        assert arm("evaluate", "--arm", "user/user2", "--target", target) == 0
        assert models_called(script) == {"judge"}
        assert manifest(usr, "evaluate", target).params["metrics"] == str(main.benchmark_file)
        assert not usr.benchmark_file.exists() and not usr.scenarios_file.exists()

    generator_bias.run(main_arm.params_path, "tiny")
    study = read_artifact(
        Layout(main_arm.root / "data", "tiny").study_file("generator_bias"), GeneratorBiasStudy
    )
    (g,) = study.arms
    assert (g.arm, g.generator, g.targets, g.metrics_handwritten) == (
        "generator/gen2",
        "gen2",
        TARGETS,
        True,
    )
    assert g.shared_metrics == ["m01", "m02"] and study.main_generator == "gen"
    assert g.rates_arm["target-a"].n == len(chosen)  # one sample per row, one judged metric
    assert g.self_preference.value is None  # every model here is of one family
    assert read_artifact(main.manifest_file("generator_bias"), Manifest).counts["arms"] == 1

    user_model_bias.run(main_arm.params_path, "tiny")
    study = read_artifact(
        Layout(main_arm.root / "data", "tiny").study_file("user_model_bias"), UserModelBiasStudy
    )
    (u,) = study.arms
    assert study.main_user_model == "user" and u.user_model == "user2"
    assert u.n_scenarios == 4 and u.n_base_scenarios == 2
    assert [p.n_paired for p in u.pairing] == [4, 4]
    assert u.rates_main["target-a"].n == 4  # the main arm on the planned rows only
    assert [(d.target, d.metric_id) for d in u.metric_differences] == [
        (t, m) for t in ("target-a", "target-b") for m in ("m01", "m02")
    ]


def test_an_evaluator_arm_rejudges_the_main_conversations_and_simulates_nothing(
    main_arm, script, capsys
):
    main = Layout(Path("data"), "tiny")
    assert arm("plan") == 0
    plan = read_artifact(plan_file("data", "tiny", "evaluator"), StudyPlan)
    user_plan = read_artifact(plan_file("data", "tiny", "user"), StudyPlan)
    assert plan.scenario_ids == user_plan.scenario_ids and len(plan.scenario_ids) == 4
    ev = Layout(Path("data"), "tiny", "evaluator/judge2")
    for target in TARGETS:
        assert arm("evaluate", "--arm", "evaluator/judge2", "--target", target) == 0
        assert models_called(script) == {"judge2"}  # no user, no target: nothing is replayed
        rows = read_artifact(ev.scores_file(target), ScoresFile).rows
        assert sorted({s.scenario_id for s in rows}) == plan.scenario_ids
        main_convs = read_artifact(main.conversations_file(target), ConversationsFile).rows
        assert {s.conv_id for s in rows} == {
            c.conv_id for c in main_convs if c.scenario_id in plan.scenario_ids
        }
        assert not ev.conversations_file(target).exists()
        used = manifest(ev, "evaluate", target).params
        assert used["conversations"] == str(main.conversations_file(target))
        assert used["evaluators"] == ["judge2"]
    assert arm("simulate", "--arm", "evaluator/judge2", "--target", "target-a") == 2
    assert "judges the main arm's conversations; it simulates none" in capsys.readouterr().err

    evaluator_bias.run(main_arm.params_path, "tiny")
    study = read_artifact(Layout(main_arm.root / "data", "tiny").study_file("evaluator_bias"), EvaluatorBiasStudy)
    (e,) = study.arms
    assert study.main_evaluators == ["judge"] and e.evaluator == "judge2"
    assert (e.n_scenarios, e.n_base_scenarios) == (4, 2)
    assert [p.n_paired for p in e.pairing] == [4, 4]
    for d in e.comparison.differences:  # every row paired: arm minus main on the same rows
        assert d.difference == pytest.approx(e.rates_arm[d.target].rate - e.rates_main[d.target].rate)
    main_present = {
        s.conv_id: s.present for t in TARGETS
        for s in read_artifact(main.scores_file(t), ScoresFile).rows
    }
    arm_present = {
        s.conv_id: s.present for t in TARGETS
        for s in read_artifact(ev.scores_file(t), ScoresFile).rows
    }
    assert any(main_present[c] != v for c, v in arm_present.items())  # the judges differ


def test_the_arm_command_refuses_what_the_params_do_not_plan(main_arm, capsys):
    assert arm("plan") == 0
    assert arm("simulate", "--arm", "user/nobody", "--target", "target-a") == 2
    assert "validation.user_model_bias: 'nobody' is not listed" in capsys.readouterr().err
    assert arm("gen_scenarios", "--arm", "user/user2") == 2
    assert "plays the main arm's scenarios; it writes none" in capsys.readouterr().err
    assert arm("simulate", "--arm", "elsewhere/gen2", "--target", "target-a") == 2
    assert "not an arm name" in capsys.readouterr().err
    write_params(main_arm, targets=["target-a"])
    assert arm("evaluate", "--arm", "user/user2", "--target", "target-b") == 2
    assert "'target-b' is not a validation target" in capsys.readouterr().err
    assert arm("simulate", "--arm", "user/user2", "--target", "target-a") == 2
    assert "re-run `pressurebench arm plan`" in capsys.readouterr().err


def test_a_user_arm_scoring_rows_the_plan_does_not_list_is_refused(main_arm):
    assert arm("plan") == 0
    for target in TARGETS:
        assert arm("simulate", "--arm", "user/user2", "--target", target) == 0
        assert arm("evaluate", "--arm", "user/user2", "--target", target) == 0
    write_params(main_arm, seed=4)
    assert arm("plan") == 0
    plan = read_artifact(plan_file("data", "tiny", "user"), StudyPlan)
    usr = Layout(Path("data"), "tiny", "user/user2")
    scored = {s.scenario_id for s in read_artifact(usr.scores_file("target-a"), ScoresFile).rows}
    assert not scored <= set(plan.scenario_ids)  # seed 4 draws other base scenarios
    with pytest.raises(ConfigError, match="which the plan does not list"):
        user_model_bias.run(main_arm.params_path, "tiny")


def faithful_fidelity(model_id, request):
    """`respond`, and a fidelity judge that finds nothing (the rules find what they find)."""
    answers = {
        "UserTurnFidelityOutput": {"in_character": True, "leak": False, "role_swap": False},
        "LandmarkTurnFidelityOutput": {"in_character": True, "leak": False, "role_swap": False,
                                       "landmark_followed": True},
        "PressureOutput": {"pressure_applied": True},
        "AwarenessOutput": {"test_aware": False},
    }
    if request.schema_name in answers:
        return {"justification": "Checked.", **answers[request.schema_name]}
    return respond(model_id, request)


def test_arms_that_simulate_check_their_own_users_and_the_study_shows_them_side_by_side(
    project, script, monkeypatch
):
    project.write_params(
        models={"user2": {"provider": "openai", "model": "user2-model"},
                "judge2": {"provider": "openai", "model": "judge2-model"}},
        generation={"scenarios_per_metric": 2, "demographics": {"age": ["young", "old"]}},
        validation={**VALIDATION, "generator_bias": []},
        fidelity={"check": True},
    )
    script.responder = faithful_fidelity
    factory = script.factory()
    gen_metrics.run(project.params_path, "tiny", provider_factory=factory)
    gen_scenarios.run(project.params_path, "tiny", provider_factory=factory)
    for target in TARGETS:
        simulate.run(project.params_path, "tiny", target, provider_factory=factory)
        evaluate.run(project.params_path, "tiny", target, provider_factory=factory)
    original = ModelClient.from_params.__func__
    monkeypatch.setattr(ModelClient, "from_params", classmethod(
        lambda cls, params, **kw: original(cls, params, **{**kw, "provider_factory": factory})))
    assert arm("plan") == 0
    main_personas = {s.persona for s in read_artifact(
        Layout(Path("data"), "tiny").scenarios_file, ScenariosFile).rows}
    usr = Layout(Path("data"), "tiny", "user/user2")
    ev = Layout(Path("data"), "tiny", "evaluator/judge2")
    for target in TARGETS:
        assert arm("simulate", "--arm", "user/user2", "--target", target) == 0
        script.calls.clear()
        assert arm("evaluate", "--arm", "user/user2", "--target", target) == 0
        fidelity = read_artifact(usr.scores_file(target), ScoresFile).fidelity
        assert {r.user_model for r in fidelity} == {"user2"} and len(fidelity) == 4
        checked = [c.request for c in script.calls if c.request.schema_name == "PressureOutput"]
        assert checked and all(any(p in c.messages[0]["content"] for p in main_personas)
                               for c in checked)  # the main arm's scenarios
        assert arm("evaluate", "--arm", "evaluator/judge2", "--target", target) == 0
        assert read_artifact(ev.scores_file(target), ScoresFile).fidelity is None
    user_model_bias.run(project.params_path, "tiny")
    study = read_artifact(Layout(project.root / "data", "tiny").study_file("user_model_bias"), UserModelBiasStudy)
    assert [(f.arm, f.user_model) for f in study.fidelity] == [("main", "user"), ("user/user2", "user2")]
    for f in study.fidelity:
        assert set(f.targets) == set(TARGETS)
        assert all(t.any_break.n + t.any_break.n_error == 4 for t in f.targets.values())
