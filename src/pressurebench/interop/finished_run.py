"""One arm's finished run, read back and validated: what the exports of a run are made from.

An arm reads what the arm rule makes its own from its folder and the rest from the main arm's
(`arms.inputs`): an evaluator arm's conversations are the main arm's, judged anew. The pass
rates come from the results the aggregate stage wrote (main arm) or from the study that
compares a validation arm with the main arm (`Layout.study_file`, overall rates only);
where neither exists the rates are withheld with that reason, never computed here anew.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..arms.inputs import ArmInputs, resolve
from ..arms.naming import STUDY_STAGES, configured_arms
from ..errors import ConfigError
from ..io import read_artifact, read_yaml_model
from ..params import Params
from ..paths import Layout
from ..schemas import (
    Benchmark,
    Conversation,
    ConversationFidelity,
    ConversationsFile,
    Scenario,
    ScenariosFile,
    Score,
    ScoresFile,
)
from ..stats.estimates import RateEstimate

MAIN = "main"


@dataclass
class ReportedRates:
    """A target's pass rates as the run reported them, or why they are not there."""

    overall: RateEstimate | None = None
    by_metric: dict[str, RateEstimate] = field(default_factory=dict)
    source: str | None = None
    withheld: str | None = None


@dataclass
class TargetRun:
    target: str
    conversations: list[Conversation]
    scores: list[Score]
    fidelity: dict[str, ConversationFidelity]
    per_turn: bool
    rates: ReportedRates
    conversations_file: Path
    scores_file: Path

    def scores_of(self, conv_id: str) -> list[Score]:
        return [s for s in self.scores if s.conv_id == conv_id]


@dataclass
class ArmRun:
    name: str  # "main" or the arm's name, e.g. evaluator/judge-2
    inputs: ArmInputs
    benchmark: Benchmark
    scenarios: dict[str, Scenario]
    targets: list[TargetRun]
    skipped: list[str]  # targets without finished scores, each with its reason


def arm_names(params: Params, arm: str | None) -> list[str]:
    """`arm` alone, or the main arm and every configured validation arm."""
    if arm:
        return [arm]
    names = [MAIN]
    for study in STUDY_STAGES:
        names += [a.name for a in configured_arms(params, study)]
    return names


def read_arm(params_path: str | Path, params: Params, benchmark: str, name: str) -> ArmRun:
    """Everything the arm `name` finished for `benchmark`: a target whose scores are missing is
    listed in `skipped`, not exported half; an unreadable or invalid file is an error."""
    inputs = resolve(params_path, params, benchmark, None if name == MAIN else name)
    bench = read_yaml_model(_required(inputs.metrics_file), Benchmark)
    scenarios = read_artifact(_required(inputs.scenarios_file), ScenariosFile)
    run = ArmRun(name, inputs, bench, {s.id: s for s in scenarios.rows}, [], [])
    for target in inputs.targets:
        scores_file = inputs.layout.scores_file(target)
        conversations_file = inputs.conversations_layout.conversations_file(target)
        missing = [p for p in (conversations_file, scores_file) if not p.is_file()]
        if missing:
            run.skipped.append(f"{target}: {missing[0]} not found (run `dvc repro` first)")
            continue
        convs = read_artifact(conversations_file, ConversationsFile)
        scores = read_artifact(scores_file, ScoresFile)
        judged = {s.conv_id for s in scores.rows}
        # An evaluator arm judges a planned subset of the main arm's conversations.
        rows = [c for c in convs.rows if inputs.simulates or c.conv_id in judged]
        run.targets.append(TargetRun(
            target, rows, scores.rows, {f.conv_id: f for f in scores.fidelity or []},
            scores.per_turn, _rates(params, benchmark, inputs, target),
            conversations_file, scores_file,
        ))
    return run


def _required(path: Path) -> Path:
    if not path.is_file():
        raise ConfigError(path, "not found: run `dvc repro` first")
    return path


def _rates(params: Params, benchmark: str, inputs: ArmInputs, target: str) -> ReportedRates:
    from ..stats.results import Results

    if inputs.is_main:
        path = inputs.layout.results_file
        if not path.is_file():
            return ReportedRates(withheld=f"{path} not found: the aggregate stage has not run")
        results = read_artifact(path, Results)
        if target not in results.targets:
            return ReportedRates(withheld=f"{path} has no results for {target}")
        found = results.targets[target]
        return ReportedRates(found.overall, dict(found.by_metric), str(path))
    from ..validation.studies import EvaluatorBiasStudy, GeneratorBiasStudy, UserModelBiasStudy

    assert inputs.study is not None, "every arm but the main arm belongs to a study"
    stage = STUDY_STAGES[inputs.study]
    models: dict[str, type[GeneratorBiasStudy | UserModelBiasStudy | EvaluatorBiasStudy]] = {
        "generator_bias": GeneratorBiasStudy, "user_model_bias": UserModelBiasStudy,
        "evaluator_bias": EvaluatorBiasStudy}
    model = models[stage]
    path = Layout(params.data_dir, benchmark).study_file(stage)
    if not path.is_file():
        return ReportedRates(withheld=f"{path} not found: the {stage} stage has not run")
    study = read_artifact(path, model)
    arm = next((a for a in study.arms if a.arm == inputs.name), None)
    if arm is None or target not in arm.rates_arm:
        return ReportedRates(withheld=f"{path} has no rates for {inputs.name} and {target}")
    return ReportedRates(arm.rates_arm[target], {}, str(path))
