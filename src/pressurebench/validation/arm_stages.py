"""The pipeline stages of a validation arm: the main stages with the arm's one ingredient swapped.

- `generator/<G>`: gen_metrics and gen_scenarios with G as the generator
  (hand-written metrics pass through unchanged, so only the scenarios are new);
  simulate with the main user model on the arm's own scenarios (with
  `validation.fraction` < 1, a seeded subset of its base scenarios, recorded in
  the simulate manifest); evaluate with the main evaluator against the arm's metrics.
- `user/<U>`: simulate with U as the user on the main arm's scenarios,
  restricted to the rows the plan chose; evaluate with the main evaluator
  against the main arm's metrics.

Each function resolves those overrides and runs the stage's own `run`, so an
arm is produced by exactly the code that produces the main arm.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from ..io import read_artifact
from ..llm.client import ProviderFactory
from ..params import Params, load_params
from ..paths import Layout
from ..schemas import Manifest, ScenariosFile
from ..stages import evaluate, gen_metrics, gen_scenarios, simulate
from .arms import GENERATOR, USER, Arm, require_validation_target, resolve_arm
from .plan import StudyPlan, load_plan, rows_of, select_base_scenarios, write_plans


def run_plan(params_path: str | Path, benchmark: str) -> dict[str, StudyPlan]:
    """Write both studies' plans for one benchmark."""
    params = load_params(params_path)
    if benchmark not in params.benchmarks:
        raise ConfigError(params_path, f"'{benchmark}' is not one of the benchmarks", "benchmarks")
    return write_plans(params, benchmark)


def _generator_arm(params_path: str | Path, arm_name: str) -> tuple[Params, Arm]:
    params = load_params(params_path)
    arm = resolve_arm(params_path, params, arm_name)
    if arm.study != GENERATOR:
        raise ConfigError(
            params_path,
            f"'{arm_name}' replays the main arm's metrics and scenarios; only generator arms "
            "generate their own",
        )
    return params, arm


def run_gen_metrics(
    params_path: str | Path,
    benchmark: str,
    arm: str,
    *,
    provider_factory: ProviderFactory | None = None,
) -> Manifest:
    """The arm's metrics, written by its generator (hand-written ones are copied unchanged)."""
    _, resolved = _generator_arm(params_path, arm)
    return gen_metrics.run(
        params_path,
        benchmark,
        provider_factory=provider_factory,
        arm=arm,
        generator=resolved.model,
    )


def run_gen_scenarios(
    params_path: str | Path,
    benchmark: str,
    arm: str,
    *,
    provider_factory: ProviderFactory | None = None,
) -> Manifest:
    """The arm's scenarios, written by its generator for the arm's own metrics."""
    _, resolved = _generator_arm(params_path, arm)
    return gen_scenarios.run(
        params_path,
        benchmark,
        provider_factory=provider_factory,
        arm=arm,
        generator=resolved.model,
    )


def generator_arm_scenario_ids(
    params: Params, benchmark: str, arm: str, plan: StudyPlan
) -> list[str]:
    """The rows a generator arm plays: the plan's seeded share of its own base scenarios."""
    scenarios = read_artifact(Layout(params.data_dir, benchmark, arm).scenarios_file, ScenariosFile)
    return rows_of(scenarios.rows, select_base_scenarios(scenarios.rows, plan.fraction, plan.seed))


def run_simulate(
    params_path: str | Path,
    benchmark: str,
    arm: str,
    target: str,
    *,
    provider_factory: ProviderFactory | None = None,
) -> Manifest:
    """Conversations of one target in one arm, with the arm's user model and scenario rows."""
    params = load_params(params_path)
    resolved = resolve_arm(params_path, params, arm)
    require_validation_target(params_path, params, target)
    plan = load_plan(params, benchmark, resolved.study)
    if resolved.study == USER:
        return simulate.run(
            params_path,
            benchmark,
            target,
            provider_factory=provider_factory,
            arm=arm,
            user_model=resolved.model,
            scenarios_path=Layout(params.data_dir, benchmark).scenarios_file,
            scenario_ids=plan.scenario_ids,
        )
    return simulate.run(
        params_path,
        benchmark,
        target,
        provider_factory=provider_factory,
        arm=arm,
        scenario_ids=generator_arm_scenario_ids(params, benchmark, arm, plan),
    )


def run_evaluate(
    params_path: str | Path,
    benchmark: str,
    arm: str,
    target: str,
    *,
    provider_factory: ProviderFactory | None = None,
) -> Manifest:
    """Scores of one target in one arm, by the main evaluator against the arm's metrics."""
    params = load_params(params_path)
    resolved = resolve_arm(params_path, params, arm)
    require_validation_target(params_path, params, target)
    metrics_owner = Layout(params.data_dir, benchmark, arm if resolved.study == GENERATOR else None)
    return evaluate.run(
        params_path,
        benchmark,
        target,
        provider_factory=provider_factory,
        arm=arm,
        metrics_path=metrics_owner.benchmark_file,
    )
