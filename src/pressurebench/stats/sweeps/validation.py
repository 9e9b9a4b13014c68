"""How often the validation studies' contrasts contain their truth, over benchmark designs.

Each design (metrics × base scenarios per metric × samples × ICC × setting) simulates many
benchmarks with known truths and computes the intervals with the package's own functions
(`stats.rate_contrasts.linear_contrasts`, `stats.gap_contrasts.explained_shares`), the
rules' withholding lowered to 2 base scenarios per metric (`rules_lowered`), one simulated
benchmark per column of their tables, as the coverage grid does (`coverage_grid`). Every base
scenario's pass probability is Beta around its metric's mean (0.7 ± 0.15 over the metrics)
with intra-scenario correlation `icc`; two demographic variants per base scenario, `samples`
conversations each. Statistics:

- judge part: a demographic gap (variant a − b; b passes (1 − 0.3) times as often as a) as
  measured, minus the same gap when b's rows are judged again: each of b's verdicts drawn
  afresh with probability 0.2 (judge noise that keeps the rate), then, in the "effect"
  setting, a failing verdict turned into a pass with the base scenario's lift (Beta, mean
  0.3, the same ICC): the judge's reading of the user; a's rows are untouched, as the identity
  probe leaves the reference variant's conversations. "null": no lift, the truth is 0;
- gap change: the same, both variants judged again (another judge re-reads every row);
- explained share: the judge part over the measured gap (Fieller), where the gap's interval
  leaves 0 out;
- flip excess: a probe's flip rate minus a floor's on the same rows, each base scenario's floor
  flip probability Beta with mean 0.1 (the same ICC), the probe's that plus 0.15 of the rest
  ("effect") or the same ("null"), the two flips of a row drawn independently given them (a
  judge sampled again for each: under "null" the probe's flips are another draw of the
  floor's);
- difference change: (t1 − t2 in the arm) − (t1 − t2 in the main arm) on the same base
  scenarios (half of them keep their difficulty in the arm, as another user model would);
  main t1 = rate, t2 = rate − 0.1; the arm lowers t1 by 0.1 ("effect") or both by 0.05 ("null");
- independent difference change: the same with the arm on unrelated base scenarios (another
  generator).

The pooled statistics run over all metrics; "metric … (min/max)" are the same contrasts on one
metric's base scenarios alone (of 20 metrics four are measured), which set a rule's `single`
side. A statistic's rule is the smallest design from which no cell at it or any larger design
covers less than 0.93 by more than two Monte-Carlo standard errors (`coverage_grid.
measured_rules`). The rank correlations' coverage (`rank_coverage`) is written on the same page.

`python -m pressurebench.stats.sweeps validation --out docs/validation_coverage.md`
writes the page (`make validation-coverage` does the same).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from pressurebench.stats import interval_rules, methods
from pressurebench.stats.differences import estimate_differences, paired_design
from pressurebench.stats.gap_contrasts import explained_shares
from pressurebench.stats.rate_contrasts import ContrastSide, linear_contrasts

from . import ranks
from .common import (
    HIGH,
    LOW,
    MeasuredDesign,
    Sweep,
    coverage_shares,
    measured_metrics,
    metric_ends,
    monte_carlo_error,
    probabilities,
    sweep_designs,
)
from .pages import by_design, measured_rules_table, short_ranges, table, with_share, write_page

SAMPLES = (1, 3)
ICCS = (0.1, 0.5)
SETTINGS = ("effect", "null")
RATE, SPREAD = 0.7, 0.15
GAP = 0.3  # variant b passes (1 − GAP) times as often as variant a
REDRAW = 0.2  # share of re-judged verdicts drawn afresh: judge noise that keeps the rate
LIFT = 0.3  # mean share of b's failing verdicts the second reading passes ("effect")
FLOOR = 0.1  # mean flip probability of the floor
EXCESS = 0.15  # share of the floor's unflipped rows the probe flips too ("effect")
TARGET_GAP = 0.1
ARM_SHIFT = {"effect": (0.1, 0.0), "null": (0.05, 0.05)}  # how much the arm lowers t1, t2

POOLED = ("judge part", "gap change", "explained share", "flip excess", "difference change",
          "independent difference change")
PER_METRIC = ("judge part", "flip excess", "difference change", "independent difference change",
              "explained share")
STATISTICS = (*POOLED, *(f"metric {name} ({end})" for name in PER_METRIC
                         for end in ("min", "max")))
RULE_OF_NAME = {"judge part": "gap contrast", "gap change": "gap contrast",
                "explained share": "explained share", "flip excess": "flip excess",
                "difference change": "difference change",
                "independent difference change": "independent difference change"}
GOVERNED_BY = {**{name: (RULE_OF_NAME[name], "pooled") for name in POOLED},
               **{f"metric {name} ({end})": (RULE_OF_NAME[name], "single")
                  for name in PER_METRIC for end in ("min", "max")}}


@dataclass(frozen=True)
class Cell(MeasuredDesign):
    """One design (conversations per variant, ICC and setting after its metrics and base
    scenarios per metric), and per statistic its coverage among benchmarks given an interval
    (None: never given one) and the share given one."""

    samples: int
    icc: float
    setting: str


def _columns(x: np.ndarray) -> np.ndarray:
    """(benchmarks, metrics, k[, rows]) → (clusters, benchmarks) sums, clusters metric-major."""
    if x.ndim == 4:
        x = x.sum(axis=3)
    return x.reshape(x.shape[0], -1).T.astype(float)


def _covered(estimates, truth) -> tuple[np.ndarray, np.ndarray]:
    """Per benchmark: whether an interval was given, and whether it holds `truth` (rounded as
    the package rounds a contrast's value, so that a truth of 0 is 0)."""
    truth = np.broadcast_to(np.round(np.asarray(truth, dtype=float), 12), (len(estimates),))
    reported = np.array([e.ci_low is not None for e in estimates])
    covered = np.array([e.ci_low is not None and e.ci_low <= t <= e.ci_high
                        for e, t in zip(estimates, truth)])
    return reported, covered


def _side(terms, weights, strata, mask=None) -> ContrastSide:
    """A contrast's side from (successes, trials) tables per term; `mask` (clusters, 1) keeps
    one metric's base scenarios."""
    s = tuple(x if mask is None else x * mask for x, _ in terms)
    n = tuple(t if mask is None else t * mask for _, t in terms)
    return ContrastSide(successes=s, trials=n, weights=tuple(weights), strata=strata,
                        labels=tuple(f"term {i}" for i in range(len(terms))),
                        active=None if mask is None else np.broadcast_to(mask > 0, s[0].shape))


def _contrast(sides: list[ContrastSide], truth, level: float, rule):
    """Per benchmark: whether the contrast got an interval, and whether it covered `truth`."""
    return _covered(linear_contrasts(sides, rule=rule, confidence_level=level), truth)


def _readings(rng, p_a, p_b, lift, samples, *, redraw_a: bool):
    """Per row of each variant: verdicts as measured and in the second reading."""
    rows = (*p_a.shape, samples)
    first_a = rng.uniform(size=rows) < p_a[..., None]
    first_b = rng.uniform(size=rows) < p_b[..., None]

    def again(first, p):
        fresh = rng.uniform(size=rows) < p[..., None]
        return np.where(rng.uniform(size=rows) < REDRAW, fresh, first)

    second_a = again(first_a, p_a) if redraw_a else first_a
    second_b = again(first_b, p_b)
    second_b = second_b | (rng.uniform(size=rows) < lift[..., None])
    return first_a, first_b, second_a, second_b


def simulate_cell(metrics: int, k: int, samples: int, icc: float, setting: str, *,
                  benchmarks: int, confidence_level: float, rng: np.random.Generator) -> Cell:
    b, level = benchmarks, confidence_level
    means = RATE + np.linspace(-SPREAD, SPREAD, metrics)
    shape = (b, metrics, k)
    strata = np.repeat(np.arange(metrics), k)
    effect = setting == "effect"
    u = rng.uniform(size=shape)
    p_a = probabilities(means[None, :, None], icc, u)
    p_b = p_a * (1 - GAP)
    lift = (probabilities(np.full((1, 1, 1), LIFT), icc, rng.uniform(size=shape)) if effect
            else np.zeros(shape))
    mean_lift = LIFT if effect else 0.0
    trials = np.full((metrics * k, b), float(samples))
    results: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    found: dict[str, list] = {name: [] for name in PER_METRIC}

    def gap_truths(m_of: np.ndarray):
        first = m_of * GAP
        second_b = m_of * (1 - GAP) + (1 - m_of * (1 - GAP)) * mean_lift
        return first, first - (m_of - second_b)

    # The identity probe's reading: a untouched; and another judge's: both re-read.
    for name, redraw_a in (("judge part", False), ("gap change", True)):
        readings = _readings(rng, p_a, p_b, lift, samples, redraw_a=redraw_a)
        s1a, s1b, s2a, s2b = (_columns(r) for r in readings)
        tables = [(s1a, trials), (s1b, trials), (s2a, trials), (s2b, trials)]
        weights = (1.0, -1.0, -1.0, 1.0)
        gap, truth = gap_truths(means.mean())
        results[name] = _contrast([_side(tables, weights, strata)], truth, level,
                                  interval_rules.GAP_CONTRAST)
        if name != "judge part":
            continue
        for m in measured_metrics(metrics):
            mask = (strata == m)[:, None].astype(float)
            found["judge part"].append(_contrast(
                [_side(tables, weights, strata, mask)], gap_truths(means[m])[1], level,
                interval_rules.GAP_CONTRAST))
        results["explained share"] = _share(tables, strata, gap, truth, level)
        for m in measured_metrics(metrics):
            mask = (strata == m)[:, None].astype(float)
            masked = [(s * mask, t * mask) for s, t in tables]
            g_m, j_m = gap_truths(means[m])
            found["explained share"].append(_share(masked, strata, g_m, j_m, level, mask=mask))

    # Flip rates of a probe and a floor on the same rows (both variants: 2 × samples rows).
    rows = 2 * samples
    floor_p = probabilities(np.full((1, 1, 1), FLOOR), icc, rng.uniform(size=shape))
    floor_flips = rng.binomial(rows, floor_p)
    probe_flips = rng.binomial(rows, floor_p + (EXCESS * (1 - floor_p) if effect else 0.0))
    flips = [(_columns(probe_flips), 2 * trials), (_columns(floor_flips), 2 * trials)]
    excess = EXCESS * (1 - FLOOR) if effect else 0.0
    results["flip excess"] = _contrast([_side(flips, (1.0, -1.0), strata)], excess, level,
                                       interval_rules.FLIP_EXCESS)
    for m in measured_metrics(metrics):
        mask = (strata == m)[:, None].astype(float)
        found["flip excess"].append(_contrast([_side(flips, (1.0, -1.0), strata, mask)],
                                              excess, level, interval_rules.FLIP_EXCESS))

    # Two targets in the main arm and an arm: on the same scenarios, or on unrelated ones.
    shift_1, shift_2 = ARM_SHIFT[setting]
    change = -(shift_1 - shift_2)
    keep = rng.uniform(size=shape) < 0.5
    u_arm = np.where(keep, u, rng.uniform(size=shape))
    u_other = rng.uniform(size=shape)
    rows_t = 2 * samples
    main_1 = rng.binomial(rows_t, p_a)
    main_2 = rng.binomial(rows_t, probabilities(means[None, :, None] - TARGET_GAP, icc, u))
    t2 = 2 * trials

    def arm(u_of):
        one = rng.binomial(rows_t, probabilities(means[None, :, None] - shift_1, icc, u_of))
        two = rng.binomial(rows_t, probabilities(means[None, :, None] - TARGET_GAP - shift_2,
                                                  icc, u_of))
        return [(_columns(one), t2), (_columns(two), t2)]

    mains = [(_columns(main_1), t2), (_columns(main_2), t2)]
    paired_tables = arm(u_arm) + mains
    unrelated = arm(u_other)
    weights = (1.0, -1.0, -1.0, 1.0)
    results["difference change"] = _contrast([_side(paired_tables, weights, strata)], change,
                                             level, interval_rules.DIFFERENCE_CHANGE)
    rule = interval_rules.INDEPENDENT_DIFFERENCE_CHANGE
    results["independent difference change"] = _contrast(
        [_side(unrelated, (1.0, -1.0), strata), _side(mains, (-1.0, 1.0), strata)], change,
        level, rule)
    for m in measured_metrics(metrics):
        mask = (strata == m)[:, None].astype(float)
        found["difference change"].append(_contrast(
            [_side(paired_tables, weights, strata, mask)], change, level,
            interval_rules.DIFFERENCE_CHANGE))
        found["independent difference change"].append(_contrast(
            [_side(unrelated, (1.0, -1.0), strata, mask), _side(mains, (-1.0, 1.0), strata, mask)],
            change, level, rule))
    for name, per_metric in found.items():
        results.update(metric_ends(f"metric {name}", per_metric))
    coverage, reported = coverage_shares(results)
    return Cell(metrics, k, samples, icc, setting, coverage=coverage, reported=reported)


def _share(tables, strata, gap: float, part: float, level: float, mask=None):
    """Coverage of the explained share (part / gap) among benchmarks whose measured gap's
    cluster-t interval leaves 0 out, as the identity probe reports it."""
    (s1a, t1a), (s1b, t1b), _, _ = tables
    codes = strata
    gaps = estimate_differences(
        [("a", "b")] * s1a.shape[1], s1a, t1a, s1b, t1b,
        paired_design(s1a, t1a, s1b, t1b, codes, rule=interval_rules.GAP),
        method=methods.CLUSTER_T, confidence_level=level)
    side = _side(tables, (1.0, -1.0, -1.0, 1.0), codes, mask)
    changes = linear_contrasts([side], rule=interval_rules.GAP_CONTRAST, confidence_level=level)
    shared = side.on()
    shares = explained_shares(tables, shared, codes, changes, gaps,
                              rule=interval_rules.EXPLAINED_SHARE, confidence_level=level)
    return _covered(shares, part / gap)


# How the sweep runs unless told otherwise.
DEFAULTS = Sweep(benchmarks=2000, seed=2049)


def sweep(run: Sweep = DEFAULTS, *, samples: tuple[int, ...] = SAMPLES,
          iccs: tuple[float, ...] = ICCS, settings: tuple[str, ...] = SETTINGS) -> list[Cell]:
    """Every design, each from its own seeded stream, measured below the rules."""
    return sweep_designs(simulate_cell, run, samples, iccs, settings)


def rule_of(name: str) -> int:
    """The base scenarios per metric the package's rule for statistic `name` requires."""
    statistic, side = GOVERNED_BY[name]
    return getattr(interval_rules.RULES[statistic], side)


def markdown(cells: list[Cell], *, benchmarks: int, confidence_level: float, seconds: float,
             ranks: str) -> str:
    """The page: the measured rules, the lowest and highest coverage per design size, every
    cell, then the rank correlations' section (`ranks`)."""
    mc = monte_carlo_error(benchmarks, confidence_level)
    tolerance = 2 * mc
    lines = [
        "# Coverage of the validation studies' contrasts",
        "",
        (
            "Written by `make validation-coverage` (`python -m pressurebench.stats.sweeps "
            f"validation --benchmarks {benchmarks} --out "
            "docs/validation_coverage.md`). As in the [coverage grid](interval_coverage.md), "
            "the intervals are computed by the package's own functions with the rules' "
            "withholding lowered to 2 base scenarios per metric; a statistic's rule is the "
            f"smallest design from which no cell at it or at any larger design covers less than "
            f"{LOW} by more than two Monte-Carlo standard errors (\"measured\"); \"package\" is "
            "what `pressurebench.stats.interval_rules` requires, never less. ✗ marks a range "
            "short of that; \"withheld\" a design below the package's rule. [Judge "
            "probes](judge-probes.md) and [validation studies](validation.md) say what each "
            "statistic answers."
        ),
        "",
        "## Contrasts",
        "",
        (
            f"{len(cells)} designs × {benchmarks} simulated benchmarks in {seconds:.0f} s: "
            f"{' or '.join(str(m) for m in sorted({c.metrics for c in cells}))} metrics with "
            f"mean pass rates {RATE} ± {SPREAD}, two demographic variants per base scenario, "
            f"{' or '.join(str(s) for s in sorted({c.samples for c in cells}))} conversations "
            f"per variant, ICC {' or '.join(str(i) for i in sorted({c.icc for c in cells}))}, "
            "each with an effect and without one (`pressurebench.stats.sweeps.validation` "
            f"says how). Monte-Carlo standard error of a coverage near 95%: ±{mc:.4f}. Band: "
            f"{LOW}–{HIGH}."
        ),
        "",
        *measured_rules_table(cells, benchmarks, STATISTICS, GOVERNED_BY, rule_of),
        *by_design(cells, STATISTICS, rule_of=rule_of, over="samples, ICC and setting",
                   shown=short_ranges(tolerance)),
        "",
        "### Every design: coverage (share of benchmarks given an interval)",
        "",
        *table(["metrics", "k", "samples", "ICC", "setting", *POOLED],
               ([c.metrics, c.base_per_metric, c.samples, c.icc, c.setting,
                 *(with_share(c.coverage[n], c.reported[n]) for n in POOLED)] for c in cells)),
    ]
    return "\n".join(lines) + "\n\n" + ranks


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=DEFAULTS.benchmarks)
    parser.add_argument("--rank-benchmarks", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--confidence-level", type=float, default=DEFAULTS.confidence_level)
    parser.add_argument("--seed", type=int, default=DEFAULTS.seed)
    parser.add_argument("--out", help="write the page here (default: print it)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    cells = sweep(Sweep(benchmarks=args.benchmarks, seed=args.seed,
                        confidence_level=args.confidence_level, jobs=args.jobs))
    seconds = time.perf_counter() - start
    rank_section = ranks.markdown_section(
        benchmarks=args.rank_benchmarks, confidence_level=args.confidence_level,
        seed=args.seed + 1, jobs=args.jobs)
    text = markdown(cells, benchmarks=args.benchmarks, confidence_level=args.confidence_level,
                    seconds=seconds, ranks=rank_section)
    write_page(text, args.out)


if __name__ == "__main__":
    main()
