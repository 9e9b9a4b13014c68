"""Evaluator bias: do pass rates and rankings hold when another model judges?

Each arm `evaluator/<E>` re-judged the main arm's own conversations of the
planned subset of scenario rows with E as the judge: the very same transcripts,
so nothing but the judge differs, and no conversation is simulated again. The
comparison is paired by row (`validation.paired`): a difference is E's verdicts
minus the main evaluator's on the same conversations.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..arms.naming import EVALUATOR, STUDY_STAGES
from ..io import read_artifact
from ..params import Params
from ..paths import Layout
from ..schemas import Manifest
from ..stage_run import StageRun
from ..stats.results import StatisticsSettings
from .paired import compare_paired_arm, planned_arm_frames
from .record import last_study, record_study
from .studies import EvaluatorArmResult, EvaluatorBiasStudy

STAGE = STUDY_STAGES[EVALUATOR]


def main_evaluators(layout: Layout, targets: Iterable[str]) -> list[str] | None:
    """The judge(s) of the main arm, from the targets' evaluate manifests; None without them."""
    found: list[str] = []
    for target in targets:
        path = layout.manifest_file("evaluate", target)
        if path.exists():
            found += [str(m) for m in read_artifact(path, Manifest).params.get("evaluators", [])]
    return sorted(set(found)) or None


def evaluator_bias_study(params: Params, benchmark: str) -> EvaluatorBiasStudy:
    """Every planned evaluator arm compared with the main arm on the same conversations."""
    plan, main_frame, arms = planned_arm_frames(params, benchmark, EVALUATOR)
    stats = params.statistics
    return EvaluatorBiasStudy(
        benchmark=benchmark,
        statistics=StatisticsSettings(
            resamples=stats.resamples, confidence_level=stats.confidence_level, seed=stats.seed
        ),
        main_evaluators=main_evaluators(Layout(params.data_dir, benchmark), plan.targets),
        targets=plan.targets,
        arms=[
            EvaluatorArmResult(
                evaluator=planned.model,
                **compare_paired_arm(
                    main_frame, frame, arm_name=planned.name,
                    scenario_ids=plan.scenario_ids or [], targets=plan.targets, statistics=stats,
                ),
            )
            for planned, frame in arms if main_frame is not None  # (always, with arms)
        ],
    )


def run(params_path: str | Path, benchmark: str) -> EvaluatorBiasStudy:
    """Compute the evaluator-bias study; write `evaluator_bias.json` and its manifest into
    `data/<b>/validation/evaluator/bias/`."""
    stage = StageRun(STAGE, params_path, benchmark, models_used=[])
    study = evaluator_bias_study(stage.params, benchmark)
    record_study(stage, study)
    return study


def last_output(params_path: str | Path, benchmark: str) -> EvaluatorBiasStudy:
    """What the last run wrote (`notebook_session`)."""
    return last_study(STAGE, EvaluatorBiasStudy, params_path, benchmark)
