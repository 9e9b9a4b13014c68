"""How often the rank correlation's interval contains the true Kendall τ-b between two arms,
and where the noise ceiling lies.

Simulates benchmarks with a known ranking of 3, 5 or 8 targets: their true pass rates spread
evenly over 0.5–0.8 (± 0.1 between four metrics), each base scenario's difficulty shared by
every target (Beta, intra-scenario correlation `icc`), two demographic variants per base
scenario and `samples` conversations each. The arm either keeps the ranking (every target
0.05 lower: true τ-b 1, "unchanged") or swaps the two middle targets' rates (one discordant
pair of the n(n − 1)/2: true τ-b 1 − 4 / (n(n − 1)), "one swap"); it plays the same base
scenarios (half keep their difficulty, as under another user model: "paired") or unrelated
ones (another generator: "independent"). τ-b and its percentile interval are computed as
`stats.arm_comparison.compare_arms` computes them (the package's `ClusterBootstrap` and
`kendall_tau_b`, paired arms resampled together), one simulated benchmark per column, and the
noise ceiling as `stats.rank_ceiling` computes it (split samples where the arms share the
scenarios and each row has more than one, else base scenarios), over 50 seeded splits per
benchmark (the package takes 200).

Run with the contrasts' sweep: `python -m pressurebench.stats.sweeps validation`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from pressurebench.stats.arm_comparison import kendall_tau_b, spearman_rho
from pressurebench.stats.bootstrap import ClusterBootstrap, percentile_interval
from pressurebench.stats.rank_ceiling import CEILING_FOR_INTERVAL, split_taus

from .common import monte_carlo_error, probabilities, seeded_runs
from .pages import table

TARGETS = (3, 5, 8)
BASE_PER_METRIC = (3, 5, 8, 12, 20, 30)
SAMPLES = (1, 3)
ICCS = (0.1, 0.5)
PAIRINGS = ("paired", "independent")
TRUTHS = ("unchanged", "one swap")
METRICS = 4
LOW_RATE, HIGH_RATE, METRIC_SPREAD, ARM_SHIFT = 0.5, 0.8, 0.1, 0.05
RESAMPLES = 400
SPLITS = 50
MIN_REPORTED = 50  # benchmarks given an interval before a cell's coverage under the rule is shown


@dataclass(frozen=True)
class RankCell:
    """One design: per statistic (τ-b, ρ) its coverage among benchmarks given an interval,
    with every interval and with the package's rule (only where the noise ceiling is at least
    `CEILING_FOR_INTERVAL`), the share of benchmarks the rule reports, and the mean τ-b beside
    the mean noise ceiling."""

    targets: int
    base_per_metric: int
    samples: int
    icc: float
    pairing: str
    truth: str
    tau: float  # the true τ-b
    coverage: dict[str, float | None]  # "tau", "rho": every interval
    coverage_reported: dict[str, float | None]  # the same where the rule reports it
    reported: float  # share of benchmarks whose ceiling allows an interval
    mean_estimate: float
    mean_ceiling: float | None


def true_rates(targets: int, truth: str) -> tuple[np.ndarray, np.ndarray]:
    main = np.linspace(LOW_RATE, HIGH_RATE, targets)
    arm = main.copy()
    if truth == "one swap":
        i = targets // 2 - 1
        arm[[i, i + 1]] = arm[[i + 1, i]]
    return main, arm - ARM_SHIFT


def _counts(rng, rates: np.ndarray, u: np.ndarray, icc: float, samples: int) -> np.ndarray:
    """(benchmarks, metrics, k, samples, targets) passes of two variants per sample."""
    offsets = np.linspace(-METRIC_SPREAD, METRIC_SPREAD, METRICS)
    means = rates[None, None, None, :] + offsets[None, :, None, None]
    p = probabilities(means, icc, u[..., None])
    return rng.binomial(2, p[:, :, :, None, :], size=(*u.shape, samples, len(rates)))


def _tables(counts: np.ndarray) -> np.ndarray:
    """(clusters, benchmarks × targets), clusters metric-major, targets fastest."""
    b, m, k, _, n = counts.shape
    return counts.sum(axis=3).transpose(1, 2, 0, 3).reshape(m * k, b * n).astype(float)


def simulate_cell(targets: int, k: int, samples: int, icc: float, pairing: str, truth: str, *,
                  benchmarks: int, confidence_level: float, rng: np.random.Generator,
                  resamples: int = RESAMPLES) -> RankCell:
    b = benchmarks
    main_rates, arm_rates = true_rates(targets, truth)
    tau = float(kendall_tau_b(main_rates, arm_rates))
    shape = (b, METRICS, k)
    u = rng.uniform(size=shape)
    if pairing == "paired":
        u_arm = np.where(rng.uniform(size=shape) < 0.5, u, rng.uniform(size=shape))
    else:
        u_arm = rng.uniform(size=shape)
    main_counts = _counts(rng, main_rates, u, icc, samples)
    main, arm = _tables(main_counts), _tables(_counts(rng, arm_rates, u_arm, icc, samples))
    trials = np.full(main.shape, 2.0 * samples)
    strata = np.repeat([f"m{m}" for m in range(METRICS)], k)
    clusters = [f"c{c}" for c in range(METRICS * k)]
    seed_a, seed_b = rng.integers(2**32, size=2)
    boot = ClusterBootstrap(strata, clusters, resamples=resamples, seed=int(seed_a))
    if pairing == "paired":
        reps = boot.replicate_ratios(np.hstack([arm, main]), np.hstack([trials, trials]))
        reps_arm, reps_main = reps[:, : arm.shape[1]], reps[:, arm.shape[1]:]
    else:
        other = ClusterBootstrap(strata, clusters, resamples=resamples, seed=int(seed_b))
        reps_arm, reps_main = boot.replicate_ratios(arm, trials), other.replicate_ratios(main, trials)
    ceiling = _ceiling(rng, main_counts, pairing, samples, targets)
    allowed = np.nan_to_num(ceiling, nan=-1.0) >= CEILING_FOR_INTERVAL
    coverage, coverage_reported, estimate = {}, {}, np.nan
    for name, statistic in (("tau", kendall_tau_b), ("rho", spearman_rho)):
        truth_value = float(statistic(main_rates, arm_rates))
        point = statistic((arm.sum(0) / trials.sum(0)).reshape(b, targets),
                          (main.sum(0) / trials.sum(0)).reshape(b, targets))
        reps = statistic(reps_arm.reshape(resamples, b, targets),
                         reps_main.reshape(resamples, b, targets))
        low, high, _ = percentile_interval(reps, confidence_level)
        given = np.isfinite(point) & np.isfinite(low)
        covered = given & (low <= truth_value + 1e-12) & (truth_value - 1e-12 <= high)
        coverage[name] = float(covered[given].mean()) if given.any() else None
        kept = given & allowed
        coverage_reported[name] = float(covered[kept].mean()) if kept.sum() >= MIN_REPORTED \
            else None
        if name == "tau":
            estimate = float(np.nanmean(point))
    return RankCell(targets, k, samples, icc, pairing, truth, tau, coverage, coverage_reported,
                    float(allowed.mean()), estimate,
                    float(np.nanmean(ceiling)) if np.isfinite(ceiling).any() else None)


def _ceiling(rng, counts: np.ndarray, pairing: str, samples: int, targets: int) -> np.ndarray:
    """Per benchmark, `rank_ceiling`'s split-half τ-b of the main arm (NaN where every split
    ties a half)."""
    b, m, k, s, n = counts.shape
    if pairing == "paired" and samples >= 2:  # one unit per sample of a base scenario
        units = counts.transpose(1, 2, 3, 0, 4).reshape(m * k * s, b * n).astype(float)
        blocks, rows = np.repeat(np.arange(m * k), s), 2.0
    else:  # one unit per base scenario
        units, blocks, rows = _tables(counts), np.repeat(np.arange(m), k), 2.0 * samples
    trials = np.full(units.shape, rows)
    taus = split_taus(units, trials, blocks, targets=n, splits=SPLITS, rng=rng)
    found = np.isfinite(taus)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(found.any(axis=0), np.where(found, taus, 0.0).sum(axis=0)
                        / found.sum(axis=0), np.nan)


def _task(task: tuple) -> RankCell:
    n, k, s, icc, pairing, truth, benchmarks, level, stream = task
    return simulate_cell(n, k, s, icc, pairing, truth, benchmarks=benchmarks,
                         confidence_level=level, rng=np.random.default_rng(stream))


def sweep(*, benchmarks: int = 1000, confidence_level: float = 0.95, seed: int = 2050,
          targets: tuple[int, ...] = TARGETS, base_per_metric: tuple[int, ...] = BASE_PER_METRIC,
          samples: tuple[int, ...] = SAMPLES, iccs: tuple[float, ...] = ICCS,
          pairings: tuple[str, ...] = PAIRINGS, truths: tuple[str, ...] = TRUTHS,
          jobs: int = 1) -> list[RankCell]:
    designs = [(*d, benchmarks, confidence_level) for d in itertools.product(
        targets, base_per_metric, samples, iccs, pairings, truths)]
    return seeded_runs(_task, designs, seed=seed, jobs=jobs)


def markdown_section(*, benchmarks: int, confidence_level: float, seed: int, jobs: int) -> str:
    cells = sweep(benchmarks=benchmarks, confidence_level=confidence_level, seed=seed, jobs=jobs)
    return section(cells, benchmarks=benchmarks, confidence_level=confidence_level)


def _coverage_table(cells: list[RankCell], sizes: list[int], value) -> list[str]:
    rows = []
    for n, pairing, truth in itertools.product(sorted({c.targets for c in cells}), PAIRINGS,
                                               TRUTHS):
        row = [str(n), pairing, truth]
        for k in sizes:
            found = [c for c in cells if (c.targets, c.pairing, c.truth, c.base_per_metric)
                     == (n, pairing, truth, k)]
            values = [v for v in (value(c) for c in found) if v is not None]
            text = f"{min(values):.3f}–{max(values):.3f}" if values else "none"
            shares = [c.reported for c in found]
            row.append(text if value is _every_tau or value is _every_rho
                       else f"{text} ({min(shares):.2f}–{max(shares):.2f})")
        rows.append(row)
    return table(["targets", "pairing", "truth", *(f"{k} per metric" for k in sizes)], rows)


def _every_tau(c: RankCell) -> float | None:
    return c.coverage["tau"]


def _every_rho(c: RankCell) -> float | None:
    return c.coverage["rho"]


def lowest_under_rule(cells: list[RankCell], statistic: str) -> float | None:
    """The lowest coverage of `statistic` among the cells where the rule reports it in at least
    `MIN_REPORTED` benchmarks: what the rule is measured by."""
    values = [value for c in cells
              if (value := c.coverage_reported[statistic]) is not None]
    return min(values) if values else None


def section(cells: list[RankCell], *, benchmarks: int, confidence_level: float) -> str:
    mc = monte_carlo_error(benchmarks, confidence_level)
    sizes = sorted({c.base_per_metric for c in cells})
    tau_low, rho_low = lowest_under_rule(cells, "tau"), lowest_under_rule(cells, "rho")
    lines = [
        "## Kendall's τ-b between arms, and its noise ceiling",
        "",
        (
            f"{len(cells)} designs × {benchmarks} simulated benchmarks, {RESAMPLES} bootstrap "
            f"replicates each: {', '.join(str(t) for t in sorted({c.targets for c in cells}))} "
            f"targets with true pass rates spread evenly over {LOW_RATE}–{HIGH_RATE}, {METRICS} "
            "metrics, two variants per base scenario, "
            f"{' or '.join(str(s) for s in sorted({c.samples for c in cells}))} conversations "
            f"each, ICC {' or '.join(str(i) for i in sorted({c.icc for c in cells}))}; the arm "
            "keeps the ranking (true τ-b 1) or swaps the two middle targets, on the same base "
            "scenarios or unrelated ones (`pressurebench.stats.sweeps.ranks` says how). "
            f"Monte-Carlo standard error ±{mc:.4f}."
        ),
        "",
        (
            "The percentile interval of τ-b (and of Spearman's ρ) is an interval of the rank "
            "agreement *a study of this size would observe*, which noise pulls below the true "
            "rankings' agreement: where targets are close for the design, it misses the truth "
            "far more often than it claims (the first table). The package reports it only where "
            "the noise ceiling (τ-b between two halves of the main arm) is at least "
            f"{CEILING_FOR_INTERVAL}: where even half the main arm ranks the targets alike, noise "
            "barely moves the full study's ranking. Under that rule (the second and third "
            "tables: coverage among the benchmarks it reports, with the share it reports, in "
            f"cells where it reports at least {MIN_REPORTED}) the lowest coverage is "
            f"{'none' if tau_low is None else f'{tau_low:.3f}'} for τ-b and "
            f"{'none' if rho_low is None else f'{rho_low:.3f}'} for ρ. Elsewhere τ-b is read "
            "against its ceiling (the last table)."
        ),
        "",
        "### τ-b: coverage of every percentile interval, lowest and highest over samples and ICC",
        "",
        *_coverage_table(cells, sizes, _every_tau),
        "",
        (f"### τ-b where the noise ceiling is at least {CEILING_FOR_INTERVAL}: coverage "
         "(share of benchmarks reported)"),
        "",
        *_coverage_table(cells, sizes, lambda c: c.coverage_reported["tau"]),
        "",
        (f"### Spearman's ρ where the noise ceiling is at least {CEILING_FOR_INTERVAL}: "
         "coverage (share of benchmarks reported)"),
        "",
        *_coverage_table(cells, sizes, lambda c: c.coverage_reported["rho"]),
        "",
        "### An arm that changes nothing: mean τ-b beside the mean noise ceiling",
        "",
    ]
    rows = []
    for n, pairing, s, icc in itertools.product(
            sorted({c.targets for c in cells}), PAIRINGS, sorted({c.samples for c in cells}),
            sorted({c.icc for c in cells})):
        row = [str(n), pairing, str(s), str(icc)]
        for k in sizes:
            found = [c for c in cells if (c.targets, c.pairing, c.samples, c.icc, c.truth,
                                          c.base_per_metric) == (n, pairing, s, icc, "unchanged",
                                                                 k)]
            if not found:
                row.append("none")
                continue
            c = found[0]
            ceiling = "—" if c.mean_ceiling is None else f"{c.mean_ceiling:.2f}"
            row.append(f"{c.mean_estimate:.2f} / {ceiling}")
        rows.append(row)
    lines += table(["targets", "pairing", "samples", "ICC", *(f"{k} per metric" for k in sizes)],
                   rows)
    return "\n".join(lines) + "\n"
