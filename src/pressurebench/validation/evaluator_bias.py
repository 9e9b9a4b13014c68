"""Evaluator bias: do pass rates and rankings hold when another model judges?

Each arm `evaluator/<E>` re-judged the main arm's own conversations of the
planned subset of scenario rows with E as the judge: the very same transcripts,
so nothing but the judge differs, and no conversation is simulated again. The
comparison is paired by row (`validation.paired`): a difference is E's verdicts
minus the main evaluator's on the same conversations. Beside the pass rates, each arm
re-estimates every demographic gap under its judge: the gap under E minus the gap under the
main judge on the same rows is a paired contrast with its own interval
(`stats.gap_contrasts`), Holm-corrected over the arm's gaps. A gap that shrinks under
another judge was, in that part, the main judge's.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..arms.naming import EVALUATOR, STUDY_STAGES
from ..io import read_artifact
from ..params import Params, Statistics
from ..paths import Layout
from ..schemas import Manifest
from ..stats.estimates import Difference
from ..stats.gap_contrasts import gap_readings
from ..stats.interval_rules import GAP_CONTRAST
from ..stats.rate_contrasts import holm_tested
from .multiplicity import GAP_FAMILY, Multiplicity, family_of
from .paired import compare_paired_arm, on_main_rows, planned_arm_frames
from .record import last_study, run_study, statistics_settings
from .studies import EvaluatorArmResult, EvaluatorBiasStudy, GapUnderJudges

STAGE = STUDY_STAGES[EVALUATOR]


def main_evaluators(layout: Layout, targets: Iterable[str]) -> list[str] | None:
    """The judge(s) of the main arm, from the targets' evaluate manifests; None without them."""
    found: list[str] = []
    for target in targets:
        path = layout.manifest_file("evaluate", target)
        if path.exists():
            found += [str(m) for m in read_artifact(path, Manifest).params.get("evaluators", [])]
    return sorted(set(found)) or None


def gaps_under_judges(main: pd.DataFrame, arm: pd.DataFrame, targets: list[str], *,
                      confidence_level: float) -> tuple[list[GapUnderJudges], Multiplicity]:
    """Every demographic gap of the targets under the arm's judge and the main judge, on the
    rows with a verdict from both, and the change (arm − main), Holm-corrected over the arm."""
    main = main[main["target"].isin(targets)]
    readings = gap_readings(on_main_rows(main, arm), main, rule=GAP_CONTRAST,
                            confidence_level=confidence_level)
    tested = holm_tested([r.change for r in readings], confidence_level)
    fields = set(Difference.model_fields)
    gaps = [GapUnderJudges(target=r.target, axis=r.axis, a=r.a, b=r.b,
                           main=Difference(**r.second.model_dump(include=fields)),
                           arm=Difference(**r.first.model_dump(include=fields)), change=change)
            for r, change in zip(readings, tested)]
    return gaps, family_of(tested, GAP_FAMILY, confidence_level)


def evaluator_arm(main: pd.DataFrame, arm: pd.DataFrame, *, arm_name: str, evaluator: str,
                  scenario_ids: list[str], targets: list[str], statistics: Statistics
                  ) -> EvaluatorArmResult:
    """One evaluator arm against the main arm's verdicts on the same conversations."""
    gaps, family = gaps_under_judges(main, arm, targets,
                                     confidence_level=statistics.confidence_level)
    return EvaluatorArmResult(
        evaluator=evaluator, gaps=gaps, gap_multiplicity=family,
        **compare_paired_arm(main, arm, arm_name=arm_name, scenario_ids=scenario_ids,
                             targets=targets, statistics=statistics),
    )


def evaluator_bias_study(params: Params, benchmark: str) -> EvaluatorBiasStudy:
    """Every planned evaluator arm compared with the main arm on the same conversations."""
    plan, main_frame, arms = planned_arm_frames(params, benchmark, EVALUATOR)
    stats = params.statistics
    return EvaluatorBiasStudy(
        benchmark=benchmark,
        statistics=statistics_settings(params),
        main_evaluators=main_evaluators(Layout(params.data_dir, benchmark), plan.targets),
        targets=plan.targets,
        arms=[
            evaluator_arm(main_frame, frame, arm_name=planned.name, evaluator=planned.model,
                          scenario_ids=plan.scenario_ids or [], targets=plan.targets,
                          statistics=stats)
            for planned, frame in arms if main_frame is not None  # (always, with arms)
        ],
    )


def run(params_path: str | Path, benchmark: str) -> EvaluatorBiasStudy:
    """Compute the evaluator-bias study; write `evaluator_bias.json` and its manifest into
    `data/<b>/validation/evaluator/bias/`."""
    return run_study(STAGE, params_path, benchmark, evaluator_bias_study)


def last_output(params_path: str | Path, benchmark: str) -> EvaluatorBiasStudy:
    """What the last run wrote (`notebook_session`)."""
    return last_study(STAGE, EvaluatorBiasStudy, params_path, benchmark)
