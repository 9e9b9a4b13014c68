"""User-model bias: do pass rates and rankings hold when another model plays the user?

Each arm `user/<U>` replayed the planned subset of the main arm's scenario
rows with U as the simulated user; metrics, scenarios, targets and evaluator
are the main arm's. So every arm row has a counterpart in the main arm (same
target, scenario row, sample and judged metric), and the comparison is paired
by row: only rows with a verdict in both arms are compared, and both arms'
rates in a bootstrap replicate come from the same resampled base scenarios.
A scenario that is hard under any user then cancels out, and what remains is
the user model's doing. Reported per arm (arm − main): differences per target
and per metric, the rank correlation of the targets with its interval, and
the probability that each pair of targets swaps order.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..params import Params, Statistics
from ..paths import Layout
from ..results import StatisticsSettings
from ..runtime import StageRun
from ..schemas import base_id_of
from ..stats.compare import compare_arms
from ..stats.frame import valid_mask
from .arms import USER
from .contrast import arm_replicates, group_differences
from .inputs import arm_scores, frame_of, main_user_model, rates_per_target
from .models import MAIN, MetricDifference, Pairing, UserArmResult, UserModelBiasStudy
from .plan import load_plan
from .record import last_study, record_study

STAGE = "user_model_bias"
ROW_KEY = ["target", "scenario_id", "sample", "metric_id"]


def _keys(frame: pd.DataFrame) -> pd.MultiIndex:
    keys = pd.MultiIndex.from_frame(frame[ROW_KEY].astype(str))
    if keys.has_duplicates:
        raise ValueError(
            f"score rows repeat a (target, scenario, sample, metric): {keys[keys.duplicated()][0]}"
        )
    return keys


def paired_rows(
    main: pd.DataFrame, arm: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray, np.ndarray]:
    """Both frames with every row that lacks a verdict in the other arm set to an error row.

    Returns the two masked frames and, per row of each input, whether it is
    compared. Rows are kept (rather than dropped) so every base scenario stays
    a cluster of the bootstrap and an all-unpaired target still appears, with
    no data.
    """
    key_main, key_arm = _keys(main), _keys(arm)
    valid_main, valid_arm = valid_mask(main), valid_mask(arm)
    both = key_main[valid_main].intersection(key_arm[valid_arm])
    in_main, in_arm = key_main.isin(both), key_arm.isin(both)

    def masked(frame: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
        return frame.assign(
            status=np.where(keep, frame["status"], "error").astype(object),
            passed=np.where(keep, frame["passed"], None).astype(object),
        )

    return masked(main, in_main), masked(arm, in_arm), in_main, in_arm


def pairing_counts(
    target: str, main: pd.DataFrame, arm: pd.DataFrame, in_main: np.ndarray, in_arm: np.ndarray
) -> Pairing:
    of_main = (main["target"] == target).to_numpy()
    of_arm = (arm["target"] == target).to_numpy()
    valid_main, valid_arm = valid_mask(main), valid_mask(arm)
    return Pairing(
        target=target,
        n_main=int(of_main.sum()),
        n_error_main=int((of_main & ~valid_main).sum()),
        n_arm=int(of_arm.sum()),
        n_error_arm=int((of_arm & ~valid_arm).sum()),
        n_paired=int((of_main & in_main).sum()),
        n_unpaired_main=int((of_main & valid_main & ~in_main).sum()),
        n_unpaired_arm=int((of_arm & valid_arm & ~in_arm).sum()),
    )


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
    main = main[main["target"].isin(targets)]
    arm = arm[arm["target"].isin(targets)]
    masked_main, masked_arm, in_main, in_arm = paired_rows(main, arm)
    settings = {"resamples": statistics.resamples, "seed": statistics.seed}
    level = statistics.confidence_level
    names = (arm_name, MAIN)
    by_metric = arm_replicates(masked_arm, masked_main, ["metric_id"], paired=True, **settings)
    rate_settings = dict(confidence_level=level, **settings)
    return UserArmResult(
        arm=arm_name,
        user_model=user_model,
        targets=targets,
        n_scenarios=len(scenario_ids),
        n_base_scenarios=len({base_id_of(s) for s in scenario_ids}),
        rates_main=rates_per_target(main, targets, **rate_settings),
        rates_arm=rates_per_target(arm, targets, **rate_settings),
        pairing=[pairing_counts(t, main, arm, in_main, in_arm) for t in targets],
        comparison=compare_arms(
            masked_arm,
            masked_main,
            arm_names=names,
            confidence_level=level,
            paired=True,
            **settings,
        ),
        metric_differences=[
            MetricDifference(metric_id=key[0], **d.model_dump())
            for key, d in zip(by_metric.keys, group_differences(by_metric, names, level))
        ],
    )


def user_model_bias_study(params: Params, benchmark: str) -> UserModelBiasStudy:
    """Every planned user-model arm compared with the main arm on the planned rows."""
    plan = load_plan(params, benchmark, USER)
    main_layout = Layout(params.data_dir, benchmark)
    arms = []
    if plan.arms:
        planned_rows = set(plan.scenario_ids or [])
        main_rows = [
            s for s in arm_scores(main_layout, plan.targets) if s.scenario_id in planned_rows
        ]
        main_frame = frame_of(main_rows)
        for planned in plan.arms:
            layout = Layout(params.data_dir, benchmark, planned.name)
            rows = arm_scores(layout, plan.targets)
            outside = sorted({s.scenario_id for s in rows} - planned_rows)
            if outside:
                raise ConfigError(
                    layout.scores_file(rows[0].target),
                    f"scores scenario {outside[0]}, which the plan does not list; "
                    f"re-run the arm's simulate and evaluate stages",
                    "rows",
                )
            arms.append(
                compare_user_arm(
                    main_frame,
                    frame_of(rows),
                    arm_name=planned.name,
                    user_model=planned.model,
                    scenario_ids=plan.scenario_ids or [],
                    targets=plan.targets,
                    statistics=params.statistics,
                )
            )
    stats = params.statistics
    return UserModelBiasStudy(
        benchmark=benchmark,
        statistics=StatisticsSettings(
            resamples=stats.resamples, confidence_level=stats.confidence_level, seed=stats.seed
        ),
        main_user_model=main_user_model(main_layout, plan.targets),
        targets=plan.targets,
        arms=arms,
    )


def run(params_path: str | Path, benchmark: str) -> UserModelBiasStudy:
    """Compute the user-model-bias study; write `data/<b>/user_model_bias.json` and its manifest."""
    stage = StageRun(STAGE, params_path, benchmark, models_used=[])
    study = user_model_bias_study(stage.params, benchmark)
    record_study(stage, study)
    return study


def last_output(params_path: str | Path, benchmark: str) -> UserModelBiasStudy:
    """What the last run wrote (`notebook_session`)."""
    return last_study(STAGE, UserModelBiasStudy, params_path, benchmark)
