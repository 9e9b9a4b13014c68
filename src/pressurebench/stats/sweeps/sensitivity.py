"""How often the fidelity sensitivity difference "without breaks − all" covers its truth.

`stats.fidelity.sensitivity` recomputes a pass rate on the conversations whose
simulated user did not break and reports its difference to the rate on all
conversations, a paired cluster-t interval on the same base scenarios
(`paired_design` with the sensitivity difference's rule, `estimate_differences`
with `cluster-t`). The two rates are nested: every conversation of the first is
one of the second. Here each base scenario has its own pass probability (Beta
around its metric's mean with intra-scenario correlation `icc`) and its own
propensity to break (Beta with mean BREAK and the same `icc`, drawn
independently), and a conversation that fails breaks with that propensity, one
that passes with RATIO times it: breaks cluster in some base scenarios and go
with failing, so dropping them raises the rate. With p and q independent the
population value of the rate without breaks is
μp (1 − RATIO μq) / (1 − μq (1 − (1 − RATIO) μp)) per metric (ratios of the
metrics' sums over several), the truth the interval is checked against.

Statistics: "sensitivity" (a target's difference over all metrics) and
"metric sensitivity (min/max)" (each metric's difference on its own rows, the
lowest and highest coverage of the metrics measured, as in the coverage grid).
Each design is 4 or 20 metrics × 2 to 30 base scenarios per metric × 1 or 4
conversations per base scenario × ICC 0.1 or 0.5, the rules lowered; rules are
measured as the grid measures its own (`common.measured_rules`).
`pressurebench.stats.sweeps.capitulation` writes the tables to
docs/capitulation_coverage.md.
"""

from __future__ import annotations

import numpy as np

from .. import interval_rules, methods
from ..differences import estimate_differences, paired_design
from .common import (
    Sweep,
    columns,
    coverage_shares,
    covered,
    measured_metrics,
    metric_ends,
    monte_carlo_error,
    probabilities,
    sweep_designs,
)
from .grid import Cell
from .pages import by_design, measured_rules_table, short_ranges, table, with_share

SAMPLES = (1, 4)
ICCS = (0.1, 0.5)
RATE, SPREAD = 0.7, 0.15  # mean pass rate of the metrics and their spread around it
BREAK = 0.2  # mean propensity to break of a base scenario (the rate at which failures break)
RATIO = 0.25  # a passing conversation breaks this many times as often as a failing one
STATISTICS = ("sensitivity", "metric sensitivity (min)", "metric sensitivity (max)")
GOVERNED_BY = {
    "sensitivity": "pooled",
    "metric sensitivity (min)": "single",
    "metric sensitivity (max)": "single",
}


def without_breaks(mean_pass: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Expected passes and conversations without a break per conversation, at these mean
    pass probabilities: the population value of the rate without breaks is their ratio."""
    mean_pass = np.asarray(mean_pass, dtype=float)
    return mean_pass * (1 - RATIO * BREAK), 1 - BREAK * (1 - (1 - RATIO) * mean_pass)


def true_difference(means: np.ndarray) -> float:
    """Rate without breaks − rate on all, over metrics of these mean pass probabilities
    (equally many conversations each)."""
    passes, kept = without_breaks(means)
    return float(passes.sum() / kept.sum() - np.mean(means))


def difference_coverage(s_a, t_a, s_b, t_b, strata, truth, level):
    """As `stats.fidelity.sensitivity` compares its two subsets, one benchmark per column."""
    design = paired_design(s_a, t_a, s_b, t_b, strata, rule=interval_rules.SENSITIVITY)
    estimates = estimate_differences(
        [("without breaks", "all")] * s_a.shape[1], s_a, t_a, s_b, t_b, design,
        method=methods.CLUSTER_T_MOVER, confidence_level=level,
    )
    return covered(estimates, truth)


def simulate_cell(
    metrics: int, base_per_metric: int, samples: int, icc: float, *, benchmarks: int,
    confidence_level: float, rng: np.random.Generator,
) -> Cell:
    """One design: `benchmarks` simulated benchmarks' sensitivity intervals and whether they
    cover (call within `rules_lowered` to measure below the rule)."""
    k, b = base_per_metric, benchmarks
    means = RATE + np.linspace(-SPREAD, SPREAD, metrics)
    shape = (b, metrics, k)
    p = probabilities(means[None, :, None], icc, rng.uniform(size=shape))
    q = probabilities(np.full((1, 1, 1), BREAK), icc, rng.uniform(size=shape))
    passed = rng.random((*shape, samples)) < p[..., None]
    broke = rng.random((*shape, samples)) < q[..., None] * np.where(passed, RATIO, 1.0)
    s_all = columns(passed.sum(axis=-1))
    t_all = np.full(s_all.shape, float(samples))
    s_kept = columns((passed & ~broke).sum(axis=-1))
    t_kept = columns((~broke).sum(axis=-1))
    codes = np.repeat(np.arange(metrics), k)
    level = confidence_level
    results = {"sensitivity": difference_coverage(s_kept, t_kept, s_all, t_all, codes,
                                          true_difference(means), level)}
    per_metric = []
    for m in measured_metrics(metrics):
        mask = (codes == m)[:, None]
        per_metric.append(difference_coverage(s_kept * mask, t_kept * mask, s_all * mask, t_all * mask,
                                      codes, true_difference(means[[m]]), level))
    results.update(metric_ends("metric sensitivity", per_metric))
    coverage, reported = coverage_shares(results)
    return Cell(metrics, k, samples, icc, RATE, coverage=coverage, reported=reported)


# How the sweep runs unless told otherwise.
DEFAULTS = Sweep(benchmarks=2000, seed=2027)


def grid(
    run: Sweep = DEFAULTS, *, samples: tuple[int, ...] = SAMPLES, iccs: tuple[float, ...] = ICCS
) -> list[Cell]:
    """Every design, each from its own seeded stream, measured below the rules."""
    return sweep_designs(simulate_cell, run, samples, iccs)


def rule_of(name: str) -> int:
    """The base scenarios per metric the package's rule for statistic `name` requires."""
    return getattr(interval_rules.SENSITIVITY, GOVERNED_BY[name])


def markdown(cells: list[Cell], *, benchmarks: int, confidence_level: float,
             seconds: float) -> str:
    """The measured rules, the lowest and highest coverage per design size, every cell."""
    mc = monte_carlo_error(benchmarks, confidence_level)
    lines = [
        "## Fidelity sensitivity difference",
        "",
        (
            f"{len(cells)} designs × {benchmarks} simulated benchmarks in {seconds:.0f} s: "
            f"{' or '.join(str(m) for m in sorted({c.metrics for c in cells}))} metrics with "
            f"mean pass rates {RATE} ± {SPREAD}, "
            f"{' or '.join(str(s) for s in sorted({c.samples for c in cells}))} conversations "
            f"per base scenario, ICC {' or '.join(str(i) for i in sorted({c.icc for c in cells}))}"
            f" of both the pass probability and the propensity to break (mean {BREAK}; a "
            f"passing conversation breaks {RATIO} times as often as a failing one), so the rate "
            "without breaks is higher than on all conversations "
            f"(by {true_difference(RATE + np.linspace(-SPREAD, SPREAD, 4)):.3f} over four "
            "metrics); `pressurebench.stats.sweeps.sensitivity` says how. Monte-Carlo "
            f"standard error ±{mc:.4f}."
        ),
        "",
        *measured_rules_table(cells, benchmarks, STATISTICS,
                              {name: (interval_rules.SENSITIVITY.statistic, side)
                               for name, side in GOVERNED_BY.items()}, rule_of),
        *by_design(cells, STATISTICS, rule_of=rule_of,
                   over="conversations per base scenario and ICC",
                   shown=short_ranges()),
        "",
        "### Every design: coverage (share of benchmarks reported)",
        "",
        *table(["metrics", "k", "conversations", "ICC", *STATISTICS],
               ([c.metrics, c.base_per_metric, c.samples, c.icc,
                 *(with_share(c.coverage[n], c.reported[n]) for n in STATISTICS)]
                for c in cells)),
    ]
    return "\n".join(lines) + "\n"
