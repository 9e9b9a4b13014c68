"""Generator bias: do pass rates and rankings hold when another model writes the benchmark?

Each arm `generator/<G>` regenerated the metrics (hand-written metrics pass
through, so then only the scenarios) and scenarios with G, and played and
judged them with the main user model and evaluator. Against the main arm,
restricted to the validation targets, it reports:

- per target, both arms' pass rates and their difference (arm − main). The
  arms' scenarios are different draws even where their ids coincide, so each
  arm is resampled on its own (`paired=False`);
- Kendall's tau-b and Spearman's rho between the arms' rankings of the targets
  and, per pair of targets, the probability that their order flips;
- per metric, where both arms define it identically, the difference pooled
  over targets;
- self-preference: the change of the targets in G's own model family minus
  the mean change of the other targets. A generator that writes scenarios its
  own family finds easy shows up as a positive contrast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..arms.naming import GENERATOR, STUDY_STAGES, arm_layout
from ..arms.study_plan import load_plan
from ..io import read_artifact, read_yaml_model
from ..params import Params, Statistics
from ..paths import Layout
from ..schemas import Benchmark, GenerationError, ScenariosFile
from ..stats.estimates import interval_fields
from ..stats.frame import valid_mask
from ..stats.interval_rules import planned_design
from .arm_differences import arm_differences
from .contrast import arm_replicates, contrast_of_changes
from .inputs import arm_scores, frame_of, main_generator, rates_per_target, shared_metrics
from .record import last_study, run_study, statistics_settings
from .studies import GeneratorArmResult, GeneratorBiasStudy, LostBaseScenarios, SelfPreference

STAGE = STUDY_STAGES[GENERATOR]


def compare_generator_arm(
    main: pd.DataFrame,
    arm: pd.DataFrame,
    *,
    arm_name: str,
    generator: str,
    families: dict[str, str],
    main_generator_family: str | None,
    metrics: list[str],
    metrics_handwritten: bool,
    targets: list[str],
    statistics: Statistics,
) -> GeneratorArmResult:
    """Compare one generator arm's score frame with the main arm's, over `targets`.

    `families` maps the generator and every target to its model family;
    `metrics` are the metric ids both arms define identically.
    """
    main = main[main["target"].isin(targets)]
    arm = arm[arm["target"].isin(targets)]
    common = sorted(set(main["target"]) & set(arm["target"]))
    main_c, arm_c = main[main["target"].isin(common)], arm[arm["target"].isin(common)]
    settings = {"resamples": statistics.resamples, "seed": statistics.seed}
    level = statistics.confidence_level

    by_target = arm_replicates(arm_c, main_c, ["target"], paired=False, **settings)
    family = families[generator]
    contrast = contrast_of_changes(by_target, [t for t in common if families[t] == family], level)
    note = None if metrics else "no metric has the same id, type and definition in both arms"

    rate_settings: dict[str, Any] = dict(confidence_level=level, **settings)
    return GeneratorArmResult(
        arm=arm_name,
        generator=generator,
        metrics_handwritten=metrics_handwritten,
        targets=targets,
        rates_main=rates_per_target(main, targets, **rate_settings),
        rates_arm=rates_per_target(arm, targets, **rate_settings),
        shared_metrics=metrics,
        metric_note=note,
        **arm_differences(
            arm_c, main_c, arm_name=arm_name, paired=False, metrics=metrics,
            statistics=statistics,
        ),
        self_preference=SelfPreference(
            generator_family=family,
            main_generator_family=main_generator_family,
            in_family=contrast.inside,
            out_of_family=contrast.outside,
            value=contrast.value,
            **interval_fields(contrast.ci_low, contrast.ci_high, contrast.ci_method, contrast.reason),
        ),
    )


def base_scenario_losses(
    main: pd.DataFrame, arm: pd.DataFrame, *, planned: int, errors: list[GenerationError]
) -> LostBaseScenarios:
    """How many base scenarios each arm scored (a valid row for some target) against the
    `planned` number, with the arm's generation errors that explain the difference."""

    def scored(frame: pd.DataFrame) -> int:
        return int(frame.loc[valid_mask(frame), "base_id"].nunique()) if len(frame) else 0

    arm_scored = scored(arm)
    return LostBaseScenarios(
        planned=planned,
        scored_main=scored(main),
        scored_arm=arm_scored,
        lost=max(planned - arm_scored, 0),
        generation_errors=errors,
    )


def generator_bias_study(params: Params, benchmark: str) -> GeneratorBiasStudy:
    """Every planned generator arm compared with the main arm, from the files on disk."""
    plan = load_plan(params, benchmark, GENERATOR)
    main_layout = Layout(params.data_dir, benchmark)
    main_bench = read_yaml_model(main_layout.benchmark_file, Benchmark)
    main_frame = frame_of(arm_scores(main_layout, plan.targets))
    writer = main_generator(main_layout)
    arms = []
    for planned in plan.arms:
        layout = arm_layout(params.data_dir, benchmark, planned.name)
        bench = read_yaml_model(layout.benchmark_file, Benchmark)
        models = [planned.model, *plan.targets]
        arm_frame = frame_of(arm_scores(layout, plan.targets))
        errors = list(bench.errors)
        if layout.scenarios_file.exists():
            errors += read_artifact(layout.scenarios_file, ScenariosFile).errors
        losses = base_scenario_losses(
            main_frame, arm_frame,
            planned=params.generation.scenarios_per_metric * len(bench.metrics), errors=errors,
        )
        arms.append(
            compare_generator_arm(
                main_frame,
                arm_frame,
                arm_name=planned.name,
                generator=planned.model,
                families={m: params.models[m].family for m in models},
                main_generator_family=params.models[writer].family
                if writer in params.models
                else None,
                metrics=shared_metrics(main_bench, bench),
                metrics_handwritten=bench.generator is None,
                targets=plan.targets,
                statistics=params.statistics,
            ).model_copy(update={"losses": losses})
        )
    return GeneratorBiasStudy(
        benchmark=benchmark,
        statistics=statistics_settings(params),
        main_generator=writer,
        targets=plan.targets,
        arms=arms,
    )


def run(params_path: str | Path, benchmark: str) -> GeneratorBiasStudy:
    """Compute the generator-bias study; write `generator_bias.json` and its manifest into
    `data/<b>/validation/generator/bias/`."""

    def planned(params: Params, benchmark: str) -> GeneratorBiasStudy:
        with planned_design(params.generation.scenarios_per_metric):
            return generator_bias_study(params, benchmark)

    return run_study(STAGE, params_path, benchmark, planned)


def last_output(params_path: str | Path, benchmark: str) -> GeneratorBiasStudy:
    """What the last run wrote (`notebook_session`)."""
    return last_study(STAGE, GeneratorBiasStudy, params_path, benchmark)
