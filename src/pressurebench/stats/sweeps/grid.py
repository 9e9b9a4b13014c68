"""Coverage of every reported interval type over a grid of benchmark designs.

For each design (metrics × base scenarios per metric × samples ×
intra-scenario correlation × true rate) many benchmarks are simulated with
known truths, and the intervals the package reports are computed by its own
functions (`estimate_rates`, `estimate_differences` with `paired_design` and
`independent_design`, each with its statistic's rule and method), one
simulated benchmark per column of their tables. The rules' withholding is
lowered to 2 base scenarios per metric while measuring (`rules_lowered`), so
the grid shows the coverage below each rule too; a statistic's rule is the
smallest design from which every cell, at it and every larger design, covers
between 0.93 and 0.975 (`measured_rules`).

4 or 20 metrics, two demographic variants per base scenario (the values of one
axis), `samples` samples per variant. Each base scenario's pass probability
is Beta around its metric's mean with intra-scenario correlation `icc`
(concentration (1 − icc) / icc; icc 0 gives every scenario its metric's
mean). Interval types:

- overall: a target's pass rate over all metrics;
- demographic value: the rate of one demographic value (one variant of each base scenario)
  over all metrics;
- metric (min/max): each metric's rate, the lowest and highest coverage of the metrics
  (of 20 metrics, four are measured: the lowest and highest means and two between);
- positive: the rate over half of the metrics;
- target difference: two targets on the same scenarios, rates 0.1 apart;
- metric difference (min/max): the same per metric;
- demographic gap: variant A minus variant B, no true gap;
- metric gap (min/max): the same per metric;
- paired contrast: one target in two arms on the same scenarios (another
  simulated user), half of the scenarios keeping their difficulty, 0.05 apart;
- independent contrast: one target in two arms on unrelated scenarios
  (another generator), 0.05 apart.

A rule is set where no cell covers less than 0.93 beyond Monte-Carlo error
(`measured_rules`); cells covering more than 0.975 are conservative and
flagged in the tables.

`python -m pressurebench.stats.sweeps grid --out docs/interval_coverage.md --coverage-json
src/pressurebench/stats/coverage/interval_coverage.json` writes the tables and the package's
copy of the summary (`make coverage` does the same, with the stress grid beside it).
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import interval_rules, methods
from ..bootstrap import ClusterBootstrap
from ..cluster_t import degrees_of_freedom_scaled
from ..differences import estimate_differences, independent_design, paired_design
from ..interval_rules import rules_lowered
from ..rates import estimate_rates
from .common import (
    HIGH,
    LOW,
    MeasuredDesign,
    Sweep,
    add_sweep_options,
    asked_sweep,
    band_rules,
    columns,
    coverage_shares,
    covered,
    in_band,
    measured_metrics,
    measured_rules,
    metric_ends,
    monte_carlo_error,
    probabilities,
    seeded_runs,
)
from .pages import (
    by_design,
    coverage_range,
    listing,
    summary,
    table,
    write_page,
    write_summary,
)

SAMPLES = (1, 2, 5)
ICCS = (0.0, 0.1, 0.5)
# True rate of the target and the spread of its metrics' means around it.
RATES = ((0.7, 0.15), (0.85, 0.10))
# The designs whose coverage is measured again with narrower quantiles: where the grid finds
# intervals covering more than the band.
SENSITIVITY_METRICS = (4,)
SENSITIVITY_BASE_PER_METRIC = (3, 5)
TARGET_GAP = 0.1
ARM_GAP = 0.05
STATISTICS = (
    "overall",
    "demographic value",
    "metric (min)",
    "metric (max)",
    "positive",
    "target difference",
    "metric difference (min)",
    "metric difference (max)",
    "demographic gap",
    "metric gap (min)",
    "metric gap (max)",
    "paired contrast",
    "independent contrast",
)
# Which rule (`stats.interval_rules`) and which of its sides governs each interval type: per
# rule and side, the types it governs.
GOVERNED_BY = {
    name: (statistic, side)
    for statistic, side, names in (
        ("rate", "pooled", ("overall", "demographic value", "positive")),
        ("rate", "single", ("metric (min)", "metric (max)")),
        ("difference", "pooled", ("target difference", "paired contrast")),
        ("difference", "single", ("metric difference (min)", "metric difference (max)")),
        ("independent difference", "pooled", ("independent contrast",)),
        ("demographic gap", "pooled", ("demographic gap",)),
        ("demographic gap", "single", ("metric gap (min)", "metric gap (max)")),
    )
    for name in names
}


@dataclass(frozen=True)
class Cell(MeasuredDesign):
    """One design (samples per variant, ICC and true rate after its metrics and base scenarios
    per metric) and, per interval type, its coverage among benchmarks where it was reported."""

    samples: int
    icc: float
    rate: float


def _rate_coverage(strata_boot, successes, trials, truth, level):
    """Coverage of each benchmark's rate."""
    b = successes.shape[1]
    return covered(estimate_rates(strata_boot, successes, trials, np.zeros(b), level), truth)


def _difference_coverage(labels, s_a, t_a, s_b, t_b, design, truth, level, method):
    estimates = estimate_differences(
        labels, s_a, t_a, s_b, t_b, design, method=method, confidence_level=level
    )
    return covered(estimates, truth)


def _paired(s_a, t_a, s_b, t_b, strata, truth, level, *, gap=False):
    """Coverage of each benchmark's paired difference."""
    rule = interval_rules.GAP if gap else interval_rules.DIFFERENCE
    method = methods.CLUSTER_T if gap else methods.CLUSTER_T_MOVER
    design = paired_design(s_a, t_a, s_b, t_b, strata, rule=rule)
    labels = [("a", "b")] * s_a.shape[1]
    return _difference_coverage(labels, s_a, t_a, s_b, t_b, design, truth, level, method)


def simulate_cell(
    base_per_metric: int,
    samples: int,
    icc: float,
    rate: float,
    spread: float,
    *,
    benchmarks: int,
    confidence_level: float,
    rng: np.random.Generator,
    metrics: int = 4,
) -> Cell:
    k, b, n_metrics = base_per_metric, benchmarks, metrics
    means = rate + np.linspace(-spread, spread, n_metrics)
    shape = (b, n_metrics, k)
    u = rng.uniform(size=shape)
    p_a = probabilities(means[None, :, None], icc, u)
    p_b = probabilities(means[None, :, None] - TARGET_GAP, icc, u)
    keep = rng.uniform(size=shape) < 0.5
    p_user = probabilities(
        means[None, :, None] - ARM_GAP, icc, np.where(keep, u, rng.uniform(size=shape))
    )
    p_other = probabilities(means[None, :, None] - ARM_GAP, icc, rng.uniform(size=shape))

    variant_1 = rng.binomial(samples, p_a)
    variant_2 = rng.binomial(samples, p_a)
    s_a = columns(variant_1 + variant_2)
    t = np.full(s_a.shape, 2.0 * samples)
    s_b = columns(rng.binomial(2 * samples, p_b))
    s_user = columns(rng.binomial(2 * samples, p_user))
    s_other = columns(rng.binomial(2 * samples, p_other))
    g_1, g_2 = columns(variant_1), columns(variant_2)
    t_g = np.full(g_1.shape, float(samples))

    strata = np.repeat([f"m{m:03d}" for m in range(n_metrics)], k)
    clusters = [f"c{c}" for c in range(n_metrics * k)]
    design = ClusterBootstrap(strata, clusters, resamples=1)
    codes = design.strata_codes
    level = confidence_level
    results: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    results["overall"] = _rate_coverage(design, s_a, t, rate, level)
    results["demographic value"] = _rate_coverage(design, g_1, t_g, rate, level)

    per_metric, metric_differences, metric_gaps = [], [], []
    for m in measured_metrics(n_metrics):
        mask = (codes == m)[:, None]
        per_metric.append(_rate_coverage(design, s_a * mask, t * mask, means[m], level))
        metric_differences.append(
            _paired(s_a * mask, t * mask, s_b * mask, t * mask, codes, TARGET_GAP, level)
        )
        metric_gaps.append(
            _paired(g_1 * mask, t_g * mask, g_2 * mask, t_g * mask, codes, 0.0, level, gap=True)
        )
    for name, found in (("metric", per_metric), ("metric difference", metric_differences),
                        ("metric gap", metric_gaps)):
        results.update(metric_ends(name, found))

    positive = np.isin(codes, np.arange(0, n_metrics, 2))[:, None]
    results["positive"] = _rate_coverage(
        design, s_a * positive, t * positive, means[::2].mean(), level
    )
    results["target difference"] = _paired(s_a, t, s_b, t, codes, TARGET_GAP, level)
    results["demographic gap"] = _paired(g_1, t_g, g_2, t_g, codes, 0.0, level, gap=True)
    results["paired contrast"] = _paired(s_a, t, s_user, t, codes, ARM_GAP, level)
    results["independent contrast"] = _difference_coverage(
        [("a", "b")] * b,
        s_a,
        t,
        s_other,
        t,
        independent_design(s_a, t, codes, s_other, t, codes,
                           rule=interval_rules.INDEPENDENT_DIFFERENCE),
        ARM_GAP,
        level,
        methods.CLUSTER_T_WELCH_MOVER,
    )
    coverage, reported = coverage_shares(results)
    return Cell(n_metrics, k, samples, icc, rate, coverage=coverage, reported=reported)


# How the grid runs unless told otherwise.
DEFAULTS = Sweep(benchmarks=1000, seed=2025)


def coverage_grid(
    run: Sweep = DEFAULTS,
    *,
    samples: tuple[int, ...] = SAMPLES,
    iccs: tuple[float, ...] = ICCS,
    rates: tuple[tuple[float, float], ...] = RATES,
    df_factor: float = 1.0,
    only: frozenset[tuple[int, int]] | None = None,
    cache: Path | None = None,
) -> list[Cell]:
    """Every cell of the grid, each from its own seeded stream, measured below the rules
    (with `df_factor`, every t quantile on that many times its degrees of freedom; with
    `only`, just the cells of those (metrics, base scenarios per metric), on the same
    streams as in the whole grid)."""
    designs = [
        (m, k, s, icc, rate, spread, run.benchmarks, run.confidence_level, df_factor)
        for m, k, s, icc, (rate, spread) in itertools.product(
            run.metrics, run.base_per_metric, samples, iccs, rates
        )
    ]
    keep = None if only is None else (lambda design: (design[0], design[1]) in only)
    return seeded_runs(_cell, designs, seed=run.seed, jobs=run.jobs, keep=keep, cache=cache)


def _cell(task: tuple) -> Cell:
    """One cell from its own stream, the rules lowered (a picklable task for the workers)."""
    m, k, s, icc, rate, spread, benchmarks, confidence_level, df_factor, stream = task
    with rules_lowered(), degrees_of_freedom_scaled(df_factor):
        return simulate_cell(
            k, s, icc, rate, spread,
            benchmarks=benchmarks,
            confidence_level=confidence_level,
            rng=np.random.default_rng(stream),
            metrics=m,
        )


def rule_of(name: str) -> int:
    """The base scenarios per metric the package's rule for interval type `name` requires."""
    statistic, side = GOVERNED_BY[name]
    return getattr(interval_rules.RULES[statistic], side)


def failures(cells: list[Cell], tolerance: float = 0.0) -> list[tuple[Cell, str]]:
    """(cell, interval type) pairs the package reports (at or above the type's rule) with
    coverage outside [LOW, HIGH] by more than `tolerance`."""
    return [
        (cell, name)
        for cell in cells
        for name, value in cell.coverage.items()
        if cell.base_per_metric >= rule_of(name) and not in_band(value, tolerance)
    ]


def _reported(cell: Cell, name: str) -> float:
    """The coverage of a (cell, interval type) pair `failures` returned."""
    value = cell.coverage[name]
    assert value is not None, f"{name} gave no interval in a reported cell: no coverage to show"
    return value


def _range(values: list[float | None], tolerance: float) -> str:
    return coverage_range([v for v in values if v is not None],
                          lambda v: in_band(v, tolerance))


def _beyond(found: int | None) -> str | int:
    return "beyond the grid" if found is None else found


def markdown(
    cells: list[Cell],
    *,
    benchmarks: int,
    confidence_level: float,
    seconds: float,
    sensitivity: dict[float, list[Cell]] | None = None,
) -> str:
    """The rules, the summary per interval type and design size, the cells outside the band,
    how the small designs' coverage moves with the quantile (`sensitivity`), then every cell."""
    mc = monte_carlo_error(benchmarks, confidence_level)
    tolerance = 2 * mc
    metric_counts = sorted({c.metrics for c in cells})
    measured = measured_rules(cells, benchmarks, STATISTICS)
    in_band_from = band_rules(cells, benchmarks, STATISTICS)
    lines = [
        "# Interval coverage over benchmark designs",
        "",
        (
            "Written by `make coverage` (`python -m pressurebench.stats.sweeps grid "
            f"--benchmarks {benchmarks} --jobs 2{' --sensitivity' if sensitivity else ''} "
            "--out docs/interval_coverage.md "
            "--coverage-json src/pressurebench/stats/coverage/interval_coverage.json`, which also "
            "writes the summary the package shows beside each interval), "
            f"in {seconds:.0f} s. Each cell simulates {benchmarks} benchmarks of "
            f"{' or '.join(map(str, metric_counts))} metrics, two demographic variants per base "
            "scenario, and computes the intervals with the package's own functions, each with "
            "its statistic's method (`pressurebench.stats.sweeps.grid` says how), the rules' "
            "withholding lowered to 2 base scenarios per metric so that the designs below each "
            f"rule are measured too. Nominal level {confidence_level:.0%}; Monte-Carlo standard "
            f"error of a coverage near it ±{mc:.4f}. Band: {LOW}–{HIGH}; ✗ marks a range that "
            f"leaves it by more than two Monte-Carlo standard errors (±{tolerance:.4f}). "
            "docs/intervals.md explains the rules and methods."
        ),
        "",
        "## Rules: fewest base scenarios per metric for an interval",
        "",
        (
            f"\"not short from\": the smallest design from which no cell at it or at any larger "
            f"design covers less than {LOW} by more than two Monte-Carlo standard errors; "
            "\"package\": what `pressurebench.stats.interval_rules` requires, never less; "
            f"\"in band from\": the smallest design from which every cell covers within "
            f"{LOW}–{HIGH} up to the same error on either side (\"beyond the grid\": some cell "
            "of the largest design leaves it). Between the package's rule and \"in band from\" "
            f"an interval is reported and covers at least {LOW}, in some cells more than {HIGH}: "
            "wider than it needs to be, never narrower (the section on the quantile below says "
            "why)."
        ),
        "",
        *table(
            ["interval type", "rule", "not short from", "package", "in band from"],
            ([name, "{} ({})".format(*GOVERNED_BY[name]), _beyond(measured[name]),
              rule_of(name), _beyond(in_band_from[name])] for name in STATISTICS),
        ),
        *by_design(cells, STATISTICS, over="samples × ICC × rate", first="interval type",
                   level="##", rule_of=rule_of,
                   shown=lambda at, name: _range([c.coverage[name] for c in at], tolerance)),
    ]
    bad = failures(cells, tolerance)
    short = [(c, n) for c, n in bad if _reported(c, n) < LOW]
    wide = [(c, n) for c, n in bad if _reported(c, n) > HIGH]

    def listed(pairs: list[tuple[Cell, str]]) -> str:
        return listing(pairs, lambda c: f"at {c.metrics} metrics, k={c.base_per_metric}, "
                       f"samples={c.samples}, icc={c.icc}, rate={c.rate}")

    lines += [
        "",
        "## Reported cells outside the band",
        "",
        (f"Beyond two Monte-Carlo standard errors, among the cells the package reports (at or "
         f"above each type's rule). Short of {LOW}: {len(short)}: {listed(short)}."),
        "",
        f"Above {HIGH}: {len(wide)}: {listed(wide)}.",
    ]
    if sensitivity:
        lines += _sensitivity_markdown(sensitivity, tolerance)
    lines += [
        "",
        "## Every cell",
        "",
        *table(["metrics", "k", "samples", "ICC", "rate", *STATISTICS],
               ([c.metrics, c.base_per_metric, c.samples, c.icc, c.rate,
                 *("none" if c.coverage[n] is None else f"{c.coverage[n]:.3f}"
                   for n in STATISTICS)] for c in cells)),
    ]
    return "\n".join(lines) + "\n"


# How the sensitivity section names each factor on the degrees of freedom.
FACTOR_NAMES = {1.0: "t on the design's df (the package)", 2.0: "t on twice the df",
                math.inf: "normal quantile"}


def _sensitivity_markdown(sensitivity: dict[float, list[Cell]], tolerance: float) -> list[str]:
    """Per interval type and small design: the coverage range with each quantile."""
    factors = sorted(sensitivity)
    any_cells = sensitivity[factors[0]]
    designs = sorted({(c.metrics, c.base_per_metric) for c in any_cells})
    lines = [
        "",
        "## Would a narrower quantile bring the small designs into the band?",
        "",
        (
            "The same cells (samples × ICC × rate) at the small designs where some interval "
            "covers more than the band, each interval's t quantile replaced by one on twice its "
            "degrees of freedom, then by the normal quantile (`cluster_t."
            "degrees_of_freedom_scaled`). Where the range under every quantile is wider than the "
            f"band ({HIGH - LOW:.3f}), or the highest cell stays above {HIGH} while the lowest "
            f"falls below {LOW}, no single quantile puts every cell in the band: the excess "
            "comes from designs with few rows that go the other way (a metric near a rate of 1, "
            "or clustering strong enough that most base scenarios all pass), whose coverage "
            "moves in steps, not from the quantile. The package keeps the t quantile, which "
            f"keeps every cell at or above {LOW}."
        ),
        "",
        *table(["interval type", "design", *(FACTOR_NAMES[f] for f in factors)],
               ([name, f"{m} metrics × {k}",
                 *(_range([c.coverage[name] for c in sensitivity[f]
                           if c.metrics == m and c.base_per_metric == k], tolerance)
                   for f in factors)]
                for name in STATISTICS for m, k in designs)),
    ]
    return lines


def coverage_table(cells: list[Cell], *, benchmarks: int, confidence_level: float) -> dict:
    """What `pressurebench.stats.interval_rules.grid_coverage` reads: per interval type, number
    of metrics and base scenarios per metric, the lowest and highest coverage over samples ×
    ICC × rate, as in the markdown's summary tables (rounded as they are shown)."""
    return summary(((name, c.metrics, c.base_per_metric, value, value)
                    for c in cells for name in STATISTICS
                    if (value := c.coverage[name]) is not None),
                   benchmarks=benchmarks, confidence_level=confidence_level, names=STATISTICS)


def summary_from_markdown(text: str) -> dict[str, dict[str, dict[str, list[float]]]]:
    """The `coverage` part of `coverage_table`, recomputed from the markdown's "Every cell"
    table: how a test checks that the package's summary and the page come from one run."""
    lines = text[text.index("## Every cell"):].splitlines()
    header = next(line for line in lines if line.startswith("| metrics |"))
    names = [cell.strip() for cell in header.strip("|").split("|")][5:]
    ranges: dict[str, dict[str, dict[str, list[float]]]] = {name: {} for name in names}
    for line in lines[lines.index(header) + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        m, k, values = cells[0], cells[1], cells[5:]
        for name, value in zip(names, values):
            if value == "none":
                continue
            found = ranges[name].setdefault(m, {}).setdefault(k, [float(value), float(value)])
            found[0], found[1] = min(found[0], float(value)), max(found[1], float(value))
    return {name: by_m for name, by_m in ranges.items() if by_m}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_sweep_options(parser, DEFAULTS)
    parser.add_argument(
        "--sensitivity", action="store_true",
        help="also measure the small designs with narrower quantiles (a section of the page)",
    )
    parser.add_argument("--cache", type=Path,
                        help="keep each finished cell here and reuse it: an interrupted run "
                        "resumes (`common.seeded_runs`)")
    parser.add_argument("--out", help="write the markdown table here (default: print it)")
    parser.add_argument(
        "--coverage-json",
        help="also write the coverage per interval type and design here, the package's copy "
        "(src/pressurebench/stats/coverage/interval_coverage.json) that results carry beside each interval",
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    grid = asked_sweep(args)
    cells = coverage_grid(grid, cache=args.cache)
    sensitivity = None
    if args.sensitivity:
        only = frozenset(itertools.product(SENSITIVITY_METRICS, SENSITIVITY_BASE_PER_METRIC))
        sensitivity = {1.0: [c for c in cells if (c.metrics, c.base_per_metric) in only]}
        for factor in FACTOR_NAMES:
            if factor != 1.0:
                sensitivity[factor] = coverage_grid(grid, df_factor=factor, only=only,
                                                    cache=args.cache)
    text = markdown(
        cells,
        benchmarks=args.benchmarks,
        confidence_level=args.confidence_level,
        seconds=time.perf_counter() - start,
        sensitivity=sensitivity,
    )
    write_page(text, args.out)
    if args.coverage_json:
        write_summary(coverage_table(cells, benchmarks=args.benchmarks,
                                     confidence_level=args.confidence_level), args.coverage_json)


if __name__ == "__main__":
    main()
