"""What a stage runs on: an arm, resolved once into its inputs. The main run is the arm with no
overrides, so every stage runs main and validation arms through the same code.

One inheritance rule decides every input: an arm is the main arm with one role played by
another model. What that role produces, and everything made from it downstream, is the arm's
own and lives in the arm's folder (`data/<b>/validation/<study>/arms/<model>/`); everything upstream
is the main arm's and is read from `data/<b>/`:

| arm            | role swapped | metrics, scenarios | conversations       | scores        |
|----------------|--------------|--------------------|---------------------|---------------|
| main           | none         | own                | own                 | own           |
| generator/<G>  | generator    | own (G writes)     | own                 | own           |
| user/<U>       | user         | the main arm's     | own (U plays)       | own           |
| evaluator/<E>  | evaluator    | the main arm's     | the main arm's      | own (E judges)|

There is no fallback: an input the rule makes the arm's own is read from the arm's folder, and
a missing file is an error naming it. Which scenario rows an arm plays is decided here too:
all of them in the main arm, the study plan's seeded subset in a validation arm
(`arms.study_plan`); an evaluator arm judges the main arm's conversations of that subset
and never simulates. So are the params each stage reads in an arm (`declared_params`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..params import Params
from ..paths import Layout
from ..schemas import Scenario
from .naming import (
    EVALUATOR,
    GENERATOR,
    ON_MAIN_ROWS,
    USER,
    Study,
    arm_layout,
    require_validation_target,
    resolve_arm,
    validation_targets,
)
from .study_plan import load_plan, rows_of, select_base_scenarios


@dataclass(frozen=True)
class ArmInputs:
    """Everything a stage needs to know about the arm it runs in."""

    name: str | None  # None: the main arm
    study: Study | None
    layout: Layout  # where the arm writes
    upstream: Layout  # where it reads what it inherits (its own layout for main and generator arms)
    generator: str
    user: str
    evaluators: tuple[str, ...]
    # The main arm: the benchmark's targets (`Params.targets_of`); a validation arm: the
    # validation targets.
    targets: tuple[str, ...]

    @property
    def is_main(self) -> bool:
        return self.name is None

    @property
    def generates(self) -> bool:
        """Whether this arm writes its own metrics and scenarios."""
        return self.study not in ON_MAIN_ROWS

    @property
    def keeps_curated_scenarios(self) -> bool:
        """Whether hand-written scenarios (`curated`) are kept: only in the main arm, because a
        generator arm measures what its own generator writes."""
        return self.is_main

    @property
    def simulates(self) -> bool:
        """Whether this arm plays its own conversations: an evaluator arm judges the main arm's."""
        return self.study != EVALUATOR

    @property
    def reads_human_labels(self) -> bool:
        """Whether human labels of this arm's conversations can exist: raters label the main arm's."""
        return self.is_main

    @property
    def conversations_layout(self) -> Layout:
        """Where the conversations this arm judges live: the main arm's for an evaluator arm."""
        return self.layout if self.simulates else self.upstream

    @property
    def metrics_file(self) -> Path:
        return self.upstream.benchmark_file

    @property
    def scenarios_file(self) -> Path:
        return self.upstream.scenarios_file

    def require_target(self, params_path: str | Path, params: Params, target: str) -> None:
        if target not in params.models:
            known = ", ".join(sorted(params.models))
            raise ConfigError(params_path, f"unknown model id '{target}' given as the target (known: {known})")
        if self.is_main:
            if target not in self.targets:
                raise ConfigError(params_path, f"'{target}' is not one of the targets", "targets")
        else:
            require_validation_target(params_path, params, target)

    def rows_to_play(self, params: Params, benchmark: str, scenarios: list[Scenario]) -> list[str] | None:
        """The scenario rows this arm plays: None for all (main arm), else the study plan's
        rows (user arms) or its seeded share of the arm's own base scenarios (generator arms)."""
        if self.study is None:
            return None
        plan = load_plan(params, benchmark, self.study)
        if self.study in ON_MAIN_ROWS:
            return plan.scenario_ids
        return rows_of(scenarios, select_base_scenarios(scenarios, plan.fraction, plan.seed))

    def rows_to_judge(self, params: Params, benchmark: str) -> set[str] | None:
        """The scenario rows whose conversations this arm judges: None for all it reads, else
        the study plan's rows of the main arm's conversations (an arm that does not simulate)."""
        if self.simulates:
            return None
        assert self.study is not None, "an arm that does not simulate is an evaluator arm"
        return set(load_plan(params, benchmark, self.study).scenario_ids or [])


def declared_params(stage: str, inputs: ArmInputs | None = None, target: str | None = None) -> list[str]:
    """The param paths `stage` reads in this arm: its manifest records their values, and its
    `params:` in dvc.yaml list the same paths (tests/pipeline/test_declared_params.py), so a
    change to any of them re-runs it and nothing else does. A role the arm swaps is read from
    the arm's model id, not from `roles`."""
    run = ["run.repair_retries", "run.max_error_rate"]
    if stage in ("gen_metrics", "gen_scenarios"):
        assert inputs is not None, f"{stage} runs in an arm"
        role = ["roles.generator"] if inputs.study is None else []
        gen = {
            "gen_metrics": ["generation.metrics_per_benchmark", "generation.max_regenerations"],
            "gen_scenarios": ["generation.scenarios_per_metric", "generation.scenario_turns",
                              "generation.demographics", "generation.max_regenerations"],
        }[stage]
        return [*role, f"models.{inputs.generator}", *gen, *run]
    if stage == "simulate":
        assert inputs is not None, f"{stage} runs in an arm"
        role = [] if inputs.study == USER else ["roles.user"]
        return [*role, f"models.{inputs.user}", f"models.{target}", "generation.turns",
                "generation.num_samples", "generation.landmarks", "generation.allow_early_end",
                "generation.perfunctory", "generation.fidelity_retries",
                "run.truncated_replies", *run]
    if stage == "evaluate":
        # The evaluator may be a panel (a list), so the whole registry is declared.
        # An evaluator arm re-judges the main arm's conversations, whose fidelity the main arm
        # checks; every other arm checks its own.
        if inputs is not None and not inputs.simulates:
            return ["models", "evaluation", *run]
        return ["roles.evaluator", "roles.fidelity", "models", "evaluation", "fidelity.check", *run]
    if stage == "aggregate":  # labels.dir: where the human labels of the main arm are read
        return ["targets", "statistics", "labels.dir", "fidelity.warn_share"]
    # The judge probes (`stages.judge_probes`): the generator writes the edits of the study
    # subset; the main judge re-reads them, and the family probe needs every model's family.
    subset = ["validation.judge_probes", "validation.fraction", "validation.seed"]
    if stage == "probes_edit":
        assert inputs is not None, f"{stage} runs in an arm"
        return ["roles.generator", f"models.{inputs.generator}", *subset, *run]
    if stage == "probes_evaluate":
        return ["roles.evaluator", "roles.generator", "models", "evaluation", *subset, *run]
    if stage == "judge_probes":
        return ["validation", "statistics", "models", "roles.generator", "roles.evaluator"]
    if stage == "generator_bias":  # model families, for the self-preference check
        return ["validation", "statistics", "models"]
    if stage in ("user_model_bias", "evaluator_bias"):
        return ["validation", "statistics"]
    raise ValueError(f"no declaration for stage {stage}")


def resolve(params_path: str | Path, params: Params, benchmark: str, arm: str | None) -> ArmInputs:
    """The inputs of `arm` (None or "" for the main arm) of `benchmark`, by the one rule above."""
    if benchmark not in params.benchmarks:
        raise ConfigError(params_path, f"'{benchmark}' is not one of the benchmarks", "benchmarks")
    main = Layout(params.data_dir, benchmark)
    roles = params.roles
    if not arm:
        return ArmInputs(None, None, main, main, roles.generator, roles.user,
                         tuple(roles.evaluators), tuple(params.targets_of(benchmark)))
    resolved = resolve_arm(params_path, params, arm)
    own = arm_layout(params.data_dir, benchmark, resolved.name)
    targets = tuple(validation_targets(params))
    if resolved.study == GENERATOR:
        return ArmInputs(resolved.name, GENERATOR, own, own, resolved.model, roles.user,
                         tuple(roles.evaluators), targets)
    if resolved.study == EVALUATOR:
        return ArmInputs(resolved.name, EVALUATOR, own, main, roles.generator, roles.user,
                         (resolved.model,), targets)
    return ArmInputs(resolved.name, USER, own, main, roles.generator, resolved.model,
                     tuple(roles.evaluators), targets)
