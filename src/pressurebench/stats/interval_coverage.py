"""Beside each kind of interval in results.json: how it is made and how often the coverage grids
found it covering at the study's design.

An interval's nominal level is a claim; two sweeps measure it over benchmark designs: the
coverage grid (`make coverage`, docs/interval_coverage.md), an easy world where every metric
clusters alike, and the stress grid (docs/stress_coverage.md), the worlds a real study lives
in (metrics that cluster differently, targets that find different scenarios hard, rewrite
effects, lost scenarios, errors that depend on the outcome, rates near 0 or 1). A reader of a
study sees, per interval type, the method and the lowest and highest coverage each grid
measured at the largest simulated design not larger than the study's (its fewest base
scenarios with rows in any metric), read from the grids' summaries in the package
(`interval_rules.grid_coverage`): the stress grid's lowest is what a realistic study of this
design can expect at worst.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from pydantic import Field

from ..schemas import Row
from . import methods
from .interval_rules import (
    CAPITULATION,
    CURVE_DIFFERENCE,
    DIFFERENCE,
    GAP,
    RATE,
    SENSITIVITY,
    STRESS_COVERAGE_FILE,
    IntervalRule,
    grid_coverage,
)


class Kind(NamedTuple):
    """An interval type of results.json: the rule that governs it, whether it lies in one
    metric, its method where it is made, and the rows of the coverage grid and of the stress
    grid that measure it."""

    interval: str
    rule: IntervalRule
    single: bool
    method: str
    grid: tuple[str, ...]
    stress: tuple[str, ...]


METRIC = ("metric (min)", "metric (max)")
METRIC_DIFFERENCE = ("metric difference (min)", "metric difference (max)")
KINDS: tuple[Kind, ...] = (
    Kind("overall rate", RATE, False, methods.CLUSTER_T_WILSON, ("overall",), ("overall",)),
    Kind("rate of a metric type", RATE, False, methods.CLUSTER_T_WILSON, ("positive",),
         ("positive",)),
    Kind("rate of a demographic value", RATE, False, methods.CLUSTER_T_WILSON, ("overall",),
         ("demographic value",)),
    Kind("rate of a metric", RATE, True, methods.CLUSTER_T_WILSON, METRIC, METRIC),
    Kind("difference between targets", DIFFERENCE, False, methods.CLUSTER_T_MOVER,
         ("target difference",), ("target difference",)),
    Kind("difference between targets on a metric", DIFFERENCE, True, methods.CLUSTER_T_MOVER,
         METRIC_DIFFERENCE, METRIC_DIFFERENCE),
    Kind("demographic gap", GAP, False, methods.CLUSTER_T, ("demographic gap",),
         ("demographic gap",)),
)
# Where the results have them: capitulation curves (per-turn verdicts), measured by the
# capitulation sweep (docs/capitulation_coverage.md), and fidelity's sensitivity difference.
CURVE_KINDS: tuple[Kind, ...] = (
    Kind("capitulation band", CAPITULATION, False, methods.CLUSTER_T_WILSON, ("band",),
         ("band",)),
    Kind("capitulation band of a metric", CAPITULATION, True, methods.CLUSTER_T_WILSON,
         ("metric band",), ("metric band",)),
    Kind("difference between capitulation curves", CURVE_DIFFERENCE, False, methods.CLUSTER_T,
         ("curve difference",), ("curve difference",)),
)
FIDELITY_KINDS: tuple[Kind, ...] = (
    Kind("fidelity sensitivity difference", SENSITIVITY, False, methods.CLUSTER_T_MOVER,
         ("sensitivity",), ("sensitivity",)),
    Kind("fidelity sensitivity difference of a metric", SENSITIVITY, True,
         methods.CLUSTER_T_MOVER, ("metric sensitivity (min)", "metric sensitivity (max)"),
         ("metric sensitivity (min)", "metric sensitivity (max)")),
)


class IntervalCoverage(Row):
    """One interval type of the study: its method and both grids' coverage at its design."""

    interval: str = Field(description="the kind of interval in results.json")
    method: str = Field(description="its ci_method where the interval is made")
    metrics: int = Field(ge=0, description="metrics of the study")
    base_scenarios_per_metric: int = Field(
        ge=0, description="the study's fewest base scenarios in a metric"
    )
    grid_metrics: int | None = Field(description="metrics of the grid design read")
    grid_per_metric: int | None = Field(
        description="base scenarios per metric of the grid design read: the largest simulated "
        "not above the study's"
    )
    coverage_low: float | None = Field(description="lowest coverage over the grid's cells there")
    coverage_high: float | None = Field(description="highest coverage over the grid's cells there")
    stress_per_metric: int | None = Field(
        default=None, description="base scenarios per metric of the stress grid design read"
    )
    stress_low: float | None = Field(
        default=None, description="lowest coverage over the stress grid's worlds there: what a "
        "realistic study of this design gets at worst"
    )
    stress_high: float | None = Field(
        default=None, description="highest coverage over the stress grid's worlds there"
    )
    reason: str | None = Field(default=None, description="why no coverage is shown")


def interval_coverages(strata: np.ndarray, kinds: tuple[Kind, ...] = KINDS) -> list[IntervalCoverage]:
    """Per interval type of `kinds`, its method and both grids' coverage at the design of a
    study whose base scenarios lie in the metrics `strata` codes (one code per base scenario)."""
    counts = np.bincount(np.asarray(strata, dtype=np.int64)) if len(strata) else np.zeros(0)
    counts = counts[counts > 0]
    metrics, per_metric = len(counts), int(counts.min()) if len(counts) else 0
    out = []
    for kind in kinds:
        needed = kind.rule.per_metric(1 if kind.single else metrics)
        found = [grid_coverage(row, metrics, per_metric) for row in kind.grid]
        stressed = [grid_coverage(row, metrics, per_metric, STRESS_COVERAGE_FILE)
                    for row in kind.stress]
        reason = None
        if per_metric < needed:
            reason = (f"withheld: the {kind.rule.statistic} rule needs {needed} base scenarios "
                      f"per metric, the study has {per_metric}")
        elif None in found or None in stressed:
            reason = "below the smallest design the coverage grids simulate"
        shown = reason is None
        known = [f for f in found if f is not None]  # all of them when shown
        stress_known = [f for f in stressed if f is not None]
        out.append(IntervalCoverage(
            interval=kind.interval,
            method=kind.method if shown else methods.NONE,
            metrics=metrics,
            base_scenarios_per_metric=per_metric,
            grid_metrics=known[0].metrics if shown else None,
            grid_per_metric=known[0].per_metric if shown else None,
            coverage_low=min(f.low for f in known) if shown else None,
            coverage_high=max(f.high for f in known) if shown else None,
            stress_per_metric=stress_known[0].per_metric if shown else None,
            stress_low=min(f.low for f in stress_known) if shown else None,
            stress_high=max(f.high for f in stress_known) if shown else None,
            reason=reason,
        ))
    return out
