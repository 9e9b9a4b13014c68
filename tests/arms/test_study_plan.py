"""Validation plans: the scenario subset is seeded, keeps base scenarios whole, covers every metric,
and a plan that no longer matches the params or the scenarios is refused."""

from __future__ import annotations

import pytest

from pressurebench.arms.naming import STUDIES
from pressurebench.arms.study_plan import (
    StudyPlan,
    load_plan,
    per_metric_count,
    rows_of,
    select_base_scenarios,
    write_plans,
)
from pressurebench.errors import ConfigError
from pressurebench.io import read_artifact, write_artifact
from pressurebench.params import load_params
from pressurebench.paths import Layout, plan_file, study_steps_dir
from pressurebench.schemas import Scenario, ScenariosFile, scenario_id
from pressurebench.stages.judge_probes import subset_rows


def scenarios(bases: dict[str, int], variants: int = 3) -> list[Scenario]:
    rows = []
    for metric_id, n in bases.items():
        for b in range(1, n + 1):
            for v in range(1, variants + 1):
                sid = scenario_id(metric_id, b, v)
                rows.append(
                    Scenario(
                        id=sid,
                        metric_id=metric_id,
                        base_id=sid.rsplit("_", 1)[0],
                        persona=f"Persona {sid}",
                        user_goal="a goal",
                        latent_adversarial_goal="a latent goal",
                    )
                )
    return rows


ROWS = scenarios({"m01": 10, "m02": 4, "m03": 1})


def test_same_seed_same_subset_other_seed_other_subset():
    chosen = select_base_scenarios(ROWS, 0.5, seed=7)
    assert chosen == select_base_scenarios(list(reversed(ROWS)), 0.5, seed=7)
    assert chosen != select_base_scenarios(ROWS, 0.5, seed=8)


def test_subset_is_stratified_by_metric_and_every_metric_keeps_one():
    chosen = select_base_scenarios(ROWS, 0.05, seed=1)
    assert sorted({b.split("_")[0] for b in chosen}) == ["m01", "m02", "m03"]
    assert len(chosen) == 3
    half = select_base_scenarios(ROWS, 0.5, seed=1)
    assert [sum(b.startswith(m) for b in half) for m in ("m01", "m02", "m03")] == [5, 2, 1]


def test_per_metric_count_rounds_up_and_is_exact_at_whole_shares():
    assert [per_metric_count(0.3, n) for n in (1, 3, 10, 11)] == [1, 1, 3, 4]
    assert per_metric_count(1.0, 7) == 7


def test_fraction_one_keeps_every_row():
    chosen = select_base_scenarios(ROWS, 1.0, seed=3)
    assert rows_of(ROWS, chosen) == sorted(s.id for s in ROWS)


def test_chosen_base_scenarios_keep_all_their_variants():
    chosen = select_base_scenarios(ROWS, 0.3, seed=2)
    ids = rows_of(ROWS, chosen)
    assert len(ids) == 3 * len(chosen)
    assert {i.rsplit("_", 1)[0] for i in ids} == set(chosen)


def test_adding_a_metric_does_not_change_another_metrics_draw():
    more = ROWS + scenarios({"m04": 6})
    before = select_base_scenarios(ROWS, 0.5, seed=5)
    after = select_base_scenarios(more, 0.5, seed=5)
    assert [b for b in after if not b.startswith("m04")] == before


def seed_main_scenarios(project, rows=ROWS):
    write_artifact(
        Layout(project.root / "data", "tiny").scenarios_file,
        ScenariosFile(benchmark="tiny", rows=rows),
    )


def test_plans_are_written_for_both_studies_and_record_the_subset(project):
    project.write_params(
        validation={
            "generator_bias": ["gen"],
            "user_model_bias": ["user"],
            "targets": ["target-b"],
            "fraction": 0.5,
            "seed": 11,
        }
    )
    seed_main_scenarios(project)
    plans = write_plans(load_params(project.params_path), "tiny")
    user = read_artifact(plan_file("data", "tiny", "user"), StudyPlan)
    assert user == plans["user"]
    assert [a.name for a in user.arms] == ["user/user"] and user.targets == ["target-b"]
    assert user.base_ids == select_base_scenarios(ROWS, 0.5, 11)
    assert user.scenario_ids == rows_of(ROWS, user.base_ids)
    assert user.scenarios_sha256 and user.seed == 11 and user.fraction == 0.5
    generator = read_artifact(plan_file("data", "tiny", "generator"), StudyPlan)
    assert [a.name for a in generator.arms] == ["generator/gen"]
    assert generator.scenario_ids is None  # drawn from each arm's own scenarios by its simulate stage


def test_a_study_without_arms_still_has_a_plan_and_needs_no_scenarios(project):
    plans = write_plans(load_params(project.params_path), "tiny", STUDIES)
    for study in ("generator", "user"):
        plan = read_artifact(plan_file("data", "tiny", study), StudyPlan)
        assert plan.arms == [] and plan.scenario_ids is None
        assert plan.targets == ["target-a", "target-b"]  # null validation.targets: every target
    assert plans["user"].scenarios_file is None


def test_the_judge_probes_plan_holds_the_rows_the_probes_edit(project):
    """The probes' edit stage draws its rows itself, by the same rule from the same seed."""
    project.write_params(validation={"fraction": 0.5, "seed": 3, "targets": ["target-a"]})
    seed_main_scenarios(project)
    params = load_params(project.params_path)
    plan = write_plans(params, "tiny", ["probes"])["probes"]
    assert plan.arms == [] and plan.targets == ["target-a"]
    scenarios = ScenariosFile(benchmark="tiny", rows=ROWS)
    assert plan.scenario_ids == subset_rows(params, scenarios)
    assert load_plan(params, "tiny", "probes") == plan


def test_a_plan_lies_in_the_folder_its_comparison_depends_on(project):
    """Written whatever the params switch on, the plan makes that folder exist: with the
    study's arms off, and with no probe and no target to run."""
    project.write_params(validation={"judge_probes": [], "targets": []})
    params = load_params(project.params_path)
    for study, plan in write_plans(params, "tiny").items():
        assert plan.arms == [] and plan.scenario_ids is None
        assert plan_file("data", "tiny", study).parent == study_steps_dir("data", "tiny", study)
        assert (project.root / study_steps_dir("data", "tiny", study)).is_dir()
    assert study_steps_dir("data", "tiny", "user").as_posix() == "data/tiny/validation/user/arms"
    assert study_steps_dir("data", "tiny", "probes").as_posix() == "data/tiny/validation/probes/runs"


def test_a_stale_plan_is_refused(project):
    project.write_params(validation={"user_model_bias": ["user"], "fraction": 0.5})
    seed_main_scenarios(project)
    write_plans(load_params(project.params_path), "tiny")
    project.write_params(validation={"user_model_bias": ["user"], "fraction": 0.25})
    with pytest.raises(ConfigError, match=r"fraction.*re-run `pressurebench arm plan`"):
        load_plan(load_params(project.params_path), "tiny", "user")
    project.write_params(validation={"user_model_bias": ["user"], "fraction": 0.5})
    assert load_plan(load_params(project.params_path), "tiny", "user").fraction == 0.5
    seed_main_scenarios(project, ROWS[:-1])
    with pytest.raises(ConfigError, match="changed since the plan was made"):
        load_plan(load_params(project.params_path), "tiny", "user")


def test_a_missing_plan_says_how_to_make_it(project):
    with pytest.raises(ConfigError, match="run `pressurebench arm plan` first"):
        load_plan(load_params(project.params_path), "tiny", "generator")
