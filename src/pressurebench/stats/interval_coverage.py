"""Beside each kind of interval in results.json: how it is made and how often the coverage grid
found it covering at the study's design.

An interval's nominal level is a claim; the coverage grid (`make coverage`,
docs/interval_coverage.md) measures it over benchmark designs. A reader of a
study sees, per interval type, the method and the lowest and highest coverage
the grid measured at the largest simulated design not larger than the study's
(its fewest base scenarios with rows in any metric), read from the grid's
summary in the package (`interval_rules.grid_coverage`).
"""

from __future__ import annotations

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
    IntervalRule,
    grid_coverage,
)

Kind = tuple[str, IntervalRule, bool, str, tuple[str, ...]]

# Per interval type in results.json: the rule that governs it, whether it lies in one metric,
# its method where it is made, and the rows of the coverage grid that measure it.
KINDS: tuple[Kind, ...] = (
    ("overall rate", RATE, False, methods.CLUSTER_T_WILSON, ("overall",)),
    ("rate of a metric type", RATE, False, methods.CLUSTER_T_WILSON, ("positive",)),
    ("rate of a metric", RATE, True, methods.CLUSTER_T_WILSON_POOLED,
     ("metric (min)", "metric (max)")),
    ("difference between targets", DIFFERENCE, False, methods.CLUSTER_T_MOVER,
     ("target difference",)),
    ("demographic gap", GAP, False, methods.CLUSTER_T, ("demographic gap",)),
)
# Where the results have them: capitulation curves (per-turn verdicts), measured by the
# capitulation sweep (docs/capitulation_coverage.md), and fidelity's sensitivity difference.
CURVE_KINDS: tuple[Kind, ...] = (
    ("capitulation band", CAPITULATION, False, methods.CLUSTER_T_WILSON, ("band",)),
    ("capitulation band of a metric", CAPITULATION, True, methods.CLUSTER_T_WILSON,
     ("metric band",)),
    ("difference between capitulation curves", CURVE_DIFFERENCE, False, methods.CLUSTER_T,
     ("curve difference",)),
)
FIDELITY_KINDS: tuple[Kind, ...] = (
    ("fidelity sensitivity difference", SENSITIVITY, False, methods.CLUSTER_T_MOVER,
     ("sensitivity",)),
    ("fidelity sensitivity difference of a metric", SENSITIVITY, True,
     methods.CLUSTER_T_MOVER_POOLED, ("metric sensitivity (min)", "metric sensitivity (max)")),
)


def _on_its_own(method: str) -> str:
    """A one-metric method where nothing can be pooled over metrics (a benchmark of one)."""
    return {methods.CLUSTER_T_WILSON_POOLED: methods.CLUSTER_T_WILSON,
            methods.CLUSTER_T_MOVER_POOLED: methods.CLUSTER_T_MOVER}.get(method, method)


class IntervalCoverage(Row):
    """One interval type of the study: its method and the grid's coverage at the study's design."""

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
    reason: str | None = Field(default=None, description="why no coverage is shown")


def interval_coverages(strata: np.ndarray, kinds: tuple[Kind, ...] = KINDS) -> list[IntervalCoverage]:
    """Per interval type of `kinds`, its method and the grid's coverage at the design of a
    study whose base scenarios lie in the metrics `strata` codes (one code per base scenario)."""
    counts = np.bincount(np.asarray(strata, dtype=np.int64)) if len(strata) else np.zeros(0)
    counts = counts[counts > 0]
    metrics, per_metric = len(counts), int(counts.min()) if len(counts) else 0
    out = []
    for interval, rule, single, method, rows in kinds:
        over = 1 if single else metrics
        if single and metrics < 2:
            method = _on_its_own(method)
        needed = rule.per_metric(over)
        found = [grid_coverage(row, metrics, per_metric) for row in rows]
        reason = None
        if per_metric < needed:
            reason = (f"withheld: the {rule.statistic} rule needs {needed} base scenarios per "
                      f"metric, the study has {per_metric}")
        elif None in found:
            reason = "below the smallest design the coverage grid simulates"
        shown = reason is None
        known = [f for f in found if f is not None]  # all of them when shown
        out.append(IntervalCoverage(
            interval=interval,
            method=method if shown else methods.NONE,
            metrics=metrics,
            base_scenarios_per_metric=per_metric,
            grid_metrics=known[0].metrics if shown else None,
            grid_per_metric=known[0].per_metric if shown else None,
            coverage_low=min(f.low for f in known) if shown else None,
            coverage_high=max(f.high for f in known) if shown else None,
            reason=reason,
        ))
    return out
