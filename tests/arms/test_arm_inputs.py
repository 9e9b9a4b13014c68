"""What each arm runs on: the one inheritance rule, and the properties stages ask instead of
naming a study (which arm writes, plays, judges and reads human labels)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pressurebench.arms.inputs import resolve
from pressurebench.arms.study_plan import write_plans
from pressurebench.errors import ConfigError
from pressurebench.io import write_artifact
from pressurebench.params import load_params
from pressurebench.paths import Layout
from pressurebench.schemas import Scenario, ScenariosFile, scenario_id
from support import REPO

ARMS = {"generator_bias": ["gen2"], "user_model_bias": ["user2"], "evaluator_bias": ["judge2"],
        "targets": ["target-a"], "fraction": 0.5, "seed": 3}


@pytest.fixture
def params_path(project) -> Path:
    return project.write_params(
        models={m: {"provider": "openai", "model": f"{m}-model"} for m in ("gen2", "user2", "judge2")},
        validation=ARMS,
    )


def test_each_arm_swaps_one_role_and_reads_what_it_inherits_from_the_main_arm(params_path):
    params = load_params(params_path)
    main = Layout(params.data_dir, "tiny")
    found = {arm: resolve(params_path, params, "tiny", arm)
             for arm in (None, "generator/gen2", "user/user2", "evaluator/judge2")}
    table = {
        arm: (i.generator, i.user, i.evaluators, i.targets, i.layout.root,
              i.metrics_file.parent.parent, i.conversations_layout.root)
        for arm, i in found.items()
    }
    own = {arm: main.root / "validation" / arm.split("/")[0] / "arms" / arm.split("/")[1]
           for arm in found if arm}
    assert table == {
        None: ("gen", "user", ("judge",), ("target-a", "target-b"), main.root, main.root, main.root),
        "generator/gen2": ("gen2", "user", ("judge",), ("target-a",), own["generator/gen2"],
                           own["generator/gen2"], own["generator/gen2"]),
        "user/user2": ("gen", "user2", ("judge",), ("target-a",), own["user/user2"], main.root,
                       own["user/user2"]),
        "evaluator/judge2": ("gen", "user", ("judge2",), ("target-a",), own["evaluator/judge2"],
                             main.root, main.root),
    }


def test_what_stages_ask_an_arm(params_path):
    params = load_params(params_path)
    asked = {
        arm: (i.is_main, i.generates, i.simulates, i.keeps_curated_scenarios, i.reads_human_labels)
        for arm in (None, "generator/gen2", "user/user2", "evaluator/judge2")
        for i in [resolve(params_path, params, "tiny", arm)]
    }
    assert asked == {
        None: (True, True, True, True, True),
        "generator/gen2": (False, True, True, False, False),
        "user/user2": (False, False, True, False, False),
        "evaluator/judge2": (False, False, False, False, False),
    }


def test_only_an_arm_that_judges_the_main_conversations_judges_a_subset_of_them(params_path):
    params = load_params(params_path)
    rows = [
        Scenario(id=scenario_id(m, b, 1), metric_id=m, base_id=f"{m}_s{b:03d}", persona="p",
                 user_goal="g", latent_adversarial_goal="l")
        for m in ("m01", "m02") for b in (1, 2, 3, 4)
    ]
    write_artifact(Layout(params.data_dir, "tiny").scenarios_file,
                   ScenariosFile(benchmark="tiny", rows=rows))
    plans = write_plans(params, "tiny")
    judged = {arm: resolve(params_path, params, "tiny", arm).rows_to_judge(params, "tiny")
              for arm in (None, "generator/gen2", "user/user2", "evaluator/judge2")}
    assert judged == {None: None, "generator/gen2": None, "user/user2": None,
                      "evaluator/judge2": set(plans["evaluator"].scenario_ids)}
    assert 0 < len(judged["evaluator/judge2"]) < len(rows)


def test_an_arm_the_params_do_not_list_is_refused(params_path):
    with pytest.raises(ConfigError, match=r"validation.evaluator_bias"):
        resolve(params_path, load_params(params_path), "tiny", "evaluator/gen2")


def test_no_stage_names_a_study():
    """Stages ask the arm (`ArmInputs` properties), so a new study changes `arms/`, not them."""
    named = []
    for path in sorted((REPO / "src" / "pressurebench" / "stages").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "study":
                named.append(f"{path.name}:{node.lineno} .study")
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("arms.naming"):
                named.append(f"{path.name}:{node.lineno} imports arms.naming")
    assert named == []


def test_the_judge_probes_are_a_study_without_arms(params_path):
    """`validation.judge_probes` lists probes, not models: no arm study iterates it, while its
    comparison writes where the arm studies' do (`validation/<study>/bias/`)."""
    from pressurebench.arms.naming import STUDIES, STUDY_STAGES, configured_arms, study_of_stage

    params = load_params(params_path)
    assert list(STUDY_STAGES) == list(STUDIES) and study_of_stage("judge_probes") is None
    assert [a.name for s in STUDY_STAGES for a in configured_arms(params, s)] == [
        "generator/gen2", "user/user2", "evaluator/judge2"]
    study = Path(params.data_dir) / "tiny" / "validation" / "probes"
    main = Layout(params.data_dir, "tiny")
    assert main.study_file("judge_probes") == study / "bias" / "judge_probes.json"
    runs = study / "runs" / "target-a"
    assert main.probe_edits_file("target-a") == runs / "edit" / "probe_edits.json"
    assert main.probe_scores_file("target-a") == runs / "evaluate" / "probe_scores.json"
