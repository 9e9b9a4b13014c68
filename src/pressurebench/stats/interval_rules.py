"""When each kind of interval is reported: one measured rule per statistic.

An interval made from a handful of base scenarios can cover its truth as
often as it claims, or not, and how many it needs differs between statistics:
a rate over four metrics borrows strength from all of them, a single metric's
rate from its own base scenarios alone, and a difference between two targets
on the same scenarios cancels what makes a scenario hard for both. So each
statistic has its own rule: the fewest base scenarios per metric at which
neither the coverage grid (`make coverage`, docs/interval_coverage.md: samples ×
ICC × rate × 4 and 20 metrics, every metric clustering alike) nor the stress
grid (docs/stress_coverage.md: metrics that cluster differently, targets that
find different scenarios hard, rewrite effects, lost scenarios, errors that
depend on the outcome, rates near 0 or 1) finds a cell covering less than 0.93
beyond Monte-Carlo error, at that design and every larger one. Below it the
interval is withheld, with the reason and the design that gives one. Cells
covering more than 0.975 are wider than they need to be; the grid flags them
(and says from which design every cell is within 0.93–0.975), and they are not
withheld for it: no quantile brings the small designs' widest cells into the
band without pushing others below it (docs/interval_coverage.md).

A quantity pooled over several metrics and the same quantity on one metric
are different statistics here (`pooled` and `single`): the first has the
degrees of freedom of all metrics' base scenarios (Satterthwaite's, which
follow the metric that carries the variance); the second rests on its own
metric's base scenarios alone, its design effect included.

Capitulation bands, their paired differences and the fidelity sensitivity
difference are measured the same way by their own sweep (`make
capitulation-coverage`, docs/capitulation_coverage.md), judge-corrected rates
and their paired differences by the judge-corrected sweep (`make
judge-coverage`, docs/judge_coverage.md).
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import resources

# Below this many base scenarios per metric the design's variance is measured
# with so few degrees of freedom that no statistic here is reported.
FEWEST_PER_METRIC = 2
# Share of planned base scenarios `pressurebench size` adds for generation losses (a scenario
# that fails to generate, is rejected as a near-duplicate, or has no valid row), at least one.
GENERATION_MARGIN = 0.15


@dataclass(frozen=True)
class IntervalRule:
    """The fewest base scenarios per metric at which a statistic's interval is reported.

    `pooled` applies to a quantity over two or more metrics, `single` to one
    metric's; `method` names how the interval is made at the design the rule
    allows. `single_unsupported` says why no
    design the statistic's coverage simulations reach gives one metric's interval its
    coverage (it is then always withheld on one metric). `min_df` (base scenarios minus
    metrics) is a bare degrees-of-freedom rule for a variance component.
    """

    statistic: str
    pooled: int
    single: int
    method: str
    min_df: int | None = None
    single_unsupported: str | None = None

    def per_metric(self, metrics: int) -> int:
        """Base scenarios per metric a quantity over `metrics` metrics needs for an interval."""
        if self.min_df is not None:
            return 1 + math.ceil(self.min_df / max(metrics, 1))
        return self.pooled if metrics > 1 else self.single

    def withheld(self, clusters: int, metrics: int, df: int) -> str | None:
        """Why a quantity over `clusters` base scenarios in `metrics` metrics gets no interval,
        or None when it gets one."""
        if self.min_df is not None:
            if df >= self.min_df:
                return None
            return (f"too few base scenarios for an interval ({df} degrees of freedom, base "
                    f"scenarios minus metrics; at least {self.min_df} are needed)")
        lowered = _FLOOR.get()
        if metrics <= 1 and self.single_unsupported and lowered is None:
            return f"no {self.statistic} interval on one metric: {self.single_unsupported}"
        needed = lowered or self.per_metric(metrics)
        if clusters < needed * metrics:
            over = f"over {metrics} metrics" if metrics > 1 else "in one metric"
            return (f"too few base scenarios for a {self.statistic} interval ({clusters} with "
                    f"valid rows {over}; the coverage grids need {needed} per metric)")
        return None


# The rules both grids support (docs/interval_coverage.md and docs/stress_coverage.md, "rules"
# tables): never below the design either measured, and never below 3 base scenarios per
# metric pooled or 5 for one metric's rate. A rate over several metrics takes 5: in the stress
# grid's world that combines one metric at ICC 0.8 with lost scenarios and errors that depend
# on the outcome, the rate of a metric type covered 0.897-0.899 at 3-4 per metric with valid
# rows (the overall rate 0.888 at 3), and covers from 5. One metric's rate and paired
# difference rest on that metric's own base scenarios (`stats.rates`, `stats.differences`):
# its rate covers from 2 in both grids (kept at 5); its paired difference fell to 0.899-0.909
# at 3-4 in the same world and covers from 5. A benchmark of one metric takes the same
# thresholds (the grids simulate 4 and 20 metrics).
RATE = IntervalRule("rate", pooled=5, single=5, method="cluster-t-wilson")
DIFFERENCE = IntervalRule("difference", pooled=3, single=5, method="cluster-t-mover-wilson")
INDEPENDENT_DIFFERENCE = IntervalRule(
    "independent difference", pooled=3, single=12, method="cluster-t-welch-mover-wilson"
)
GAP = IntervalRule("demographic gap", pooled=3, single=5, method="cluster-t")
# Not simulated by the grid: a difference of independent differences, so the rule of one.
CONTRAST = IntervalRule("contrast", pooled=3, single=12, method="cluster-t-welch")
# Measured by their own sweep (`make capitulation-coverage`, docs/capitulation_coverage.md) and
# the stress grid's curves: a capitulation band covers from 2 base scenarios per metric, over
# all metrics or one (kept at 3, the floor of every pooled rule); the paired difference of two
# targets' curves fell to 0.92 at 3 where the hazard clusters strongly (ICC 0.44) while its
# degrees of freedom counted every metric alike, and covers from 3 in both since they follow
# the metric that carries the variance; it stays at 5. Curve differences are compared over all
# of a target's metrics only: `single` serves a benchmark of one metric.
CAPITULATION = IntervalRule("capitulation band", pooled=3, single=3, method="cluster-t-wilson")
CURVE_DIFFERENCE = IntervalRule("curve difference", pooled=5, single=5, method="cluster-t")
# Fidelity's "without breaks − all" (nested subsets of the same scenarios): MOVER from the two
# rates' Wilson-t intervals, its correlation continuity-corrected, covers from 2, pooled and on
# one metric's own base scenarios, in both sweeps (kept at 3).
SENSITIVITY = IntervalRule("sensitivity difference", pooled=3, single=3,
                           method="cluster-t-mover-wilson")
# Judge-corrected (prediction-powered) rates and their paired differences (`stats.ppi`), as
# the judge-corrected sweep measured them (docs/judge_coverage.md, "Rules"): pooled rates
# cover from 2 base scenarios per metric (3, the floor of every pooled rule); a paired
# difference fell to 0.903 at 8 of 4 metrics with 3 labels per cell, so it takes 12. One
# metric's corrected rate fell short at every design from 8 to 30 (to 0.82) with 10 labels
# per metric (likely an interval on ten labels, not the design): no design of the sweep
# supports it, so it is withheld at every design (`single_unsupported`; `single` is one more
# than the largest design simulated). Corrected
# differences are reported only pooled (between targets; demographic gaps over a target's
# metrics), so one metric's rule is the pooled one.
CORRECTED_RATE = IntervalRule(
    "corrected rate", pooled=3, single=31, method="ppi++-cluster-t-wilson",
    single_unsupported="with the labels of one metric (labels.per_cell), the judge-corrected "
    "sweep found it covering 0.82-0.90 at every design up to 30 base scenarios per metric "
    "(docs/judge_coverage.md)",
)
CORRECTED_DIFFERENCE = IntervalRule("corrected difference", pooled=12, single=12,
                                    method="ppi++-cluster-t")

# The validation studies' contrasts, measured by their own sweep (`make validation-coverage`,
# docs/validation_coverage.md, "Contrasts"): a gap read twice on the same rows (the judge's part
# of a gap, a gap's change between judges), the share of a gap its judge's part is (Fieller), a
# probe's flip rate over a floor's on the same rows, and the change of a difference between two
# targets across arms (same scenarios, or unrelated ones). Pooled over 4 or 20 metrics every one
# covers from 2 base scenarios per metric (kept at 3, the floor of every pooled rule) but the
# share, which falls to 0.90 at 3 and covers from 5. On one metric (reported only for the flip
# excess; otherwise a benchmark of one metric) the differences cover from 2 (kept at 3, as a
# paired difference's); a gap contrast falls to 0.91 at 8-20 and covers at 30; the share falls
# to 0.78-0.90 at every design up to 30, so it is withheld there at every design.
GAP_CONTRAST = IntervalRule("gap contrast", pooled=3, single=30, method="cluster-t")
EXPLAINED_SHARE = IntervalRule(
    "explained share", pooled=5, single=31, method="fieller-cluster-t",
    single_unsupported="on one metric's base scenarios the validation sweep found it covering "
    "0.78-0.90 at every design up to 30 base scenarios (docs/validation_coverage.md)",
)
FLIP_EXCESS = IntervalRule("flip excess", pooled=3, single=3, method="cluster-t")
DIFFERENCE_CHANGE = IntervalRule("difference change", pooled=3, single=3, method="cluster-t")
INDEPENDENT_DIFFERENCE_CHANGE = IntervalRule("independent difference change", pooled=3,
                                             single=3, method="cluster-t-welch")
VALIDATION_RULES = (GAP_CONTRAST, EXPLAINED_SHARE, FLIP_EXCESS, DIFFERENCE_CHANGE,
                    INDEPENDENT_DIFFERENCE_CHANGE)

RULES = {rule.statistic: rule for rule in (RATE, DIFFERENCE, INDEPENDENT_DIFFERENCE, GAP, CONTRAST,
                                           CAPITULATION, CURVE_DIFFERENCE, SENSITIVITY,
                                           CORRECTED_RATE, CORRECTED_DIFFERENCE,
                                           *VALIDATION_RULES)}


def scenarios_for_intervals(metrics: int, rules: tuple[IntervalRule, ...] | None = None) -> int:
    """Fewest base scenarios per metric at which every rule in `rules` reports its pooled
    interval over `metrics` metrics; by default every measured rule but the curve difference's,
    which only a study comparing targets turn by turn needs, the judge-corrected ones,
    whose intervals need human labels a study may never collect, and the validation studies'
    contrasts, which only a study with those arms or probes needs (`plan` lists them all)."""
    optional = (CURVE_DIFFERENCE, CORRECTED_RATE, CORRECTED_DIFFERENCE, *VALIDATION_RULES)
    chosen = tuple(r for r in RULES.values() if r not in optional) if rules is None else rules
    return max(rule.per_metric(metrics) for rule in chosen)


def with_margin(scenarios: int, margin: float = GENERATION_MARGIN) -> int:
    """`scenarios` plus room for generation losses: `margin` of them, rounded up, at least one."""
    return scenarios + max(1, math.ceil(scenarios * margin))


# Set only while the coverage grid measures intervals below the rules (`rules_lowered`).
_FLOOR: ContextVar[int | None] = ContextVar("interval_rule_floor", default=None)


@contextmanager
def rules_lowered(per_metric: int = FEWEST_PER_METRIC) -> Iterator[None]:
    """Within the block, every measured rule reports from `per_metric` base scenarios per
    metric: how the coverage grid measures the designs the rules withhold."""
    token = _FLOOR.set(per_metric)
    try:
        yield
    finally:
        _FLOOR.reset(token)


# Base scenarios per metric the run asked for (generation.scenarios_per_metric), set by the
# stages that compute statistics, so that a withheld interval's advice can tell scenarios that
# were lost from scenarios that were never asked for.
_PLANNED: ContextVar[int | None] = ContextVar("planned_scenarios_per_metric", default=None)


@contextmanager
def planned_design(scenarios_per_metric: int | None) -> Iterator[None]:
    """Within the block, withheld intervals' advice compares the design with this plan."""
    token = _PLANNED.set(scenarios_per_metric)
    try:
        yield
    finally:
        _PLANNED.reset(token)


def remedy(metrics: int, rule: IntervalRule, clusters: int) -> str:
    """What gives a withheld interval one, said where the reason is read: more base scenarios
    when the plan asked for too few, the lost ones when it asked for enough."""
    if metrics <= 1 and rule.single_unsupported:
        return ("read the metric's raw rate, whose interval rests on every judged row, not on "
                "the labels")
    needed = rule.per_metric(metrics)
    planned = _PLANNED.get()
    if planned is not None and planned >= needed:
        lost = max(planned * metrics - clusters, 0)
        return (f"generation.scenarios_per_metric is already {planned}, but {lost} of the "
                f"{planned * metrics} planned base scenarios of these metrics have no valid row "
                "(failed or rejected in generation, or every row an error): re-run generation "
                f"for them or plan {with_margin(needed)} per metric to absorb such losses")
    return (f"an interval needs at least {needed} base scenarios per metric with valid rows "
            f"(set generation.scenarios_per_metric: {with_margin(needed)}, which leaves a "
            "margin for generation losses; the command pressurebench size sizes a study)")


# The coverage grid's summary (per interval type, number of metrics and base scenarios per
# metric: lowest and highest coverage), written by `make coverage` with docs/interval_coverage.md,
# and the same for capitulation bands, curve differences and the fidelity sensitivity
# difference, written by `make capitulation-coverage` with docs/capitulation_coverage.md.
COVERAGE_FILE = "coverage/interval_coverage.json"
SWEEP_COVERAGE_FILE = "coverage/capitulation_coverage.json"
# The same for every interval type in the stress grid's worlds, written by `make coverage` with
# docs/stress_coverage.md.
STRESS_COVERAGE_FILE = "coverage/stress_coverage.json"


@dataclass(frozen=True)
class GridCoverage:
    """What the coverage grid measured for an interval type at the design nearest a study's
    and not larger: its number of metrics and base scenarios per metric, and the lowest and
    highest coverage over samples, ICC and rate there."""

    interval_type: str
    metrics: int
    per_metric: int
    low: float
    high: float


@functools.cache
def coverage_table(file: str = COVERAGE_FILE) -> dict:
    """A coverage summary as `make coverage` (or `make capitulation-coverage`) wrote it into
    the package."""
    text = resources.files(__package__).joinpath(*file.split("/")).read_text(encoding="utf-8")
    return json.loads(text)


def grid_coverage(
    interval_type: str, metrics: int, per_metric: int, file: str | None = None
) -> GridCoverage | None:
    """The grid's coverage of `interval_type` (a row of docs/interval_coverage.md: "overall",
    "metric (min)", "target difference", ...; or of docs/capitulation_coverage.md: "band",
    "curve difference", "sensitivity", ...; with `file` STRESS_COVERAGE_FILE, a row of
    docs/stress_coverage.md) at the largest simulated design not larger than `metrics` metrics
    of `per_metric` base scenarios each (with fewer metrics than the grid simulates, its
    smallest number of metrics); None below its smallest design."""
    if file is not None:
        by_metrics = coverage_table(file)["coverage"].get(interval_type, {})
    else:
        by_metrics = (coverage_table()["coverage"].get(interval_type)
                      or coverage_table(SWEEP_COVERAGE_FILE)["coverage"].get(interval_type, {}))
    counts = sorted(int(m) for m in by_metrics)
    if not counts:
        return None
    fitting = [m for m in counts if m <= metrics]
    m = fitting[-1] if fitting else counts[0]
    sizes = sorted(int(k) for k in by_metrics[str(m)])
    below = [k for k in sizes if k <= per_metric]
    if not below:
        return None
    low, high = by_metrics[str(m)][str(below[-1])]
    return GridCoverage(interval_type, m, below[-1], float(low), float(high))
