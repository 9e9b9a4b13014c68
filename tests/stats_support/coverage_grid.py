"""Coverage of every reported interval type over a grid of benchmark designs.

For each design (base scenarios per metric × samples × intra-scenario
correlation × true rate) many benchmarks are simulated with known truths, and
the intervals the package reports are computed by its own functions
(`estimate_rates`, `estimate_differences` with `paired_design` and
`independent_design`), one simulated benchmark per column of their tables.
An interval type passes a design when it is withheld there (with a reason) or
covers the truth between 0.93 and 0.97 of the time.

Four metrics, two demographic variants per base scenario (the values of one
axis), `samples` samples per variant. Each base scenario's pass probability
is Beta around its metric's mean with intra-scenario correlation `icc`
(concentration (1 − icc) / icc; icc 0 gives every scenario its metric's
mean). Interval types:

- overall: a target's pass rate over all metrics;
- metric (min/max): each metric's rate, the lowest and highest coverage of the four;
- positive: the rate over two of the four metrics;
- target difference: two targets on the same scenarios, rates 0.1 apart;
- demographic gap: variant A minus variant B, no true gap;
- paired contrast: one target in two arms on the same scenarios (another
  simulated user), half of the scenarios keeping their difficulty, 0.05 apart;
- independent contrast: one target in two arms on unrelated scenarios
  (another generator), 0.05 apart.

`cd tests && python -m stats_support.coverage_grid --out ../docs/interval_coverage.md`
writes the table (`make coverage` does the same).
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import dataclass

import numpy as np
from scipy.stats import beta

from pressurebench.stats import methods
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.cluster_t import MIN_DEGREES_OF_FREEDOM
from pressurebench.stats.differences import (
    estimate_differences,
    independent_design,
    paired_design,
)
from pressurebench.stats.rates import estimate_rates

METRICS = 4
BASE_PER_METRIC = (1, 2, 3, 5, 8, 12, 20, 30)
SAMPLES = (1, 2, 3, 4, 5)
ICCS = (0.0, 0.1, 0.25, 0.5)
# True rate of the target and the spread of its metrics' means around it.
RATES = ((0.7, 0.15), (0.85, 0.10))
TARGET_GAP = 0.1
ARM_GAP = 0.05
LOW, HIGH = 0.93, 0.97
STATISTICS = (
    "overall",
    "metric (min)",
    "metric (max)",
    "positive",
    "target difference",
    "demographic gap",
    "paired contrast",
    "independent contrast",
)


@dataclass(frozen=True)
class Cell:
    """One design and, per interval type, its coverage among benchmarks where it was reported."""

    base_per_metric: int
    samples: int
    icc: float
    rate: float
    coverage: dict[str, float | None]  # None: never reported
    reported: dict[str, float]  # share of benchmarks with an interval


def _probabilities(means: np.ndarray, icc: float, u: np.ndarray) -> np.ndarray:
    if icc == 0:
        return np.broadcast_to(means, u.shape).copy()
    concentration = (1 - icc) / icc
    return beta.ppf(u, means * concentration, (1 - means) * concentration)


def _columns(x: np.ndarray) -> np.ndarray:
    """(benchmarks, metrics, k) → (clusters, benchmarks), clusters metric-major."""
    return x.reshape(x.shape[0], -1).T.astype(float)


def _rate_coverage(strata_boot, successes, trials, truth, level):
    estimates = estimate_rates(
        strata_boot, successes, trials, np.zeros(successes.shape[1]), level
    )
    return _covered(estimates, truth, "rate")


def _difference_coverage(labels, s_a, t_a, s_b, t_b, design, truth, level):
    estimates = estimate_differences(
        labels, s_a, t_a, s_b, t_b, design, method=methods.CLUSTER_T, confidence_level=level
    )
    return _covered(estimates, truth, "difference")


def _covered(estimates, truth, _kind) -> tuple[np.ndarray, np.ndarray]:
    """Per benchmark: whether an interval was reported, and whether it covered `truth`."""
    truth = np.broadcast_to(np.asarray(truth, dtype=float), (len(estimates),))
    reported = np.array([e.ci_low is not None for e in estimates])
    covered = np.array(
        [e.ci_low is not None and e.ci_low <= t <= e.ci_high for e, t in zip(estimates, truth)]
    )
    return reported, covered


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
) -> Cell:
    k, b = base_per_metric, benchmarks
    means = rate + np.linspace(-spread, spread, METRICS)
    shape = (b, METRICS, k)
    u = rng.uniform(size=shape)
    p_a = _probabilities(means[None, :, None], icc, u)
    p_b = _probabilities(means[None, :, None] - TARGET_GAP, icc, u)
    keep = rng.uniform(size=shape) < 0.5
    p_user = _probabilities(
        means[None, :, None] - ARM_GAP, icc, np.where(keep, u, rng.uniform(size=shape))
    )
    p_other = _probabilities(means[None, :, None] - ARM_GAP, icc, rng.uniform(size=shape))

    variant_1 = rng.binomial(samples, p_a)
    variant_2 = rng.binomial(samples, p_a)
    s_a = _columns(variant_1 + variant_2)
    t = np.full(s_a.shape, 2.0 * samples)
    s_b = _columns(rng.binomial(2 * samples, p_b))
    s_user = _columns(rng.binomial(2 * samples, p_user))
    s_other = _columns(rng.binomial(2 * samples, p_other))

    strata = np.repeat([f"m{m}" for m in range(METRICS)], k)
    clusters = [f"c{c}" for c in range(METRICS * k)]
    design = ClusterBootstrap(strata, clusters, resamples=1)
    strata_codes = design.strata_codes
    level = confidence_level
    results: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    results["overall"] = _rate_coverage(design, s_a, t, rate, level)

    per_metric = []
    for m in range(METRICS):
        mask = (strata_codes == m)[:, None]
        per_metric.append(_rate_coverage(design, s_a * mask, t * mask, means[m], level))
    shares = [cov[rep].mean() if rep.any() else np.nan for rep, cov in per_metric]
    lowest, highest = int(np.nanargmin(shares)) if np.isfinite(shares).any() else 0, 0
    if np.isfinite(shares).any():
        highest = int(np.nanargmax(shares))
    results["metric (min)"] = per_metric[lowest]
    results["metric (max)"] = per_metric[highest]

    positive = np.isin(strata_codes, [0, 2])[:, None]
    results["positive"] = _rate_coverage(
        design, s_a * positive, t * positive, means[[0, 2]].mean(), level
    )

    labels = [("a", "b")] * b
    results["target difference"] = _difference_coverage(
        labels, s_a, t, s_b, t, paired_design(s_a, t, s_b, t, strata_codes), TARGET_GAP, level
    )
    g_1, g_2 = _columns(variant_1), _columns(variant_2)
    t_g = np.full(g_1.shape, float(samples))
    results["demographic gap"] = _difference_coverage(
        labels, g_1, t_g, g_2, t_g, paired_design(g_1, t_g, g_2, t_g, strata_codes), 0.0, level
    )
    results["paired contrast"] = _difference_coverage(
        labels, s_a, t, s_user, t, paired_design(s_a, t, s_user, t, strata_codes), ARM_GAP, level
    )
    results["independent contrast"] = _difference_coverage(
        labels,
        s_a,
        t,
        s_other,
        t,
        independent_design(s_a, t, strata_codes, s_other, t, strata_codes),
        ARM_GAP,
        level,
    )
    coverage, reported = {}, {}
    for name, (rep, cov) in results.items():
        reported[name] = float(rep.mean())
        coverage[name] = float(cov[rep].mean()) if rep.any() else None
    return Cell(k, samples, icc, rate, coverage, reported)


def coverage_grid(
    *,
    benchmarks: int = 4000,
    confidence_level: float = 0.95,
    seed: int = 2025,
    base_per_metric: tuple[int, ...] = BASE_PER_METRIC,
    samples: tuple[int, ...] = SAMPLES,
    iccs: tuple[float, ...] = ICCS,
    rates: tuple[tuple[float, float], ...] = RATES,
) -> list[Cell]:
    """Every cell of the grid, each from its own seeded stream."""
    designs = list(itertools.product(base_per_metric, samples, iccs, rates))
    streams = np.random.SeedSequence(seed).spawn(len(designs))
    return [
        simulate_cell(
            k, s, icc, rate, spread,
            benchmarks=benchmarks,
            confidence_level=confidence_level,
            rng=np.random.default_rng(stream),
        )
        for (k, s, icc, (rate, spread)), stream in zip(designs, streams)
    ]


def failures(cells: list[Cell]) -> list[tuple[Cell, str]]:
    """(cell, interval type) pairs reported with coverage outside [LOW, HIGH]."""
    return [
        (cell, name)
        for cell in cells
        for name, value in cell.coverage.items()
        if value is not None and not LOW <= value <= HIGH
    ]


def monte_carlo_error(benchmarks: int, confidence_level: float) -> float:
    return float(np.sqrt(confidence_level * (1 - confidence_level) / benchmarks))


def markdown(cells: list[Cell], *, benchmarks: int, confidence_level: float, seconds: float) -> str:
    """The summary per interval type and design size, then every cell."""
    mc = monte_carlo_error(benchmarks, confidence_level)
    lines = [
        "# Interval coverage over benchmark designs",
        "",
        (
            "Written by `make coverage` (`cd tests && python -m stats_support.coverage_grid "
            f"--benchmarks {benchmarks} --out ../docs/interval_coverage.md`), "
            f"in {seconds:.0f} s. Each cell simulates {benchmarks} benchmarks of 4 metrics, two "
            "demographic variants per base scenario, and computes the intervals with the "
            "package's own functions (tests/stats_support/coverage_grid.py says how). "
            f"Nominal level {confidence_level:.0%}; Monte-Carlo standard error of a coverage "
            f"near it ±{mc:.4f}. \"withheld\": the package reports no interval at that design "
            f"(fewer than {MIN_DEGREES_OF_FREEDOM} degrees of freedom, base scenarios minus "
            "metrics, or a metric with one base scenario). A design passes when every interval "
            f"type reported there covers between {LOW} and {HIGH}."
        ),
        "",
        "## Summary: lowest and highest coverage over samples × ICC × rate",
        "",
        "| interval type | " + " | ".join(f"{k} per metric" for k in sorted({c.base_per_metric for c in cells})) + " |",
        "|---|" + "---|" * len({c.base_per_metric for c in cells}),
    ]
    for name in STATISTICS:
        row = [name]
        for k in sorted({c.base_per_metric for c in cells}):
            values = [c.coverage[name] for c in cells if c.base_per_metric == k]
            shown = [v for v in values if v is not None]
            if not shown:
                row.append("withheld")
            else:
                text = f"{min(shown):.3f}–{max(shown):.3f}"
                if len(shown) < len(values):
                    text += f" ({len(values) - len(shown)} cells withheld)"
                row.append(text)
        lines.append("| " + " | ".join(row) + " |")
    bad = failures(cells)
    lines += [
        "",
        f"Reported cells outside [{LOW}, {HIGH}]: {len(bad)}"
        + ("" if not bad else ": " + "; ".join(
            f"{name} at k={c.base_per_metric}, samples={c.samples}, icc={c.icc}, rate={c.rate}"
            f" ({c.coverage[name]:.3f})"
            for c, name in bad
        )),
        "",
        "## Every cell",
        "",
        "| k | samples | ICC | rate | " + " | ".join(STATISTICS) + " |",
        "|---|---|---|---|" + "---|" * len(STATISTICS),
    ]
    for c in cells:
        values = ["withheld" if c.coverage[n] is None else f"{c.coverage[n]:.3f}" for n in STATISTICS]
        lines.append(
            f"| {c.base_per_metric} | {c.samples} | {c.icc} | {c.rate} | " + " | ".join(values) + " |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=4000)
    parser.add_argument("--confidence-level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=2025)
    parser.add_argument("--out", help="write the markdown table here (default: print it)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    cells = coverage_grid(
        benchmarks=args.benchmarks, confidence_level=args.confidence_level, seed=args.seed
    )
    text = markdown(
        cells,
        benchmarks=args.benchmarks,
        confidence_level=args.confidence_level,
        seconds=time.perf_counter() - start,
    )
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
