"""Coverage in the worlds real studies live in: the stress grid.

The coverage grid (`sweeps.grid`) simulates an easy world: every metric's scenarios cluster
alike, both targets find the same scenarios hard, the demographic variants of a base scenario
are exchangeable, nothing is lost and no row errs. Each world here breaks some of that, as a
real study does (`WORLDS`):

- metrics that cluster differently: one metric far from the rest (ICC 0.8 against 0.05), or
  the ICCs spread from 0.05 to 0.95 over the metrics;
- clustering up to an ICC of 0.9, and rows of one variant that repeat each other (a model at
  temperature 0);
- a second target whose scenario difficulty is independent of the first's, or opposed to it;
- a variant-level rewrite effect (each demographic rewrite of a base scenario has its own
  difficulty), three-valued and two-axis (2 × 3) demographics, and a true demographic gap;
- base scenarios lost in generation, error rows whose chance depends on the outcome (a
  failing conversation errs more often) and unequal rows per scenario;
- pass rates of 0.97–0.995 and of 0.005–0.03.

Each base scenario's pass probability is Beta around its metric's mean with the metric's ICC
(`common.probabilities`); with a rewrite effect each variant's is Beta around its scenario's
with the world's variant-level ICC. Every interval is computed by the package's own functions
the way the results compute it (rates, pairwise differences on the variants both targets have
valid rows for, demographic gaps on the base scenarios both values have valid rows in, arms on
unrelated scenarios), the rules' withholding lowered to 2 base scenarios per metric. Its truth
is what the estimator converges to in the world (`population`): with errors that depend on the
outcome that is the pass rate among rows with a verdict, not among all rows, which no interval
can see (it is why `n_error` is shown beside every rate).

`python -m pressurebench.stats.sweeps stress --out docs/stress_coverage.md --coverage-json
src/pressurebench/stats/coverage/stress_coverage.json` writes the page and the package's
copy of its summary (`make coverage` runs it after the grid).
"""

from __future__ import annotations

import argparse
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import interval_rules, methods
from ..bootstrap import ClusterBootstrap
from ..differences import estimate_differences, independent_design, paired_design
from ..interval_rules import rules_lowered
from ..rates import estimate_rates
from . import grid, judge, stress_curves
from .common import (
    LOW,
    MeasuredDesign,
    Sweep,
    add_sweep_options,
    asked_sweep,
    coverage_shares,
    covered,
    covers,
    lowered,
    measured_metrics,
    metric_ends,
    monte_carlo_error,
    probabilities,
    seeded_runs,
)
from .pages import (
    by_design,
    listing,
    measured_rules_table,
    summary,
    table,
    write_page,
    write_summary,
)

SAMPLES = (1, 3)
JUDGE_BENCHMARKS = 400
# The fewest studies of a world with lost scenarios that make a cell of the design they ended
# with (`stress_cell`): a coverage near 0.95 from 300 is known to ±0.025.
MIN_STUDIES = 300
# Clusters per metric of the large simulated study whose totals give each interval's truth.
POPULATION = 40000


@dataclass(frozen=True)
class World:
    """How a world departs from the coverage grid's (`what` says it in words).

    `icc` is every metric's ICC, `icc_apart` that of the first metric (the one with the
    lowest mean) where set, `icc_spread` ICCs from its first to its second value over the
    metrics instead. `means`: the lowest and highest metric means of target a; target b's are
    0.1 lower (`b_means` "lower"), or have three times a's failures ("more failures") or
    passes ("more passes"). `difficulty_b`: b's scenario difficulty is a's ("shared"), drawn
    on its own ("independent") or a's reversed ("opposed"). `rewrite`: the ICC of a variant's
    pass probability around its base scenario's (0: no rewrite effect); `axes`: values per
    demographic axis; `gap`: the share by which the first value of the first axis lowers the
    pass probability; `lost`: the share of base scenarios lost in generation; `errors`: the
    chance that a passing and that a failing row errs; `unequal`: samples per variant vary
    from one fewer to one more than the design's."""

    what: str
    icc: float = 0.1
    icc_apart: float | None = None
    icc_spread: tuple[float, float] | None = None
    means: tuple[float, float] = (0.55, 0.85)
    b_means: str = "lower"
    difficulty_b: str = "shared"
    rewrite: float = 0.0
    axes: tuple[int, ...] = (2,)
    gap: float = 0.0
    lost: float = 0.0
    errors: tuple[float, float] = (0.0, 0.0)
    unequal: bool = False

    def iccs(self, metrics: int) -> np.ndarray:
        if self.icc_spread is not None:
            return np.linspace(*self.icc_spread, metrics)
        out = np.full(metrics, self.icc)
        if self.icc_apart is not None:
            out[0] = self.icc_apart
        return out

    def mean_profiles(self, metrics: int) -> tuple[np.ndarray, np.ndarray]:
        """Per metric, target a's and target b's mean pass probability."""
        a = np.linspace(*self.means, metrics)
        b = {"lower": a - 0.1, "more failures": 1 - 3 * (1 - a), "more passes": 3 * a}
        return a, b[self.b_means]


MIXED: dict[str, Any] = {"icc": 0.05, "icc_apart": 0.8}
EVERY_STRESS: dict[str, Any] = {
    "difficulty_b": "independent", "rewrite": 0.2, "axes": (2, 3), "gap": 0.15,
    "lost": 0.2, "errors": (0.02, 0.12), "unequal": True,
}
WORLDS: dict[str, World] = {
    "one metric apart": World("one metric's ICC 0.8, the others' 0.05", **MIXED),
    "ICCs spread": World("metric ICCs spread from 0.05 to 0.95", icc_spread=(0.05, 0.95)),
    "ICC 0.9": World("every metric's ICC 0.9", icc=0.9),
    "temperature 0": World("ICC 0.3; a variant's samples repeat each other (variant-level "
                           "ICC 0.9)", icc=0.3, rewrite=0.9),
    "independent targets": World("target b's scenario difficulty independent of a's, ICC 0.5",
                                 icc=0.5, difficulty_b="independent"),
    "opposed targets": World("target b finds hard what a finds easy, ICC 0.5", icc=0.5,
                             difficulty_b="opposed"),
    "rewrite, 3 values": World("a rewrite effect (variant-level ICC 0.3), one axis of three "
                               "values", icc=0.2, rewrite=0.3, axes=(3,)),
    "2 × 3 with a gap": World("two axes (2 × 3), a rewrite effect, a true gap of 15% of the "
                              "pass probability on one value", icc=0.2, rewrite=0.2,
                              axes=(2, 3), gap=0.15),
    "lost and errors": World("20% of base scenarios lost, failing rows err 12% and passing "
                             "2%, 0–2 samples more or fewer per variant", icc=0.3, lost=0.2,
                             errors=(0.02, 0.12), unequal=True),
    "rates 0.97–0.995": World("metric means 0.97–0.995 (b: three times the failures), one "
                              "metric apart", means=(0.97, 0.995), b_means="more failures",
                              **MIXED),
    "rates 0.005–0.03": World("metric means 0.005–0.03 (b: three times the passes), one "
                              "metric apart", means=(0.005, 0.03), b_means="more passes",
                              **MIXED),
    "every stress": World("one metric apart, independent targets, a rewrite effect, 2 × 3 "
                          "with a gap, lost scenarios, outcome-dependent errors, unequal rows",
                          **MIXED, **EVERY_STRESS),
}

# Interval types of the rates part: the coverage grid's, each governed by the rule and side of
# `stats.interval_rules` that governs it there.
RATE_GOVERNED_BY = {name: grid.GOVERNED_BY[name] for name in (
    "overall", "positive", "demographic value", "metric (min)", "metric (max)",
    "target difference", "metric difference (min)", "metric difference (max)",
    "demographic gap", "independent contrast")}
STATISTICS = tuple(RATE_GOVERNED_BY)
GOVERNED_BY = {**RATE_GOVERNED_BY, **stress_curves.GOVERNED_BY, **judge.STRESS_GOVERNED_BY}
# An ICC at or below this is "low" and at or above HIGH_ICC "high": a world with both is mixed,
# and the low-ICC metrics' coverage there is read against the band's upper side.
LOW_ICC, HIGH_ICC = 0.1, 0.5


@dataclass(frozen=True)
class StressCell(MeasuredDesign):
    """One design in one world of one part of the grid ("rates", "curves", "sensitivity" or
    "judge"): per interval type its coverage among the benchmarks where it was reported (None:
    never; for curves the lowest over turns, `highest` the highest) and the share reported; per
    measured metric its ICC and its rate's coverage. `samples` counts conversations per base
    scenario for curves and the sensitivity difference. In a world that loses base scenarios,
    a rates cell holds the studies planned with `planned` base scenarios per metric that ended
    with `base_per_metric` (`benchmarks` of them): see `stress_cell`."""

    part: str
    samples: int
    world: str
    highest: dict[str, float | None] = field(default_factory=dict)
    metric_coverage: tuple[tuple[float, float | None], ...] = field(default=())
    planned: int = 0
    benchmarks: int = 0

    def high(self, name: str) -> float | None:
        return self.highest.get(name, self.coverage[name])


@dataclass(frozen=True)
class Tables:
    """Per target, (benchmarks, metrics, k, variants) passes, valid rows and error rows of
    every variant: a and b play the same scenarios, `other` is a's arm on unrelated ones."""

    passes: dict[str, np.ndarray]
    valid: dict[str, np.ndarray]
    errors: dict[str, np.ndarray]


def simulate(
    world: World, metrics: int, k: int, samples: int, benchmarks: int, rng: np.random.Generator
) -> Tables:
    """`benchmarks` studies of the world, every target's rows per variant."""
    shape = (benchmarks, metrics, k)
    iccs = world.iccs(metrics)[None, :, None]
    mean_a, mean_b = world.mean_profiles(metrics)
    variants = int(np.prod(world.axes))
    u = rng.uniform(size=shape)
    u_b = {"shared": u, "opposed": 1 - u}.get(world.difficulty_b)
    scenario = {
        "a": probabilities(mean_a[None, :, None], iccs, u),
        "b": probabilities(mean_b[None, :, None], iccs,
                           rng.uniform(size=shape) if u_b is None else u_b),
        "other": probabilities(((mean_a + mean_b) / 2)[None, :, None], iccs,
                               rng.uniform(size=shape)),
    }
    lost = {"a": rng.uniform(size=shape) < world.lost}
    lost["b"] = lost["a"]
    lost["other"] = rng.uniform(size=shape) < world.lost
    effect = np.ones(variants)
    first_axis = np.array([v[0] for v in itertools.product(*map(range, world.axes))])
    effect[first_axis == 0] = 1 - world.gap
    out: dict[str, dict[str, np.ndarray]] = {"passes": {}, "valid": {}, "errors": {}}
    for target, p in scenario.items():
        p = np.repeat(p[..., None], variants, axis=-1)
        if world.rewrite > 0:
            concentration = (1 - world.rewrite) / world.rewrite
            p = rng.beta(np.maximum(p * concentration, 1e-9),
                         np.maximum((1 - p) * concentration, 1e-9))
        p = p * effect
        rows = np.full(p.shape, samples)
        if world.unequal:
            rows = rng.integers(max(samples - 1, 1), samples + 2, size=p.shape)
        rows = np.where(lost[target][..., None], 0, rows)
        passed = rng.binomial(rows, p)
        err_pass = rng.binomial(passed, world.errors[0])
        err_fail = rng.binomial(rows - passed, world.errors[1])
        out["passes"][target] = (passed - err_pass).astype(float)
        out["valid"][target] = (rows - err_pass - err_fail).astype(float)
        out["errors"][target] = (err_pass + err_fail).astype(float)
    return Tables(**out)


def _clusters(x: np.ndarray) -> np.ndarray:
    """(benchmarks, metrics, k) → (clusters, benchmarks), clusters metric-major."""
    return x.reshape(x.shape[0], -1).T


def _value_masks(world: World) -> list[tuple[int, int, np.ndarray]]:
    """Per axis and value: which variants carry it."""
    combos = np.array(list(itertools.product(*map(range, world.axes))))
    return [(axis, value, combos[:, axis] == value)
            for axis, n in enumerate(world.axes) for value in range(n)]


@dataclass(frozen=True)
class Group:
    """(clusters, benchmarks) passes, valid rows and (benchmarks,) error rows of a group."""

    passes: np.ndarray
    valid: np.ndarray
    errors: np.ndarray


def _group(tables: Tables, target: str, metric_mask: np.ndarray | None = None,
           variant_mask: np.ndarray | None = None) -> Group:
    passes, valid, errors = (getattr(tables, n)[target] for n in ("passes", "valid", "errors"))
    if variant_mask is not None:
        passes, valid, errors = (x[..., variant_mask] for x in (passes, valid, errors))
    if metric_mask is not None:
        on = metric_mask[None, :, None, None]
        passes, valid, errors = passes * on, valid * on, errors * on
    return Group(_clusters(passes.sum(-1)), _clusters(valid.sum(-1)),
                 errors.sum(axis=(1, 2, 3)))


def _shared(tables: Tables, metric_mask: np.ndarray | None = None) -> tuple[Group, Group]:
    """Targets a and b on the variants both have valid rows for (`stats.ranking`)."""
    both = (tables.valid["a"] > 0) & (tables.valid["b"] > 0)
    on = both if metric_mask is None else both & metric_mask[None, :, None, None]
    sides = []
    for target in ("a", "b"):
        sides.append(Group(_clusters((tables.passes[target] * on).sum(-1)),
                           _clusters((tables.valid[target] * on).sum(-1)),
                           np.zeros(on.shape[0])))
    return sides[0], sides[1]


def _gap_pairs(tables: Tables, world: World, target: str = "a") -> list[tuple[Group, Group]]:
    """Every pair of values of every axis, on the base scenarios where both have valid rows
    (`stats.gaps`)."""
    out = []
    by_axis: dict[int, list[Group]] = {}
    for axis, _, mask in _value_masks(world):
        by_axis.setdefault(axis, []).append(_group(tables, target, variant_mask=mask))
    for values in by_axis.values():
        for x, y in itertools.combinations(values, 2):
            both = (x.valid > 0) & (y.valid > 0)
            out.append((Group(x.passes * both, x.valid * both, x.errors),
                        Group(y.passes * both, y.valid * both, y.errors)))
    return out


def _ratio(group: Group) -> float:
    return float(group.passes.sum() / group.valid.sum())


def population(world: World, metrics: int, samples: int, seed: int = 0) -> dict:
    """Each interval's truth: the value of its estimator over a study of `POPULATION` base
    scenarios per metric of the world (what the estimator converges to), per measured metric
    for one metric's statistics, per pair of values for gaps (a list)."""
    tables = simulate(world, metrics, POPULATION, samples, 1, np.random.default_rng(seed))
    strata = np.arange(metrics)
    out: dict = {"overall": _ratio(_group(tables, "a")),
                 "positive": _ratio(_group(tables, "a", strata % 2 == 0)),
                 "demographic value": [_ratio(_group(tables, "a", variant_mask=m))
                                       for _, _, m in _value_masks(world)]}
    a, b = _shared(tables)
    out["target difference"] = _ratio(a) - _ratio(b)
    out["independent contrast"] = _ratio(_group(tables, "a")) - _ratio(_group(tables, "other"))
    out["demographic gap"] = [_ratio(x) - _ratio(y) for x, y in _gap_pairs(tables, world)]
    for m in measured_metrics(metrics):
        only = strata == m
        out[("metric", m)] = _ratio(_group(tables, "a", only))
        a, b = _shared(tables, only)
        out[("metric difference", m)] = _ratio(a) - _ratio(b)
    return out


def _rates(bootstrap, group: Group, truth, level):
    """Coverage of each benchmark's rate, as `stats.rates.target_rates` computes it."""
    return covered(estimate_rates(bootstrap, group.passes, group.valid, group.errors, level),
                   truth)


def _difference(strata, a: Group, b: Group, truth, level, *, rule, method):
    """Coverage of each benchmark's paired difference a − b, as the package computes it."""
    design = paired_design(a.passes, a.valid, b.passes, b.valid, strata, rule=rule)
    estimates = estimate_differences([("a", "b")] * a.passes.shape[1], a.passes, a.valid,
                                     b.passes, b.valid, design, method=method,
                                     confidence_level=level)
    return covered(estimates, truth)


def _worst(found: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Of several intervals per benchmark, the one with the lowest coverage."""
    shares = [cov[rep].mean() if rep.any() else np.inf for rep, cov in found]
    return found[int(np.argmin(shares))]


def stress_cell(
    world_name: str, metrics: int, k: int, samples: int, truth: dict, *, benchmarks: int,
    confidence_level: float, rng: np.random.Generator,
) -> list[StressCell]:
    """One design in one world: `benchmarks` studies, every interval type's coverage (call
    within `rules_lowered` to measure below the rules).

    In a world that loses base scenarios, a study planned with k per metric ends with fewer,
    and the rules and the coverage printed beside an interval read the design it ends with;
    so its studies are split by that design (base scenarios with valid rows over metrics,
    rounded down), one cell each where at least `MIN_STUDIES` ended there, each read with its
    own Monte-Carlo error. Elsewhere the one cell holds every study."""
    world = WORLDS[world_name]
    tables = simulate(world, metrics, k, samples, benchmarks, rng)
    strata = np.repeat(np.arange(metrics), k)
    bootstrap = ClusterBootstrap(strata, np.arange(metrics * k), resamples=1)
    level = confidence_level
    whole = _group(tables, "a")
    results = {
        "overall": _rates(bootstrap, whole, truth["overall"], level),
        "positive": _rates(bootstrap, _group(tables, "a", np.arange(metrics) % 2 == 0),
                           truth["positive"], level),
        "demographic value": _worst([
            _rates(bootstrap, _group(tables, "a", variant_mask=mask), value, level)
            for (_, _, mask), value in zip(_value_masks(world), truth["demographic value"])]),
    }
    a, b = _shared(tables)
    difference = {"rule": interval_rules.DIFFERENCE, "method": methods.CLUSTER_T_MOVER}
    results["target difference"] = _difference(strata, a, b, truth["target difference"],
                                               level, **difference)
    results["demographic gap"] = _worst([
        _difference(strata, x, y, value, level, rule=interval_rules.GAP,
                    method=methods.CLUSTER_T)
        for (x, y), value in zip(_gap_pairs(tables, world), truth["demographic gap"])])
    other = _group(tables, "other")
    design = independent_design(whole.passes, whole.valid, strata, other.passes, other.valid,
                                strata, rule=interval_rules.INDEPENDENT_DIFFERENCE)
    results["independent contrast"] = covered(estimate_differences(
        [("a", "other")] * benchmarks, whole.passes, whole.valid, other.passes, other.valid,
        design, method=methods.CLUSTER_T_WELCH_MOVER, confidence_level=level,
    ), truth["independent contrast"])
    per_metric, per_difference, iccs = [], [], world.iccs(metrics)
    for m in measured_metrics(metrics):
        only = np.arange(metrics) == m
        per_metric.append(_rates(bootstrap, _group(tables, "a", only), truth[("metric", m)],
                                 level))
        a_m, b_m = _shared(tables, only)
        per_difference.append(_difference(strata, a_m, b_m, truth[("metric difference", m)],
                                          level, **difference))
    for name, found in (("metric", per_metric), ("metric difference", per_difference)):
        results.update(metric_ends(name, found))
    per_metric_results = dict(zip(measured_metrics(metrics), per_metric))
    if world.lost == 0:
        ended = {k: np.ones(benchmarks, dtype=bool)}
    else:
        # The design a study ends with, as the rules count it: its base scenarios with valid
        # rows, over its metrics (`interval_rules.IntervalRule.withheld`).
        realized = (whole.valid > 0).sum(axis=0) // metrics
        ended = {int(r): realized == r for r in np.unique(realized)
                 if r >= 2 and (realized == r).sum() >= MIN_STUDIES}
    cells = []
    for ended_with, chosen in sorted(ended.items()):
        coverage, reported = coverage_shares(
            {name: (rep[chosen], cov[chosen]) for name, (rep, cov) in results.items()})
        metric_coverage = tuple(
            (float(iccs[m]), float(cov[chosen][rep[chosen]].mean()) if rep[chosen].any() else None)
            for m, (rep, cov) in per_metric_results.items())
        cells.append(StressCell(metrics, ended_with, "rates", samples, world_name,
                                coverage=coverage, reported=reported,
                                metric_coverage=metric_coverage, planned=k,
                                benchmarks=int(chosen.sum())))
    return cells


def _stress_cell(task: tuple) -> list[StressCell]:
    """One cell from its own stream, the rules lowered (a picklable task for the workers)."""
    return lowered(stress_cell, task)


def _part_cell(task: tuple) -> StressCell:
    """One cell of the curves' or the sensitivity difference's part, the rules lowered."""
    part, world, m, k, s, benchmarks, confidence_level, stream = task
    measures: dict[str, Callable[..., dict[str, tuple[float | None, float | None, float]]]] = {
        "curves": stress_curves.curve_coverage,
        "sensitivity": stress_curves.sensitivity_coverage,
        "judge": judge.stress_coverage,
    }
    measure = measures[part]
    with rules_lowered():
        found = measure(world, m, k, s, benchmarks=benchmarks, confidence_level=confidence_level,
                        rng=np.random.default_rng(stream))
    return StressCell(m, k, part, s, world, coverage={n: v[0] for n, v in found.items()},
                      reported={n: v[2] for n, v in found.items()},
                      highest={n: v[1] for n, v in found.items()}, planned=k)


def _population(task: tuple) -> dict:
    world, m, s, stream = task
    return population(WORLDS[world], m, s, seed=int(stream.generate_state(1)[0]))


# The parts of the grid: their interval types, worlds, and what `samples` counts.
PARTS = {
    "rates": (STATISTICS, {w: WORLDS[w].what for w in WORLDS}, SAMPLES, "samples per variant"),
    "curves": (stress_curves.CURVE_STATISTICS,
               {w: v.what for w, v in stress_curves.CURVE_WORLDS.items()}, (1, 4),
               "conversations per base scenario"),
    "sensitivity": (stress_curves.SENSITIVITY_STATISTICS,
                    {w: v["what"] for w, v in stress_curves.SENSITIVITY_WORLDS.items()},
                    (1, 4), "conversations per base scenario"),
    "judge": (judge.STRESS_STATISTICS,
              {w: v["what"] for w, v in judge.STRESS_JUDGES.items()}, (10,),
              "labels per target × metric"),
}


# How the grid runs unless told otherwise.
DEFAULTS = Sweep(benchmarks=1000, seed=2028)


def stress_grid(
    run: Sweep = DEFAULTS, *, parts: tuple[str, ...] = tuple(PARTS),
    worlds: tuple[str, ...] | None = None, cache: Path | None = None,
) -> list[StressCell]:
    """Every design in every world of every part, each from its own seeded stream, measured
    below the rules (`worlds`: only these, of whichever part has them); for the rates, the
    truths first, from one large study per world, number of metrics and samples."""
    cells: list[StressCell] = []
    for n, part in enumerate(p for p in PARTS if p in parts):
        _, names, samples, _ = PARTS[part]
        chosen = [w for w in names if worlds is None or w in worlds]
        if part == "rates":
            kinds = list(itertools.product(chosen, run.metrics, samples))
            truths = dict(zip(kinds, seeded_runs(_population, kinds, seed=run.seed + 1,
                                                 jobs=run.jobs, cache=cache)))
            designs = [(w, m, k, s, truths[(w, m, s)], run.benchmarks, run.confidence_level)
                       for w, m, k, s in itertools.product(chosen, run.metrics,
                                                           run.base_per_metric, samples)]
            cells += [c for found in seeded_runs(_stress_cell, designs, seed=run.seed,
                                                 jobs=run.jobs, cache=cache) for c in found]
            continue
        # Judge-corrected rates are simulated row by row: the 4-metric designs only, and at
        # most JUDGE_BENCHMARKS studies per cell.
        counts = tuple(m for m in run.metrics if part != "judge" or m == min(run.metrics))
        size = part_benchmarks(part, run.benchmarks)
        part_designs = [(part, w, m, k, s, size, run.confidence_level)
                        for w, m, k, s in itertools.product(chosen, counts, run.base_per_metric,
                                                            samples)]
        cells += seeded_runs(_part_cell, part_designs, seed=run.seed + 10 * n, jobs=run.jobs,
                             cache=cache)
    return cells


def part_benchmarks(part: str, benchmarks: int) -> int:
    """Simulated studies per cell of `part`."""
    return min(benchmarks, JUDGE_BENCHMARKS) if part == "judge" else benchmarks


def rule_of(name: str) -> int:
    """The base scenarios per metric the package's rule for interval type `name` requires."""
    statistic, side = GOVERNED_BY[name]
    return getattr(interval_rules.RULES[statistic], side)


def mixed_low_icc(cells: list[StressCell]) -> dict[tuple[int, int], float]:
    """Per (metrics, base scenarios per metric): the highest coverage of a low-ICC metric's rate
    in a world whose metrics mix low and high ICCs at pass rates between 0.1 and 0.9, where the
    rate is reported (near 0 or 1 a rate's coverage moves in steps whatever its variance)."""
    out: dict[tuple[int, int], float] = {}
    for c in cells:
        if c.part != "rates":
            continue
        iccs = [icc for icc, _ in c.metric_coverage]
        low, high = WORLDS[c.world].means
        if not iccs or min(iccs) > LOW_ICC or max(iccs) < HIGH_ICC or low < 0.1 or high > 0.9:
            continue
        for icc, value in c.metric_coverage:
            if icc <= LOW_ICC and value is not None:
                key = (c.metrics, c.base_per_metric)
                out[key] = max(out.get(key, 0.0), value)
    return out


def coverage_table(cells: list[StressCell], *, benchmarks: int, confidence_level: float) -> dict:
    """What `interval_rules.grid_coverage` reads for the stress grid: per interval type,
    number of metrics and base scenarios per metric, the lowest and highest coverage over
    samples × worlds (rounded as the page shows them)."""
    return summary(((name, c.metrics, c.base_per_metric, *_bounds(c, name))
                    for c in cells for name, value in c.coverage.items() if value is not None),
                   benchmarks=benchmarks, confidence_level=confidence_level)


def _bounds(cell: StressCell, name: str) -> tuple[float, float]:
    """The lowest and highest coverage of `name` in a cell that reported it."""
    low, high = cell.coverage[name], cell.high(name)
    assert low is not None and high is not None, f"{name} was never reported in this cell"
    return low, high


def _tolerance(cell: StressCell, benchmarks: int) -> float:
    """Two Monte-Carlo standard errors of a coverage near 0.95 from the cell's studies."""
    return 2 * monte_carlo_error(cell.benchmarks or part_benchmarks(cell.part, benchmarks), 0.95)


def _short(cell: StressCell, name: str, benchmarks: int) -> bool:
    value = cell.coverage[name]
    return value is not None and not covers(value, _tolerance(cell, benchmarks))


def _range(cells: list[StressCell], name: str, benchmarks: int) -> str:
    if not cells:
        return "none"
    bounds = [_bounds(c, name) for c in cells]
    low = min(lowest for lowest, _ in bounds)
    high = max(highest for _, highest in bounds)
    flag = " ✗" if any(_short(c, name, benchmarks) for c in cells) else ""
    return f"{low:.3f}–{high:.3f}{flag}"


def _shown(cell: StressCell, name: str) -> str:
    """A cell's coverage of `name` (lowest–highest where they differ; "none": never reported)."""
    low, high = cell.coverage[name], cell.high(name)
    return "none" if low is None else f"{low:.3f}" if high == low else f"{low:.3f}–{high:.3f}"


PART_TITLES = {"rates": "Rates, differences and gaps", "curves": "Capitulation curves",
               "sensitivity": "Fidelity sensitivity difference",
               "judge": "Judge-corrected rates"}


def _part_markdown(part: str, cells: list[StressCell], benchmarks: int) -> list[str]:
    statistics, worlds, _, counted = PARTS[part]
    size = part_benchmarks(part, benchmarks)
    tolerance = 2 * monte_carlo_error(size, 0.95)
    return [
        "",
        f"## {PART_TITLES[part]}",
        "",
        (f"{' or '.join(str(s) for s in sorted({c.samples for c in cells}))} {counted}; "
        f"{size} simulated studies per cell (✗: short of {LOW} by more than "
        f"±{tolerance:.4f})."),
        "",
        *table(["world", "what departs from the coverage grid's world"],
               ((w, what) for w, what in worlds.items() if any(c.world == w for c in cells))),
        "",
        *measured_rules_table(cells, size, statistics, GOVERNED_BY, rule_of,
                              first="interval type", found="not short from",
                              beyond="beyond the grid"),
        *by_design(cells, statistics, over=f"{counted} × worlds", first="interval type",
                   rule_of=rule_of, shown=lambda at, name: _range(
                       [c for c in at if c.coverage[name] is not None], name, benchmarks)),
    ]


def markdown(cells: list[StressCell], *, benchmarks: int, confidence_level: float,
             seconds: float, command: str) -> str:
    """The stress grid's page: per part its worlds, the rules it measures and per number of
    metrics the lowest and highest coverage per design; the low-ICC metrics of mixed worlds;
    the cells short of the band where reported; and every cell."""
    mc = monte_carlo_error(benchmarks, confidence_level)
    tolerance = 2 * mc
    sizes = sorted({c.base_per_metric for c in cells})
    lines = [
        "# Interval coverage in a stress world",
        "",
        (
            f"Written by `make coverage` (`{command}`, which also writes the summary the "
            f"package shows beside each interval), in {seconds:.0f} s. Each cell simulates "
            f"{benchmarks} studies (judge-corrected rates: {part_benchmarks('judge', benchmarks)}) "
            "of one world at one design "
            f"({' or '.join(str(m) for m in sorted({c.metrics for c in cells}))} metrics × "
            "base scenarios per metric × samples) and computes every interval with the "
            "package's own functions, the rules' withholding lowered to 2 base scenarios per "
            "metric (`pressurebench.stats.sweeps.stress` and `stress_curves` say how). Nominal "
            f"level {confidence_level:.0%}; Monte-Carlo standard error of a coverage near it "
            f"±{mc:.4f} at {benchmarks} studies; ✗ marks a range short of {LOW} by more than two "
            f"of them (±{tolerance:.4f}). \"not short from\": the smallest design from which no cell "
            "of any world at it or at any larger design is short of that; \"package\": what "
            "`pressurebench.stats.interval_rules` requires, never less. In a world that loses "
            "base scenarios a study counts at the design it ends with (its base scenarios with "
            "valid rows over its metrics, as the rules count them): \"planned\" is the design "
            "it was planned with, \"studies\" how many of them ended there, and each such cell "
            "is read with its own Monte-Carlo error (capitulation curves stay at the design "
            "planned, the larger). The [coverage "
            "grid](interval_coverage.md) measures the same intervals in the easy world; "
            "[intervals](intervals.md) explains the rules."
        ),
    ]
    for part in PARTS:
        of_part = [c for c in cells if c.part == part]
        if of_part:
            lines += _part_markdown(part, of_part, benchmarks)
    low_icc = mixed_low_icc(cells)
    if low_icc:
        lines += [
            "",
            "## Low-ICC metrics of a mixed study",
            "",
            (
                f"The highest coverage of the rate of a metric whose ICC is at most {LOW_ICC}, "
                f"in the worlds whose metrics also include one of ICC {HIGH_ICC} or more (at "
                "pass rates between 0.1 and 0.9), per design: an interval that borrows the "
                "clustered metric's variance covers these too often (too wide)."
            ),
            "",
            *table(["metrics", *(f"{k} per metric" for k in sizes)],
                   ([m, *(f"{low_icc[(m, k)]:.3f}" if (m, k) in low_icc else "none"
                          for k in sizes)] for m in sorted({c.metrics for c in cells}))),
        ]
    short = [(c, n) for c in cells for n in c.coverage
             if c.base_per_metric >= rule_of(n) and _short(c, n, benchmarks)]
    lines += [
        "",
        "## Reported cells short of the band",
        "",
        (f"Beyond two Monte-Carlo standard errors, among the cells the package reports (at or "
         f"above each type's rule): {len(short)}: "
         + listing(short, lambda c: f"in \"{c.world}\" at {c.metrics} metrics, "
                   f"k={c.base_per_metric} (planned {c.planned}), samples={c.samples}")
         + "."),
    ]
    for part in PARTS:
        of_part = [c for c in cells if c.part == part]
        if not of_part:
            continue
        statistics = PARTS[part][0]
        lines += [
            "",
            f"## Every cell: {PART_TITLES[part].lower()}",
            "",
            *table(["world", "metrics", "k", "planned", "studies", "samples", *statistics],
                   ([c.world, c.metrics, c.base_per_metric, c.planned,
                     c.benchmarks or part_benchmarks(c.part, benchmarks), c.samples,
                     *(_shown(c, n) for n in statistics)] for c in of_part)),
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_sweep_options(parser, DEFAULTS)
    parser.add_argument("--part", action="append", choices=list(PARTS),
                        help="only these parts (repeatable)")
    parser.add_argument("--world", action="append", help="only these worlds (repeatable)")
    parser.add_argument("--cache", type=Path,
                        help="keep each finished cell here and reuse it: an interrupted run "
                        "resumes, and runs of parts can share the folder")
    parser.add_argument("--out", help="write the page here (default: print it)")
    parser.add_argument("--coverage-json", help="also write the package's copy of the summary")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    cells = stress_grid(asked_sweep(args), parts=tuple(args.part or PARTS),
                        worlds=tuple(args.world) if args.world else None, cache=args.cache)
    command = (f"python -m pressurebench.stats.sweeps stress --benchmarks {args.benchmarks} "
               f"--jobs {args.jobs} --out {args.out or '-'}"
               + (f" --coverage-json {args.coverage_json}" if args.coverage_json else ""))
    text = markdown(cells, benchmarks=args.benchmarks, confidence_level=args.confidence_level,
                    seconds=time.perf_counter() - start, command=command)
    write_page(text, args.out)
    if args.coverage_json:
        write_summary(coverage_table(cells, benchmarks=args.benchmarks,
                                     confidence_level=args.confidence_level), args.coverage_json)
