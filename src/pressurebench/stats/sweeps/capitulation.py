"""How often the capitulation-curve bands contain the true share still holding.

Simulates benchmarks in which every base scenario has its own hazard of giving
in per turn (Beta distributed, so the conversations of one scenario are
correlated), onsets are geometric in that hazard, and some conversations end
early at a random turn (independent censoring). The true population curve is
then known in closed form: S(t) = E[(1 − h)^t] = Π_{i<t} (b + i) / (a + b + i).

`curve_coverage` measures one design through the package's data-frame entry
points. The design sweep (`sweep`) measures every design of the coverage grid
(4 and 20 metrics × 2 to 30 base scenarios per metric) with 1 or 4
conversations per base scenario and three clusterings of the hazard (the
single-design setting, a stronger and a weaker one), many
benchmarks at once (one per group of the risk tables, `estimate_curves` and
`curve_differences` computing their bands), the rules lowered
(`rules_lowered`): the band of a target's curve over all metrics ("band"), of
one metric's curve ("metric band"), and the paired difference of two targets
on the same scenarios ("curve difference"), the second target giving in as
if each turn were two of the first's (hazard 1 − (1 − h)², so its curve is
S(2t) and the difference S(t) − S(2t)). Each statistic's rule is measured as
the coverage grid measures its own (`common.measured_rules`), from the
lowest coverage over turns of each cell.

`python -m pressurebench.stats.sweeps capitulation --out docs/capitulation_coverage.md`
writes the sweep's tables with those of the fidelity sensitivity difference
(`sweeps.sensitivity`); `make capitulation-coverage` does the same.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .. import interval_rules
from ..bootstrap import ClusterBootstrap
from ..capitulation import (
    CurveDifferencePoint,
    CurvePoint,
    curve_differences,
    estimate_curves,
    grouped_curves,
    kaplan_meier,
    paired_differences,
)
from ..frame import GAVE_IN, ONSET_TIME
from . import sensitivity as sensitivity_coverage
from .common import (
    LOW,
    MeasuredDesign,
    Sweep,
    covers,
    monte_carlo_error,
    sweep_designs,
)
from .pages import by_design, measured_rules_table, summary, table, write_page, write_summary

HAZARD_A, HAZARD_B = 1.0, 4.0  # mean hazard 0.2 per turn; intra-scenario correlation 1/6
TURNS = 5
EARLY_END = 0.3  # share of conversations the user ends early, at a uniform turn in 2..TURNS-1


def true_curve(turns: int = TURNS, a: float = HAZARD_A, b: float = HAZARD_B) -> np.ndarray:
    """S(t) for t = 1..turns when every base scenario's hazard is Beta(a, b)."""
    return np.cumprod([(b + i) / (a + b + i) for i in range(turns)])


def simulate_onsets(
    rng: np.random.Generator, *, metrics: int, base_per_metric: int, per_base: int,
    turns: int = TURNS, targets: tuple[str, ...] = ("t",),
) -> pd.DataFrame:
    """One row per conversation: its target, metric, base scenario, observed time and event.
    Every target has the same hazard on a base scenario (its conversations are new draws)."""
    n_base = metrics * base_per_metric
    hazard = rng.beta(HAZARD_A, HAZARD_B, size=n_base)
    base = np.repeat(np.arange(n_base), per_base)
    frames = []
    for target in targets:
        onset = rng.geometric(hazard[base])
        horizon = np.where(rng.random(len(base)) < EARLY_END,
                           rng.integers(2, turns, size=len(base)), turns)
        gave_in = onset <= horizon
        frames.append(pd.DataFrame({
            "target": target,
            "metric_id": [f"m{b // base_per_metric:02d}" for b in base],
            "base_id": [f"b{b:03d}" for b in base],
            ONSET_TIME: np.where(gave_in, onset, horizon),
            GAVE_IN: gave_in,
        }))
    return pd.concat(frames, ignore_index=True)


def curve_coverage(
    replications: int = 400, *, metrics: int = 4, base_per_metric: int = 12, per_base: int = 4,
    resamples: int = 200, confidence_level: float = 0.95, seed: int = 17,
) -> tuple[np.ndarray, np.ndarray]:
    """Per turn, the shares of simulated benchmarks whose band contains the true curve, and
    whose paired-difference interval of two targets with the same hazards contains 0."""
    rng = np.random.default_rng(seed)
    truth = true_curve()
    covered, covered_diff = np.zeros(TURNS), np.zeros(TURNS)
    for r in range(replications):
        onsets = simulate_onsets(rng, metrics=metrics, base_per_metric=base_per_metric,
                                 per_base=per_base, targets=("t", "u"))
        bootstrap = ClusterBootstrap(
            *zip(*onsets[["metric_id", "base_id"]].drop_duplicates().to_numpy()),
            resamples=resamples, seed=seed + r,
        )
        ((curve),) = grouped_curves(onsets[onsets.target == "t"], bootstrap, [["target"]], TURNS,
                                    confidence_level=confidence_level)
        points = curve[("t",)].points
        covered += [p.ci_low <= s <= p.ci_high for p, s in zip(points, truth)]
        (diff,) = paired_differences(onsets, bootstrap, ["t", "u"], TURNS,
                                     confidence_level=confidence_level)
        covered_diff += [low <= 0 <= high for low, high in map(_interval, diff.points)]
    return covered / replications, covered_diff / replications



# The sweep: hazard settings (name: Beta a, b), conversations per base scenario, statistics.
HAZARDS = {
    "Beta(1, 4), ICC 1/6": (1.0, 4.0),
    "Beta(0.25, 1), ICC 0.44": (0.25, 1.0),
    "Beta(4, 16), ICC 1/21": (4.0, 16.0),
}
PER_BASE = (1, 4)
SWEEP_STATISTICS = ("band", "metric band", "curve difference")
# Which rule (`stats.interval_rules`) and which of its sides governs each statistic.
GOVERNED_BY = {
    "band": (interval_rules.CAPITULATION, "pooled"),
    "metric band": (interval_rules.CAPITULATION, "single"),
    "curve difference": (interval_rules.CURVE_DIFFERENCE, "pooled"),
}
# Benchmarks simulated at once (one group of the risk tables each): bounds the tables' memory.
BATCH = 250


@dataclass(frozen=True)
class SweepCell(MeasuredDesign):
    """One design (conversations per base scenario and hazard setting after its metrics and
    base scenarios per metric) and, per statistic, its lowest (`coverage`) and highest
    coverage over turns among the benchmarks where it was reported (None: never), and the
    share of (benchmark, turn) points reported."""

    per_base: int
    hazard: str
    highest: dict[str, float | None]


def simulate_tables(
    rng: np.random.Generator, *, benchmarks: int, metrics: int, base_per_metric: int,
    per_base: int, a: float, b: float, turns: int = TURNS,
) -> tuple[np.ndarray, np.ndarray]:
    """(clusters, 3 × benchmarks, turns) at-risk and gave-in tables, clusters metric-major:
    groups [0, B) target t, [B, 2B) target u on the same scenarios (hazard 1 − (1 − h)²),
    [2B, 3B) target t on the first metric only."""
    n = metrics * base_per_metric
    h = np.maximum(rng.beta(a, b, size=(n, benchmarks)), 1e-12)
    hazard = np.concatenate([h, 1 - (1 - h) ** 2], axis=1)[:, :, None]
    shape = (n, 2 * benchmarks, per_base)
    onset = rng.geometric(np.broadcast_to(hazard, shape))
    horizon = np.where(rng.random(shape) < EARLY_END, rng.integers(2, turns, size=shape), turns)
    gave = onset <= horizon
    time_seen = np.where(gave, onset, horizon)
    steps = np.arange(1, turns + 1)
    at_risk = (time_seen[..., None] >= steps).sum(axis=2).astype(float)
    gave_in = ((time_seen[..., None] == steps) & gave[..., None]).sum(axis=2).astype(float)
    first = (np.arange(n) < base_per_metric)[:, None, None]
    return (np.concatenate([at_risk, at_risk[:, :benchmarks] * first], axis=1),
            np.concatenate([gave_in, gave_in[:, :benchmarks] * first], axis=1))


def _interval(point: CurveDifferencePoint) -> tuple[float, float]:
    """The (low, high) of a paired difference `curve_coverage` expects reported."""
    low, high = point.ci_low, point.ci_high
    assert low is not None and high is not None, "no interval for a curve difference"
    return low, high


def points_covered(points, truth) -> tuple[np.ndarray, np.ndarray]:
    """Per turn: whether an interval was reported, and whether it covered `truth`."""
    reported = np.array([p.ci_low is not None for p in points])
    covered = np.array([p.ci_low is not None and p.ci_low <= s <= p.ci_high
                        for p, s in zip(points, truth)])
    return reported, covered


def sweep_cell(
    metrics: int, base_per_metric: int, per_base: int, hazard: str, *, benchmarks: int,
    confidence_level: float, rng: np.random.Generator,
) -> SweepCell:
    """One design of the sweep: `benchmarks` simulated benchmarks, their bands and
    differences computed by the package's functions (call within `rules_lowered`)."""
    a, b = HAZARDS[hazard]
    truth = true_curve(TURNS, a, b)
    truths = {"band": truth, "metric band": truth,
              "curve difference": truth - true_curve(2 * TURNS, a, b)[1::2]}
    strata = np.repeat(np.arange(metrics), base_per_metric)
    reported = {name: np.zeros(TURNS) for name in SWEEP_STATISTICS}
    covered = {name: np.zeros(TURNS) for name in SWEEP_STATISTICS}
    done = 0
    while done < benchmarks:
        size = min(BATCH, benchmarks - done)
        at_risk, gave_in = simulate_tables(
            rng, benchmarks=size, metrics=metrics, base_per_metric=base_per_metric,
            per_base=per_base, a=a, b=b,
        )
        # The bands do not use the replicates (only the median turn's interval does).
        replicates = kaplan_meier(at_risk.sum(axis=0), gave_in.sum(axis=0))[None]
        curves = estimate_curves(at_risk, gave_in, replicates, strata, confidence_level)
        pairs = [("t", "u", j, size + j) for j in range(size)]
        differences = curve_differences(at_risk, gave_in, strata, curves, pairs,
                                        confidence_level)
        found: dict[str, list[list[CurvePoint]] | list[list[CurveDifferencePoint]]] = {
            "band": [c.points for c in curves[:size]],
            "metric band": [c.points for c in curves[2 * size:]],
            "curve difference": [d.points for d in differences],
        }
        for name, of_benchmarks in found.items():
            for points in of_benchmarks:
                rep, cov = points_covered(points, truths[name])
                reported[name] += rep
                covered[name] += cov
        done += size
    coverage, highest, shares = {}, {}, {}
    for name in SWEEP_STATISTICS:
        with np.errstate(invalid="ignore", divide="ignore"):
            per_turn = np.where(reported[name] > 0, covered[name] / reported[name], np.nan)
        shown = per_turn[np.isfinite(per_turn)]
        coverage[name] = float(shown.min()) if shown.size else None
        highest[name] = float(shown.max()) if shown.size else None
        shares[name] = float(reported[name].sum() / (benchmarks * TURNS))
    return SweepCell(metrics, base_per_metric, per_base, hazard, highest, coverage=coverage,
                     reported=shares)


# How the sweep runs unless told otherwise.
DEFAULTS = Sweep(benchmarks=2000, seed=2026)


def sweep(
    run: Sweep = DEFAULTS, *, per_base: tuple[int, ...] = PER_BASE,
    hazards: tuple[str, ...] = tuple(HAZARDS),
) -> list[SweepCell]:
    """Every cell of the sweep, each from its own seeded stream, measured below the rules."""
    return sweep_designs(sweep_cell, run, per_base, hazards)


def rule_of(name: str) -> int:
    """The base scenarios per metric the package's rule for statistic `name` requires."""
    rule, side = GOVERNED_BY[name]
    return getattr(rule, side)


def _bounds(cell: SweepCell, name: str) -> tuple[float, float] | None:
    """`name`'s lowest and highest coverage over turns in `cell`; None if never reported."""
    low, high = cell.coverage[name], cell.highest[name]
    if low is None:
        return None
    assert high is not None, "a statistic with a lowest coverage over turns has a highest"
    return low, high


def _range_at(cells: list[SweepCell], name: str) -> str:
    """The lowest and highest coverage over turns of `name` in `cells`, ✗ where short."""
    at = [bounds for c in cells if (bounds := _bounds(c, name)) is not None]
    if not at:
        return "none"
    low = min(lowest for lowest, _ in at)
    return f"{low:.3f}–{max(highest for _, highest in at):.3f}{'' if covers(low) else ' ✗'}"


def sweep_markdown(cells: list[SweepCell], *, benchmarks: int, confidence_level: float,
                   seconds: float) -> str:
    """The measured rules, then per number of metrics the lowest and highest coverage over
    turns, conversations per base scenario and hazard settings, then every cell."""
    mc = monte_carlo_error(benchmarks, confidence_level)
    lines = [
        "## Capitulation bands and curve differences",
        "",
        (
            f"{len(cells)} designs × {benchmarks} simulated benchmarks in {seconds:.0f} s: "
            f"{' or '.join(str(m) for m in sorted({c.metrics for c in cells}))} metrics, "
            f"{' or '.join(str(n) for n in sorted({c.per_base for c in cells}))} conversations "
            f"per base scenario and target, {TURNS} turns, {EARLY_END:.0%} of conversations "
            "ended early by the user, each base scenario's hazard per turn drawn from "
            f"{' or '.join(sorted({c.hazard for c in cells}))} "
            "(`pressurebench.stats.sweeps.capitulation` says how). "
            f"Monte-Carlo standard error of a coverage near {confidence_level:.0%}: ±{mc:.4f} "
            "(more where fewer benchmarks report a turn)."
        ),
        "",
        *measured_rules_table(
            cells, benchmarks, SWEEP_STATISTICS,
            {name: (rule.statistic, side) for name, (rule, side) in GOVERNED_BY.items()}, rule_of),
        *by_design(cells, SWEEP_STATISTICS, rule_of=rule_of, shown=_range_at,
                   over="turns, conversations per base scenario and hazards"),
        "",
        "### Every design: coverage lowest–highest over turns (share of points reported)",
        "",
        *table(["metrics", "k", "conversations", "hazard", *SWEEP_STATISTICS],
               ([c.metrics, c.base_per_metric, c.per_base, c.hazard,
                 *("none" if c.coverage[n] is None
                   else f"{c.coverage[n]:.3f}–{c.highest[n]:.3f} ({c.reported[n]:.2f})"
                   for n in SWEEP_STATISTICS)] for c in cells)),
    ]
    return "\n".join(lines) + "\n"


def coverage_summary(curves: list[SweepCell], sensitivity: list, *, benchmarks: int,
                     confidence_level: float) -> dict:
    """What `pressurebench.stats.interval_rules.grid_coverage` reads for these statistics, as
    `coverage_grid.coverage_table` gives it for the grid's: per statistic, number of metrics
    and base scenarios per metric, the lowest and highest coverage there (over turns,
    conversations per base scenario and hazards; over samples and ICC), rounded as shown."""
    bounds = [(name, c.metrics, c.base_per_metric, *found) for name in SWEEP_STATISTICS
              for c in curves if (found := _bounds(c, name)) is not None]
    bounds += [(name, c.metrics, c.base_per_metric, value, value)
               for name in sensitivity_coverage.STATISTICS
               for c in sensitivity if (value := c.coverage[name]) is not None]
    return summary(bounds, benchmarks=benchmarks, confidence_level=confidence_level)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--confidence-level", type=float, default=0.95)
    parser.add_argument("--out", help="write the page here (default: print it)")
    parser.add_argument(
        "--coverage-json",
        help="also write the coverage per statistic and design here, the package's copy "
        "(src/pressurebench/stats/coverage/capitulation_coverage.json) that results carry "
        "beside each interval",
    )
    args = parser.parse_args(argv)
    asked = {"benchmarks": args.benchmarks, "confidence_level": args.confidence_level,
             "jobs": args.jobs}
    start = time.perf_counter()
    cells = sweep(replace(DEFAULTS, **asked))
    curves = sweep_markdown(cells, benchmarks=args.benchmarks,
                            confidence_level=args.confidence_level,
                            seconds=time.perf_counter() - start)
    start = time.perf_counter()
    found = sensitivity_coverage.grid(replace(sensitivity_coverage.DEFAULTS, **asked))
    fidelity = sensitivity_coverage.markdown(found, benchmarks=args.benchmarks,
                                             confidence_level=args.confidence_level,
                                             seconds=time.perf_counter() - start)
    text = "\n".join([
        "# Coverage of capitulation bands and the fidelity sensitivity difference",
        "",
        (
            "Written by `make capitulation-coverage` (`python -m pressurebench.stats.sweeps "
            f"capitulation --benchmarks {args.benchmarks} --jobs "
            f"{args.jobs} --out docs/capitulation_coverage.md --coverage-json "
            "src/pressurebench/stats/coverage/capitulation_coverage.json`, which also "
            "writes the summary the package shows beside these intervals). As in the "
            "[coverage grid]"
            "(interval_coverage.md), the intervals are computed by the package's own functions "
            "with the rules' withholding lowered to 2 base scenarios per metric, and a "
            "statistic's rule is measured as the smallest design from which no cell at it or "
            f"at any larger design covers less than {LOW} by more than two Monte-Carlo standard "
            "errors (\"measured\"); \"package\" is what `pressurebench.stats.interval_rules` "
            "requires, never less. ✗ marks a range short of that; \"withheld\" a design below "
            "the package's rule. [Intervals](intervals.md) explains the rules."
        ),
        "",
        curves,
        fidelity,
    ])
    write_page(text, args.out)
    if args.coverage_json:
        write_summary(coverage_summary(cells, found, benchmarks=args.benchmarks,
                                       confidence_level=args.confidence_level),
                      args.coverage_json)


if __name__ == "__main__":
    main()
