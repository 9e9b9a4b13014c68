"""Arms compared with the main arm row by row: the user-model and evaluator studies.

Both arms work on a planned subset of the main arm's own scenario rows (a user
arm replays them with another simulated user, an evaluator arm re-judges the
main conversations), so every arm row has a counterpart in the main arm (same
target, scenario row, sample and judged metric). Only rows with a verdict in
both arms are compared, and every difference is paired by base scenario, so a
scenario that is hard in both arms cancels out and what remains is the swapped
role's doing. Reported per arm (arm − main): differences per target and per
target × metric with Holm's correction over the arm's family (`multiplicity`),
the agreement of the two arms' verdicts on the paired rows (`agreement`), the
rank correlation of the targets, and how often each pair swaps order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..arms.naming import Study, arm_layout
from ..arms.study_plan import PlannedArm, StudyPlan, load_plan
from ..errors import ConfigError
from ..params import Params, Statistics
from ..paths import Layout
from ..schemas import base_id_of
from ..stats.arm_comparison import arm_bootstraps
from ..stats.frame import valid_mask
from .agreement import verdict_agreement
from .arm_differences import arm_differences
from .inputs import arm_scores, frame_of, rates_per_target
from .studies import Pairing

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
            # numpy's stubs leave None out of the array-likes; numpy takes it as an object.
            passed=np.where(keep, frame["passed"], None).astype(object),  # type: ignore[call-overload]
        )

    return masked(main, in_main), masked(arm, in_arm), in_main, in_arm


def on_main_rows(main: pd.DataFrame, arm: pd.DataFrame) -> pd.DataFrame:
    """The arm's verdicts laid on the main arm's rows, in the main arm's order: a main row
    without an arm counterpart becomes an error row. Both readings of the same rows, as
    `stats.gap_contrasts.gap_readings` takes them."""
    found = pd.Series(np.arange(len(arm)), index=_keys(arm))
    at = found.reindex(_keys(main)).to_numpy()
    matched = np.isfinite(at)
    rows = arm.iloc[np.where(matched, at, 0).astype(np.int64)]
    return main.assign(
        status=np.where(matched, rows["status"].to_numpy(), "error").astype(object),
        passed=pd.Series(rows["passed"].to_numpy(dtype=object), index=main.index).where(
            matched, None),
    )


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


def compare_paired_arm(
    main: pd.DataFrame,
    arm: pd.DataFrame,
    *,
    arm_name: str,
    scenario_ids: list[str],
    targets: list[str],
    statistics: Statistics,
) -> dict:
    """The fields of a `PairedArmResult`: one arm against the main arm's rows of the same
    scenarios, paired by row. `main` must already be restricted to `scenario_ids`."""
    main = main[main["target"].isin(targets)]
    arm = arm[arm["target"].isin(targets)]
    masked_main, masked_arm, in_main, in_arm = paired_rows(main, arm)
    settings = {"resamples": statistics.resamples, "seed": statistics.seed}
    level = statistics.confidence_level
    bootstrap, _, _ = arm_bootstraps(masked_arm, masked_main, paired=True, **settings)
    rate_settings: dict[str, Any] = dict(confidence_level=level, **settings)
    return {
        "arm": arm_name,
        "targets": targets,
        "n_scenarios": len(scenario_ids),
        "n_base_scenarios": len({base_id_of(s) for s in scenario_ids}),
        "rates_main": rates_per_target(main, targets, **rate_settings),
        "rates_arm": rates_per_target(arm, targets, **rate_settings),
        "pairing": [pairing_counts(t, main, arm, in_main, in_arm) for t in targets],
        **arm_differences(
            masked_arm, masked_main, arm_name=arm_name, paired=True, metrics=None,
            statistics=statistics,
        ),
        "agreement": verdict_agreement(
            masked_main, masked_arm, bootstrap, targets=targets, confidence_level=level
        ),
    }


def planned_arm_frames(
    params: Params, benchmark: str, study: Study
) -> tuple[StudyPlan, pd.DataFrame | None, list[tuple[PlannedArm, pd.DataFrame]]]:
    """The study's plan, the main arm's score frame of the planned rows (None without arms),
    and each planned arm's score frame; an arm row outside the plan is an error."""
    plan = load_plan(params, benchmark, study)
    if not plan.arms:
        return plan, None, []
    planned_rows = set(plan.scenario_ids or [])
    main_layout = Layout(params.data_dir, benchmark)
    main_rows = [s for s in arm_scores(main_layout, plan.targets) if s.scenario_id in planned_rows]
    arms = []
    for planned in plan.arms:
        layout = arm_layout(params.data_dir, benchmark, planned.name)
        rows = arm_scores(layout, plan.targets)
        outside = sorted({s.scenario_id for s in rows} - planned_rows)
        if outside:
            raise ConfigError(
                layout.scores_file(rows[0].target),
                f"scores scenario {outside[0]}, which the plan does not list; "
                f"re-run the arm's stages",
                "rows",
            )
        arms.append((planned, frame_of(rows)))
    return plan, frame_of(main_rows), arms
