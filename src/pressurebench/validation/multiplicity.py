"""Differences per target and per target × metric, with Holm's correction over the arm's family.

An arm reports one difference per target and one per target × metric; with
that many, some interval will exclude 0 by chance alone. As for the main run's
demographic gaps (`stats.gaps`), each difference carries the p-value of "no
difference" that inverts its own interval (`stats.inverted_tests`: for the MOVER
interval of an arm difference no symmetric test would agree with it) and Holm's
step-down adjustment within its family (`stats.multiplicity`), which keeps the
chance of any false difference in the family at or below 1 − the confidence
level. The family is every difference one arm reports (per target and per
target × metric) that has a p-value; a difference without an interval has none
and is not in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
from pydantic import Field

from ..schemas import Row
from ..stats.estimates import Difference
from ..stats.multiplicity import Corrected, holm_by_family
from ..stats.rate_contrasts import TestedContrast
from .contrast import arm_replicates, group_differences


class TargetDifference(Difference, Corrected):
    """Pass rate of one target in the arm minus in the main arm."""

    target: str


class MetricDifference(Difference, Corrected):
    """Pass rate of one target on one metric in the arm minus in the main arm."""

    target: str
    metric_id: str


class Multiplicity(Row):
    """Which differences Holm's correction runs over."""

    family: str = Field(description="the differences the correction runs over, in words")
    n_comparisons: int = Field(ge=0, description="differences with a p-value: Holm's family size")
    alpha: float = Field(description="family-wise error rate kept: 1 − confidence level")


FAMILY = "every difference of this arm, per target and per target × metric, that has a p-value"
PAIRWISE_FAMILY = ("every change of a difference between two targets from the main arm to this "
                   "arm that has a p-value")
GAP_FAMILY = ("every change of a demographic gap (every target, axis and pair of values) from the "
              "main judge to this arm's that has a p-value")


def family_of(tests: Sequence[TestedContrast], family: str, confidence_level: float
              ) -> Multiplicity:
    """The Multiplicity of contrasts Holm-corrected as one family (`rate_contrasts.holm_tested`);
    one without a p-value is not in it."""
    return Multiplicity(family=family, n_comparisons=sum(t.p_value is not None for t in tests),
                        alpha=1.0 - confidence_level)


def holm_differences(
    arm: pd.DataFrame,
    main: pd.DataFrame,
    *,
    names: tuple[str, str],
    paired: bool,
    metrics: Sequence[str] | None,
    resamples: int,
    seed: int,
    confidence_level: float,
) -> tuple[list[TargetDifference], list[MetricDifference], Multiplicity]:
    """Arm − main per target and per target × metric (over `metrics` only, every metric when
    None, none when empty), each with its Holm-corrected test; built as `contrast.arm_replicates` builds them,
    so a target's difference is the one `stats.compare_arms` reports on the same frames."""
    settings: dict[str, Any] = {"paired": paired, "resamples": resamples, "seed": seed}
    by_target = arm_replicates(arm, main, ["target"], **settings)
    target_diffs = group_differences(by_target, names, confidence_level)
    metric_keys: list[tuple] = []
    metric_diffs: list[Difference] = []
    if metrics is None or metrics:
        if metrics is not None:
            arm = arm[arm["metric_id"].isin(metrics)]
            main = main[main["metric_id"].isin(metrics)]
        by_metric = arm_replicates(arm, main, ["target", "metric_id"], **settings)
        metric_keys = by_metric.keys
        metric_diffs = group_differences(by_metric, names, confidence_level)
    every = target_diffs + metric_diffs
    tests, sizes = holm_by_family([d.p_value for d in every], ["arm"] * len(every),
                                  confidence_level)
    n = len(target_diffs)
    return (
        [
            TargetDifference(target=key[0], **d.model_dump(), **tests[i])
            for i, (key, d) in enumerate(zip(by_target.keys, target_diffs))
        ],
        [
            MetricDifference(target=key[0], metric_id=key[1], **d.model_dump(), **tests[n + i])
            for i, (key, d) in enumerate(zip(metric_keys, metric_diffs))
        ],
        Multiplicity(family=FAMILY, n_comparisons=sizes.get("arm", 0),
                     alpha=1.0 - confidence_level),
    )
