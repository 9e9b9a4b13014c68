"""What every arm result reports of an arm against the main arm, paired by row or not.

The arm − main difference per target (`comparison`, beside the tau noise ceiling of the
main arm's rows), per target and per target × metric with Holm's correction
(`multiplicity`), and the change of every difference between two targets with its own
family: the generator study compares unrelated scenarios, the user-model, evaluator and
probe studies the same rows, and each reports these the same way from the frames it compares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from ..params import Statistics
from ..stats.arm_comparison import compare_arms
from ..stats.pairwise_changes import pairwise_changes
from ..stats.rank_ceiling import rank_noise_ceiling, with_ceiling
from .multiplicity import PAIRWISE_FAMILY, family_of, holm_differences
from .studies import MAIN


def arm_differences(
    arm: pd.DataFrame,
    main: pd.DataFrame,
    *,
    arm_name: str,
    paired: bool,
    metrics: Sequence[str] | None,
    statistics: Statistics,
) -> dict[str, Any]:
    """The arm result's fields of `arm` (named `arm_name`) − the main arm: `comparison`,
    `target_differences`, `metric_differences` (over `metrics`, as `holm_differences` takes
    them), `multiplicity`, `pairwise_changes`, `pairwise_multiplicity`, `tau_noise_ceiling`."""
    settings: dict[str, Any] = {"resamples": statistics.resamples, "seed": statistics.seed}
    level = statistics.confidence_level
    names = (arm_name, MAIN)
    ceiling = rank_noise_ceiling(main, paired=paired, seed=statistics.seed)
    comparison = compare_arms(
        arm, main, arm_names=names, confidence_level=level, paired=paired, **settings
    )
    target_differences, metric_differences, multiplicity = holm_differences(
        arm, main, names=names, paired=paired, metrics=metrics, confidence_level=level, **settings
    )
    changes = pairwise_changes(arm, main, paired=paired, confidence_level=level)
    return {
        "comparison": with_ceiling(comparison, ceiling),
        "target_differences": target_differences,
        "metric_differences": metric_differences,
        "multiplicity": multiplicity,
        "pairwise_changes": changes,
        "pairwise_multiplicity": family_of([c.change for c in changes], PAIRWISE_FAMILY, level),
        "tau_noise_ceiling": ceiling,
    }
