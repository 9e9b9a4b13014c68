"""Validation arms: what each is called, where its data lives, and which ingredient it swaps.

A generator-bias arm `generator/<G>` regenerates the benchmark's metrics and
scenarios with model G and then plays and judges them as the main arm does; a
user-model-bias arm `user/<U>` replays a subset of the main arm's scenario rows
with model U playing the user; an evaluator-bias arm `evaluator/<E>` re-judges
the main arm's own conversations of such a subset with model E as the judge.
Everything else (targets, turns, samples, and every other role) stays as in the
main arm, so a difference between the arms is the swapped ingredient's doing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ConfigError
from ..params import Params
from ..paths import STUDY_COMPARISONS, Layout

Study = Literal["generator", "user", "evaluator"]
GENERATOR: Study = "generator"
USER: Study = "user"
EVALUATOR: Study = "evaluator"
STUDIES: tuple[Study, ...] = (GENERATOR, USER, EVALUATOR)
# Studies whose arms work on a seeded subset of the main arm's own scenario rows.
ON_MAIN_ROWS: tuple[Study, ...] = (USER, EVALUATOR)
# Each arm study's comparison stage, named as the params key that lists the study's arms
# (`validation.<stage>`); the judge probes' comparison is no arm study's.
STUDY_STAGES: dict[Study, str] = {study: STUDY_COMPARISONS[study] for study in STUDIES}


@dataclass(frozen=True)
class Arm:
    study: Study
    model: str

    @property
    def name(self) -> str:
        return f"{self.study}/{self.model}"


def configured_arms(params: Params, study: Study) -> list[Arm]:
    """The arms of one study, in the order the params list them."""
    return [Arm(study, m) for m in getattr(params.validation, STUDY_STAGES[study])]


def study_of_stage(stage: str) -> Study | None:
    """The study whose comparison stage is `stage`; None for any other stage."""
    return next((study for study, name in STUDY_STAGES.items() if name == stage), None)


def validation_targets(params: Params) -> list[str]:
    """`validation.targets`, or every simulated (not imported) target when it is null. An
    empty list is no target, as DVC's matrices read it."""
    listed = params.validation.targets
    return list(params.simulated_targets() if listed is None else listed)


def resolve_arm(params_path: str | Path, params: Params, name: str) -> Arm:
    """The configured arm called `name` (`generator/<model>`, `user/<model>` or
    `evaluator/<model>`).

    An arm the params do not list is refused: its data would sit where no
    comparison ever reads it, or be read as if it had been planned.
    """
    study, _, model = name.partition("/")
    if study not in STUDIES or not model:
        raise ConfigError(
            params_path,
            f"'{name}' is not an arm name: write generator/<model id>, user/<model id> "
            "or evaluator/<model id>",
        )
    arm = Arm(study, model)
    if arm not in configured_arms(params, arm.study):
        listed = ", ".join(a.model for a in configured_arms(params, arm.study)) or "none"
        raise ConfigError(
            params_path, f"'{model}' is not listed (listed: {listed})", f"validation.{STUDY_STAGES[arm.study]}"
        )
    return arm


def require_validation_target(params_path: str | Path, params: Params, target: str) -> None:
    targets = validation_targets(params)
    if target not in targets:
        raise ConfigError(
            params_path,
            f"'{target}' is not a validation target (validation targets: {', '.join(targets)})",
            "validation.targets",
        )


def arm_layout(data_dir: str | Path, benchmark: str, name: str) -> Layout:
    """Where the arm called `name` (`<study>/<model>`) writes: the main layout under
    `data/<benchmark>/validation/<study>/arms/<model>/`."""
    return Layout(Path(data_dir), benchmark, name)

