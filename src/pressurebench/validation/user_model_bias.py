"""User-model bias: do pass rates and rankings hold when another model plays the user?

Each arm `user/<U>` replayed the planned subset of the main arm's scenario
rows with U as the simulated user; metrics, scenarios, targets and evaluator
are the main arm's. The comparison is paired by row (`validation.paired`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..arms.naming import STUDY_STAGES, USER
from ..io import read_artifact
from ..params import Params, Statistics
from ..paths import Layout
from ..schemas import ScoresFile
from ..stats.fidelity import target_fidelity
from .inputs import main_user_model
from .paired import compare_paired_arm, planned_arm_frames
from .record import last_study, run_study, statistics_settings
from .studies import MAIN, UserArmResult, UserModelBiasStudy, UserModelFidelity

STAGE = STUDY_STAGES[USER]


def compare_user_arm(
    main: pd.DataFrame,
    arm: pd.DataFrame,
    *,
    arm_name: str,
    user_model: str,
    scenario_ids: list[str],
    targets: list[str],
    statistics: Statistics,
) -> UserArmResult:
    """Compare one user-model arm with the main arm's rows of the same scenarios, paired by row.

    `main` must already be restricted to `scenario_ids`, the rows the arm replayed.
    """
    return UserArmResult(
        user_model=user_model,
        **compare_paired_arm(
            main, arm, arm_name=arm_name, scenario_ids=scenario_ids, targets=targets,
            statistics=statistics,
        ),
    )


def fidelity_side_by_side(
    params: Params, benchmark: str, arms: list[tuple[str | None, str | None]], targets: list[str],
    scenario_ids: list[str],
) -> list[UserModelFidelity]:
    """Each arm's fidelity (`arms`: (arm name or None for main, user model)) on the planned
    rows; an arm whose conversations were not checked is left out."""
    planned = set(scenario_ids)
    out = []
    for arm, user_model in arms:
        layout = Layout(params.data_dir, benchmark, arm)
        files = [read_artifact(layout.scores_file(t), ScoresFile) for t in targets]
        if any(f.fidelity is None for f in files):
            continue
        rows = [r for f in files for r in f.fidelity or [] if r.scenario_id in planned]
        if rows:
            out.append(UserModelFidelity(
                arm=arm or MAIN, user_model=user_model,
                targets=target_fidelity(rows, confidence_level=params.statistics.confidence_level),
            ))
    return out


def user_model_bias_study(params: Params, benchmark: str) -> UserModelBiasStudy:
    """Every planned user-model arm compared with the main arm on the planned rows."""
    plan, main_frame, arms = planned_arm_frames(params, benchmark, USER)
    stats = params.statistics
    main_user = main_user_model(Layout(params.data_dir, benchmark), plan.targets)
    return UserModelBiasStudy(
        benchmark=benchmark,
        statistics=statistics_settings(params),
        main_user_model=main_user,
        targets=plan.targets,
        arms=[
            compare_user_arm(
                main_frame, frame, arm_name=planned.name, user_model=planned.model,
                scenario_ids=plan.scenario_ids or [], targets=plan.targets, statistics=stats,
            )
            for planned, frame in arms if main_frame is not None  # (always, with arms)
        ],
        fidelity=fidelity_side_by_side(
            params, benchmark, [(None, main_user)] + [(p.name, p.model) for p, _ in arms],
            plan.targets, plan.scenario_ids or [],
        ) if arms else [],
    )


def run(params_path: str | Path, benchmark: str) -> UserModelBiasStudy:
    """Compute the user-model-bias study; write `user_model_bias.json` and its manifest into
    `data/<b>/validation/user/bias/`."""
    return run_study(STAGE, params_path, benchmark, user_model_bias_study)


def last_output(params_path: str | Path, benchmark: str) -> UserModelBiasStudy:
    """What the last run wrote (`notebook_session`)."""
    return last_study(STAGE, UserModelBiasStudy, params_path, benchmark)
