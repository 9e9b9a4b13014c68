"""The plan of each validation study: its arms, targets, seed, fraction and scenario subset.

`pressurebench arm plan` writes one plan per study, always (with no arms or no target it lists
none), into the folder the study's comparison depends on (`paths.plan_file`): so that folder
exists whatever the params switch on or off. The
user-model plan fixes which of the main arm's scenario rows the alternative
user replays, the evaluator plan which of the main arm's conversations the
alternative judge re-reads, the judge probes' plan which of them the probes edit and re-judge
(their edit stage draws the same rows by the same rule); a generator arm's rows exist only after
it has written them, so
its subset is drawn by its simulate stage (`arms.inputs`) with the same rule and recorded in that
arm's simulate manifest.

The subset is drawn at the level of base scenarios, so a chosen base scenario
keeps all its demographic variants (the bootstrap resamples whole base
scenarios), within each metric, so every metric keeps at least one, and from a
seed, so the same params always choose the same rows.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import Field

from ..errors import ConfigError
from ..io import read_artifact, read_text, write_artifact
from ..params import Params
from ..paths import Layout, plan_file
from ..schemas import SCHEMA_VERSION, Row, Scenario, ScenariosFile
from .naming import ON_MAIN_ROWS, STUDIES, configured_arms, validation_targets

PlannedStudy = Literal["generator", "user", "evaluator", "probes"]
# Every study with a plan: the arm studies and the judge probes.
PLANNED_STUDIES: tuple[PlannedStudy, ...] = (*STUDIES, "probes")


class PlannedArm(Row):
    name: str
    model: str


class StudyPlan(Row):
    schema_version: Literal[1] = SCHEMA_VERSION
    benchmark: str
    study: PlannedStudy
    arms: list[PlannedArm] = Field(description="none for the judge probes, a study without arms")
    targets: list[str] = Field(description="the validation targets every arm plays")
    seed: int
    fraction: float = Field(gt=0.0, le=1.0, description="share of base scenarios per metric")
    scenarios_file: str | None = Field(
        default=None,
        description="user, evaluator and probes studies: the main arm's scenarios the subset is "
        "drawn from",
    )
    scenarios_sha256: str | None = Field(
        default=None, description="that file's hash, so a stale plan is refused"
    )
    base_ids: list[str] | None = Field(
        default=None,
        description="user, evaluator and probes studies: the chosen base scenarios; null with "
        "nothing to run",
    )
    scenario_ids: list[str] | None = Field(
        default=None,
        description="user, evaluator and probes studies: every row of the chosen base scenarios",
    )


def per_metric_count(fraction: float, n: int) -> int:
    """Base scenarios kept of a metric's n: the fraction rounded up, at least one, at most n."""
    return max(1, min(n, math.ceil(round(fraction * n, 9))))


def select_base_scenarios(scenarios: Iterable[Scenario], fraction: float, seed: int) -> list[str]:
    """A seeded subset of the base scenarios, drawn within each metric; sorted base ids.

    Each metric draws from its own stream (seed and metric id), so adding a
    metric or a base scenario elsewhere does not change another metric's draw.
    """
    by_metric: dict[str, set[str]] = {}
    for s in scenarios:
        by_metric.setdefault(s.metric_id, set()).add(s.base_id)
    chosen: list[str] = []
    for metric_id in sorted(by_metric):
        bases = sorted(by_metric[metric_id])
        k = per_metric_count(fraction, len(bases))
        chosen += random.Random(f"{seed}:{metric_id}").sample(bases, k)
    return sorted(chosen)


def rows_of(scenarios: Iterable[Scenario], base_ids: Iterable[str]) -> list[str]:
    """Every scenario row (all demographic variants) of the given base scenarios, sorted."""
    wanted = set(base_ids)
    return sorted(s.id for s in scenarios if s.base_id in wanted)


def file_sha256(path: Path) -> str:
    return hashlib.sha256(read_text(path).encode("utf-8")).hexdigest()


def plan_settings(params: Params, benchmark: str, study: PlannedStudy) -> dict:
    """The plan fields that follow from the params alone (not from the scenarios)."""
    arms = [] if study == "probes" else configured_arms(params, study)
    return {
        "benchmark": benchmark,
        "study": study,
        "arms": [PlannedArm(name=a.name, model=a.model) for a in arms],
        "targets": validation_targets(params),
        "seed": params.validation.seed,
        "fraction": params.validation.fraction,
    }


def runs_on_main_rows(plan: StudyPlan, params: Params) -> bool:
    """Whether the study plays a subset of the main arm's rows: a user or evaluator study with
    arms, the judge probes with a probe and a target to probe."""
    if plan.study == "probes":
        return bool(params.validation.judge_probes and plan.targets)
    return plan.study in ON_MAIN_ROWS and bool(plan.arms)


def build_plan(params: Params, benchmark: str, study: PlannedStudy) -> StudyPlan:
    """The plan the params call for; a study on the main arm's rows (`runs_on_main_rows`) draws
    them from the main arm's scenarios."""
    plan = StudyPlan(**plan_settings(params, benchmark, study))
    if not runs_on_main_rows(plan, params):
        return plan
    path = Layout(params.data_dir, benchmark).scenarios_file
    scenarios = read_artifact(path, ScenariosFile)
    if not scenarios.rows:
        raise ConfigError(path, f"no scenario rows for the {study} study's arms", "rows")
    base_ids = select_base_scenarios(scenarios.rows, plan.fraction, plan.seed)
    return plan.model_copy(
        update={
            "scenarios_file": str(path),
            "scenarios_sha256": file_sha256(path),
            "base_ids": base_ids,
            "scenario_ids": rows_of(scenarios.rows, base_ids),
        }
    )


def write_plans(params: Params, benchmark: str,
                studies: Iterable[PlannedStudy] = PLANNED_STUDIES) -> dict[PlannedStudy, StudyPlan]:
    """Write the plan of each of `studies` (even one without arms) and return them."""
    plans = {}
    for study in studies:
        plans[study] = build_plan(params, benchmark, study)
        write_artifact(plan_file(params.data_dir, benchmark, study), plans[study])
    return plans


def load_plan(params: Params, benchmark: str, study: PlannedStudy) -> StudyPlan:
    """The written plan, refused when it no longer matches the params or the main scenarios.

    A stale plan would silently run (or compare) other arms, targets or rows
    than the params say; re-running `pressurebench arm plan` fixes it.
    """
    path = plan_file(params.data_dir, benchmark, study)
    if not path.exists():
        raise ConfigError(path, "no validation plan; run `pressurebench arm plan` first")
    plan = read_artifact(path, StudyPlan)
    expected = plan_settings(params, benchmark, study)
    for field, value in expected.items():
        if getattr(plan, field) != value:
            raise ConfigError(
                path,
                f"the plan says {getattr(plan, field)!r}, the params {value!r}; "
                "re-run `pressurebench arm plan`",
                field,
            )
    if (
        plan.scenarios_file is not None
        and file_sha256(Path(plan.scenarios_file)) != plan.scenarios_sha256
    ):
        raise ConfigError(
            path,
            f"{plan.scenarios_file} changed since the plan was made; "
            "re-run `pressurebench arm plan`",
            "scenarios_sha256",
        )
    return plan
