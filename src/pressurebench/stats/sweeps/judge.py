"""How often judge-corrected pass rates cover the true pass rate, and how wide they are.

Simulates benchmarks of clustered score rows (`synthetic.synthetic_scores`:
base scenarios with Beta-distributed pass probabilities around each metric's
mean, so the true pass rate of a target is known) whose verdicts come from a
judge with planted sensitivity and specificity, not from the truth (one pair
for every metric, or one per metric). Raters, each right with a fixed
probability, label a seeded sample of items per target × metric; their
disagreements are ties and have no reference.

With `disagreement_rate` > 0 the verdicts come from a judge panel that splits
on that share of rows, and on those rows the verdict is right only with
`disagreement_accuracy`; the sample over-samples them as `labels export`
does (`disagreement_share` of each cell, uniform within each stratum) and
gives each labelled item its `stratum_weight`. `weighted=False` drops the
weights (every item weighs 1), the analysis that over-sampling biases.

`coverage` measures, per target, how often the prediction-powered interval
(`stats.ppi`, power-tuned), the interval of the labelled rows alone (λ = 0)
and the raw judged rate's interval cover the true rate, and their mean
widths; and the same for the corrected paired difference of the two
targets. `make judge-coverage` runs the grid of label budgets, judge
qualities and designs into docs/judge_coverage.md (`--judge` and `--base`
run part of it), and the label budgets too small for a correction
(`budget_rows`): how often the corrected value is withheld there, and how
the intervals given cover.

Before them it runs the design sweep (`sweep`): the coverage grid's designs
(4 and 20 metrics × 2 to 30 base scenarios per metric), two judges and two
label budgets, the rules' withholding lowered, from which the corrected
intervals' rules (`interval_rules.CORRECTED_RATE`, `CORRECTED_DIFFERENCE`)
are measured as `common.measured_rules` measures the others
(`--sweep-only` runs it alone, `--jobs` in worker processes).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, cast

import numpy as np
import pandas as pd

from .. import interval_rules
from ..bootstrap import ClusterBootstrap
from ..corrected_rates import human_passes
from ..differences import estimate_differences, paired_design
from ..frame import DEMOGRAPHIC_PREFIX, passes, valid_mask
from ..grouping import factorize, pass_tables
from ..interval_rules import DIFFERENCE, rules_lowered
from ..judge_validity import PANEL, label_items
from ..ppi import ppi_differences, ppi_rates, ppi_tables
from ..rates import grouped_rates
from .common import (
    LOW,
    MeasuredDesign,
    Sweep,
    coverage_shares,
    measured_metrics,
    measured_rules,
    metric_ends,
    monte_carlo_error,
    probabilities,
    sweep_designs,
)
from .pages import by_design, rules_table, table, write_page
from .synthetic import synthetic_scores

TRUE_RATES = {"a": 0.85, "b": 0.3}
SENSITIVITY, SPECIFICITY = 0.8, 0.9
RATER_ACCURACY = 0.95
METRIC_SPREAD = 0.05
CONCENTRATION = 8.0
# A panel that splits on 15% of rows and is then right on half of them; 8 samples make
# 192 rows per target × metric, so half of 40 labels drawn from its ~29 splits over-samples them.
PANEL_DESIGN = {
    "disagreement_rate": 0.15,
    "disagreement_accuracy": 0.5,
    "disagreement_share": 0.5,
    "samples": 8,
}


def simulate(
    rng: np.random.Generator,
    *,
    sensitivity: float | Sequence[float] = SENSITIVITY,
    specificity: float | Sequence[float] = SPECIFICITY,
    labelled_per_group: int = 10,
    labelled_per_target: int | None = None,
    raters: int = 2,
    rater_accuracy: float = RATER_ACCURACY,
    metrics: int = 4,
    base_per_metric: int = 12,
    samples: int = 2,
    metric_spread: float = METRIC_SPREAD,
    concentration: float = CONCENTRATION,
    disagreement_rate: float = 0.0,
    disagreement_accuracy: float = 0.5,
    disagreement_share: float = 0.5,
    weighted: bool = True,
    by_target: Mapping[str, tuple[float, float]] | None = None,
    error_icc: float = 0.0,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Score rows judged by an imperfect judge, human labels of a sample, and the panel verdicts.

    4 metrics × 12 base scenarios × 2 variants × 2 samples per target by
    default; metric types alternate positive and negative. `sensitivity` and
    `specificity` are one value or one per metric; `by_target` gives them per target instead
    (a judge that errs more on one target's conversations); with `error_icc` each base
    scenario has its own sensitivity and specificity, Beta around those with that
    intra-scenario correlation (a judge whose errors cluster by scenario).
    `labelled_per_target` spreads that many labels over a target's metrics (the first ones
    get one more where they do not divide), instead of `labelled_per_group` per cell.
    """
    truth = synthetic_scores(
        target_rates=TRUE_RATES,
        metrics=metrics,
        base_per_metric=base_per_metric,
        axes={"tone": ["x", "y"]},
        samples=samples,
        metric_spread=metric_spread,
        concentration=concentration,
        seed=rng,
    )
    positive = (truth["metric_type"] == "positive").to_numpy()
    present = truth["passed"].astype(bool).to_numpy() == positive
    metric = truth["metric_id"].str[1:].astype(int).to_numpy() - 1
    se = np.broadcast_to(np.asarray(sensitivity, dtype=float), (metrics,))[metric]
    sp = np.broadcast_to(np.asarray(specificity, dtype=float), (metrics,))[metric]
    if by_target is not None:
        se = truth["target"].map({t: v[0] for t, v in by_target.items()}).to_numpy(dtype=float)
        sp = truth["target"].map({t: v[1] for t, v in by_target.items()}).to_numpy(dtype=float)
    if error_icc > 0:
        base, where = np.unique(truth["base_id"].to_numpy(), return_inverse=True)
        u_se, u_sp = rng.uniform(size=len(base))[where], rng.uniform(size=len(base))[where]
        se = probabilities(se, error_icc, u_se)
        sp = probabilities(sp, error_icc, u_sp)
    u = rng.uniform(size=len(truth))
    judged = np.where(present, u < se, u >= sp)
    disagrees = rng.uniform(size=len(truth)) < disagreement_rate
    split_right = rng.uniform(size=len(truth)) < disagreement_accuracy
    judged = np.where(disagrees, np.where(split_right, present, ~present), judged)
    scores = truth.assign(
        passed=(judged == positive).astype(object),
        conv_id=[f"c{i}" for i in range(len(truth))],
        scenario_metric_id=truth["metric_id"],
    )
    judged_rows = scores.assign(present_true=present, judged=judged, disagrees=disagrees)
    sizes = [labelled_per_group] * metrics
    if labelled_per_target is not None:
        sizes = [labelled_per_target // metrics + (m < labelled_per_target % metrics)
                 for m in range(metrics)]
    # Grouped by metric id, a string such as "m01": `m` is one.
    sample: pd.DataFrame = pd.concat(
        draw_cell(cell, sizes[int(cast(str, m)[1:]) - 1], disagreement_share, rng)
        for (_, m), cell in judged_rows.groupby(["target", "metric_id"])
    )
    if not weighted:
        sample["stratum_weight"] = 1.0
    item_ids = sample["conv_id"] + "|" + sample["metric_id"]
    right = rng.uniform(size=(raters, len(sample))) < rater_accuracy
    said = np.where(right, sample["present_true"].to_numpy(), ~sample["present_true"].to_numpy())
    labels = pd.concat(
        [
            pd.DataFrame(
                {
                    "item_id": item_ids.to_numpy(),
                    "conv_id": sample["conv_id"].to_numpy(),
                    "metric_id": sample["metric_id"].to_numpy(),
                    "target": sample["target"].to_numpy(),
                    "base_id": sample["base_id"].to_numpy(),
                    "scenario_metric_id": sample["metric_id"].to_numpy(),
                    "metric_type": sample["metric_type"].to_numpy(),
                    "rater": f"r{r + 1}",
                    "label": np.where(said[r], "present", "absent"),
                    "stratum_weight": sample["stratum_weight"].to_numpy(),
                }
            )
            for r in range(raters)
        ],
        ignore_index=True,
    )
    verdicts = pd.DataFrame(
        {"item_id": item_ids.to_numpy(), "judge": PANEL, "present": sample["judged"].to_numpy()}
    )
    return scores, labels, verdicts


def draw_cell(
    cell: pd.DataFrame, size: int, disagreement_share: float, rng: np.random.Generator
) -> pd.DataFrame:
    """`size` rows of one target × metric cell, drawn as `labels.sampling.draw_cell` draws them
    (disagreements first up to their share, uniform within each stratum), each with its
    stratum's rows per item drawn from it."""
    disagree, agree = cell[cell["disagrees"]], cell[~cell["disagrees"]]
    n_disagree = min(len(disagree), round(disagreement_share * size))
    n_agree = min(len(agree), size - n_disagree)
    n_disagree = min(len(disagree), size - n_agree)
    drawn = [
        stratum.sample(n=n, random_state=rng).assign(stratum_weight=len(stratum) / n)
        for stratum, n in ((disagree, n_disagree), (agree, n_agree))
        if n
    ]
    return pd.concat(drawn or [cell.iloc[:0].assign(stratum_weight=1.0)])




INTERVALS = ("corrected", "labelled only", "raw")


class Coverage(NamedTuple):
    """Per target (and "a − b", the paired difference): the share of simulated benchmarks
    whose interval covers the truth and the mean interval width, for the corrected, the
    labelled-only and the raw interval; `withheld` is the share with no corrected interval,
    `lam` the mean power tuning."""

    covered: dict[str, dict[str, float]]
    width: dict[str, dict[str, float]]
    withheld: dict[str, float]
    lam: dict[str, float]
    replications: int


def _bootstrap(scores: pd.DataFrame) -> ClusterBootstrap:
    """The base scenarios within metrics; only their codes are used, never a replicate."""
    pairs = scores[["metric_id", "base_id"]].drop_duplicates().sort_values("base_id")
    return ClusterBootstrap(pairs["metric_id"].tolist(), pairs["base_id"].tolist(), resamples=1)


def intervals(scores: pd.DataFrame, labels: pd.DataFrame) -> dict[str, dict]:
    """Per target and "a − b": (low, high) of the corrected, labelled-only and raw 95%
    intervals, NaN where there is none, and the corrected λ."""
    bootstrap = _bootstrap(scores)
    human, weight = human_passes(scores, label_items(labels))
    group, keys = factorize(scores, ["target"])
    cluster = bootstrap.codes(scores["base_id"])
    tables = ppi_tables(
        cluster, group, bootstrap.n_clusters, len(keys), passes(scores), valid_mask(scores),
        human, weight,
    )
    strata = bootstrap.strata_codes
    out: dict[str, dict[str, Any]] = {}
    for lam, name in ((None, "corrected"), (0.0, "labelled only")):
        rates = ppi_rates(tables, strata, 0.95, lam=lam)
        for g, key in enumerate(keys):
            out.setdefault(str(key[0]), {"lam": rates.lam[g]} if lam is None else {})
            out[str(key[0])][name] = (rates.ci_low[g], rates.ci_high[g])
        diff = ppi_differences(tables, strata, [(0, 1)], 0.95, lam=lam)
        out.setdefault("a − b", {"lam": np.nan})[name] = (diff.ci_low[0], diff.ci_high[0])
    (raw,) = grouped_rates(scores, bootstrap, [["target"]])
    for key, rate in raw.items():
        out[str(key[0])]["raw"] = (
            (np.nan, np.nan) if rate.ci_low is None else (rate.ci_low, rate.ci_high)
        )
    counts = pass_tables(scores, cluster, bootstrap.n_clusters, [["target"]])
    a, b = counts.successes[:, [0]], counts.trials[:, [0]]
    c, d = counts.successes[:, [1]], counts.trials[:, [1]]
    (raw_diff,) = estimate_differences(
        [("a", "b")], a, b, c, d, paired_design(a, b, c, d, strata, rule=DIFFERENCE),
        method="cluster-t", confidence_level=0.95,
    )
    out["a − b"]["raw"] = (
        (np.nan, np.nan) if raw_diff.ci_low is None else (raw_diff.ci_low, raw_diff.ci_high)
    )
    return out


def coverage(replications: int = 500, *, seed: int = 11, **design) -> Coverage:
    """Simulate `replications` benchmarks (`simulate(**design)`) and count covering intervals,
    the rules' withholding lowered (`rules_lowered`): `withheld` counts what the labels
    withhold (`stats.ppi.untrusted`), whatever the design."""
    with rules_lowered():
        return _coverage(replications, seed=seed, **design)


def _coverage(replications: int, *, seed: int, **design) -> Coverage:
    rng = np.random.default_rng(seed)
    truths = {**TRUE_RATES, "a − b": TRUE_RATES["a"] - TRUE_RATES["b"]}
    hits = {k: dict.fromkeys(INTERVALS, 0) for k in truths}
    widths: dict[str, dict[str, list[float]]] = {k: {i: [] for i in INTERVALS} for k in truths}
    withheld = dict.fromkeys(truths, 0)
    lams: dict[str, list[float]] = {k: [] for k in truths}
    for _ in range(replications):
        scores, labels, _ = simulate(rng, **design)
        for key, got in intervals(scores, labels).items():
            lams[key].append(got["lam"])
            withheld[key] += bool(np.isnan(got["corrected"][0]))
            for name in INTERVALS:
                low, high = got[name]
                hits[key][name] += bool(low <= truths[key] <= high)
                widths[key][name].append(high - low)
    return Coverage(
        covered={k: {i: n / replications for i, n in h.items()} for k, h in hits.items()},
        width={k: {i: float(np.nanmean(w)) if np.isfinite(w).any() else float("nan")
                   for i, w in v.items()} for k, v in widths.items()},
        withheld={k: n / replications for k, n in withheld.items()},
        lam={k: float(np.nanmean(v)) if np.isfinite(v).any() else float("nan")
             for k, v in lams.items()},
        replications=replications,
    )


BUDGETS = (10, 30, 100, 300)
JUDGES: dict[str, dict[str, Any]] = {
    "Se 0.6, Sp 0.6": {"sensitivity": 0.6, "specificity": 0.6},
    "Se 0.8, Sp 0.9": {"sensitivity": 0.8, "specificity": 0.9},
    "Se 0.95, Sp 0.95": {"sensitivity": 0.95, "specificity": 0.95},
    "by metric, Se 0.6–0.95, Sp 0.95–0.6": {
        "sensitivity": (0.6, 0.75, 0.9, 0.95), "specificity": (0.95, 0.9, 0.75, 0.6),
    },
}
BASES = (6, 12, 30)
# Budgets around what a correction needs (`stats.ppi.MIN_LABELLED_PER_METRIC` labelled rows
# with a human answer in each of the 4 metrics), labelled by two raters each right on 90% of
# items, so that ties leave some items without a human answer, as with real raters.
SMALL_BUDGETS = (4, 6, 8, 12, 16)
SMALL_BUDGET_JUDGE = "Se 0.8, Sp 0.9"
SMALL_BUDGET_RATERS = 0.9
SMALL_BUDGET_BASES = (6, 12)


def grid_rows(replications: int, budgets, judges, bases, seed: int = 11):
    """One markdown row per design × judge × budget and target (and the difference)."""
    for base in bases:
        for judge, quality in judges.items():
            for budget in budgets:
                result = coverage(
                    replications, seed=seed, base_per_metric=base, labelled_per_target=budget,
                    rater_accuracy=1.0, **quality,
                )
                for key in result.covered:
                    c, w = result.covered[key], result.width[key]
                    yield (
                        f"| {base} | {judge} | {budget} | {key} | {c['corrected']:.3f} | "
                        f"{w['corrected']:.3f} | {c['labelled only']:.3f} | "
                        f"{w['labelled only']:.3f} | {c['raw']:.3f} | {w['raw']:.3f} | "
                        f"{result.lam[key]:.2f} |"
                    ).replace("nan", "–")


def budget_rows(replications: int, budgets, bases, seed: int = 11):
    """One markdown row per design × small label budget and target (and the difference): the
    share of benchmarks whose corrected value is withheld, and the coverage and mean width of
    the corrected intervals given."""
    for base in bases:
        for budget in budgets:
            result = coverage(
                replications, seed=seed, base_per_metric=base, labelled_per_target=budget,
                rater_accuracy=SMALL_BUDGET_RATERS, **JUDGES[SMALL_BUDGET_JUDGE],
            )
            for key in result.covered:
                given = 1.0 - result.withheld[key]
                covered = result.covered[key]["corrected"] / given if given else float("nan")
                yield (
                    f"| {base} | {budget} | {key} | {result.withheld[key]:.3f} | "
                    f"{covered:.3f} | {result.width[key]['corrected']:.3f} |"
                ).replace("nan", "–")


def budget_section(rows: list[str]) -> list[str]:
    """The small-budget table of docs/judge_coverage.md."""
    return [
        "",
        "## Label budgets too small for a correction",
        "",
        (
            f"The same benchmarks with a judge of {SMALL_BUDGET_JUDGE} and few labels per "
            "target, spread over its 4 metrics by two raters each right on "
            f"{SMALL_BUDGET_RATERS:.0%} of items (a tie leaves an item without a human "
            "answer). A corrected value needs at least two labelled rows with a human answer "
            "in every metric of its group, on more than one base scenario "
            "(`stats.ppi.untrusted`); below that it is withheld with the reason and the labels "
            "that would give one, never reported as a rate without an interval. Withheld: the "
            "share of benchmarks without a corrected value; coverage and width: of the "
            "corrected intervals given."
        ),
        "",
        "| base / metric | labels / target | rate | withheld | coverage where given | width |",
        "|---:|---:|---|---:|---:|---:|",
        *rows,
    ]


# The design sweep: the designs of the coverage grid (`sweeps.grid`), at the
# default judge and a worse one, with labels.per_cell's default and a small budget that still
# gives a correction (`stats.ppi.MIN_LABELLED_PER_METRIC` is 2), rules lowered to 2 base
# scenarios per metric, from which the corrected rules are measured (`measured_rules`).
SWEEP_JUDGES = ("Se 0.8, Sp 0.9", "Se 0.6, Sp 0.6")
SWEEP_PER_CELL = (10, 3)
SWEEP = Sweep(benchmarks=300, seed=2025)
# Interval types of the sweep and the rule (`stats.interval_rules`) and side governing each.
SWEEP_GOVERNED_BY = {
    f"rate {TRUE_RATES['a']}": ("corrected rate", "pooled"),
    f"rate {TRUE_RATES['b']}": ("corrected rate", "pooled"),
    "metric rate (min)": ("corrected rate", "single"),
    "metric rate (max)": ("corrected rate", "single"),
    "difference a − b": ("corrected difference", "pooled"),
    f"gap at {TRUE_RATES['a']}": ("corrected difference", "pooled"),
    f"gap at {TRUE_RATES['b']}": ("corrected difference", "pooled"),
}
SWEEP_STATISTICS = tuple(SWEEP_GOVERNED_BY)
# A design counts towards an interval type's rule where the labels let it be reported in at
# least this share of the benchmarks (`sweep_measured_rules`).
MOSTLY_REPORTED = 0.5


@dataclass(frozen=True)
class SweepCell(MeasuredDesign):
    """One design of the sweep (judge and labels per target × metric after its metrics and
    base scenarios per metric) and, per interval type, its coverage among the benchmarks where
    it was reported (None: never) and the share of benchmarks where it was."""

    judge: str
    per_cell: int


def corrected_intervals(
    scores: pd.DataFrame, labels: pd.DataFrame, metrics: int, level: float
) -> dict:
    """Per interval type of the sweep: for each of its intervals (at confidence `level`) in
    this benchmark, whether it was reported and whether it covered the truth, as the package
    computes them (`corrected_rates` groups the same way): the targets' corrected rates, each
    metric's, the paired difference a − b and each target's demographic gap (no true gap)."""
    bootstrap = _bootstrap(scores)
    human, weight = human_passes(scores, label_items(labels))
    cluster, strata = bootstrap.codes(scores["base_id"]), bootstrap.strata_codes
    judge, valid = passes(scores), valid_mask(scores)

    def tables_of(columns: list[str]):
        group, keys = factorize(scores, columns)
        return [tuple(map(str, k)) for k in keys], ppi_tables(
            cluster, group, bootstrap.n_clusters, len(keys), judge, valid, human, weight
        )

    def judged(out, i: int, truth: float) -> tuple[bool, bool]:
        low, high = out.ci_low[i], out.ci_high[i]
        given = bool(np.isfinite(low))
        return given, given and bool(low <= truth <= high)

    found: dict[str, list[tuple[bool, bool]]] = {}
    keys, tables = tables_of(["target"])
    rates = ppi_rates(tables, strata, level)
    for target in ("a", "b"):
        found[f"rate {TRUE_RATES[target]}"] = [judged(rates, keys.index((target,)), TRUE_RATES[target])]
    diff = ppi_differences(tables, strata, [(keys.index(("a",)), keys.index(("b",)))], level)
    found["difference a − b"] = [judged(diff, 0, TRUE_RATES["a"] - TRUE_RATES["b"])]
    keys, tables = tables_of(["target", "metric_id"])
    rates = ppi_rates(tables, strata, level)
    offsets = np.linspace(-METRIC_SPREAD, METRIC_SPREAD, metrics)
    found["metric rate"] = [
        judged(rates, keys.index((target, f"m{m + 1:02d}")), TRUE_RATES[target] + offsets[m])
        for target in ("a", "b") for m in measured_metrics(metrics)
    ]
    keys, tables = tables_of(["target", DEMOGRAPHIC_PREFIX + "tone"])
    gaps = ppi_differences(
        tables, strata, [(keys.index((t, "x")), keys.index((t, "y"))) for t in ("a", "b")], level
    )
    for i, target in enumerate(("a", "b")):
        found[f"gap at {TRUE_RATES[target]}"] = [judged(gaps, i, 0.0)]
    return found


# The stress grid's judges (`sweeps.stress`): one that errs more on one target's conversations,
# one whose errors cluster by base scenario, and both; labels.per_cell's default of labels.
STRESS_JUDGES: dict[str, dict] = {
    "judge errs by target": {"what": "sensitivity/specificity 0.95/0.9 on target a's "
                                     "conversations, 0.65/0.8 on b's",
                             "by_target": {"a": (0.95, 0.9), "b": (0.65, 0.8)}},
    "judge errors cluster": {"what": "sensitivity 0.8, specificity 0.9, each base scenario's "
                                     "own (ICC 0.3)", "error_icc": 0.3},
    "both": {"what": "errs by target and clusters by scenario",
             "by_target": {"a": (0.95, 0.9), "b": (0.65, 0.8)}, "error_icc": 0.3},
}
STRESS_STATISTICS = ("corrected rate", "corrected difference", "corrected gap")
STRESS_GOVERNED_BY = {"corrected rate": ("corrected rate", "pooled"),
                      "corrected difference": ("corrected difference", "pooled"),
                      "corrected gap": ("corrected difference", "pooled")}


def stress_coverage(
    world: str, metrics: int, k: int, per_cell: int, *, benchmarks: int,
    confidence_level: float, rng: np.random.Generator,
) -> dict[str, tuple[float | None, float | None, float]]:
    """Per corrected statistic the results report (the targets' rates, their paired
    difference, their demographic gaps: the worst of each): its coverage (lowest = highest)
    and the share reported (call within `rules_lowered`)."""
    judge = {key: value for key, value in STRESS_JUDGES[world].items() if key != "what"}
    runs: dict[str, list] = {}
    for _ in range(benchmarks):
        scores, labels, _ = simulate(rng, metrics=metrics, base_per_metric=k,
                                     labelled_per_group=per_cell, rater_accuracy=1.0, **judge)
        for name, got in corrected_intervals(scores, labels, metrics,
                                             confidence_level).items():
            runs.setdefault(name, []).append(got)
    groups = {"corrected rate": [n for n in runs if n.startswith("rate ")],
              "corrected difference": ["difference a − b"],
              "corrected gap": [n for n in runs if n.startswith("gap ")]}
    out = {}
    for name, members in groups.items():
        columns = [(np.array([g[0][0] for g in runs[m]]), np.array([g[0][1] for g in runs[m]]))
                   for m in members]
        shares = [cov[rep].mean() if rep.any() else np.inf for rep, cov in columns]
        rep, cov = columns[int(np.argmin(shares))]
        value = float(cov[rep].mean()) if rep.any() else None
        out[name] = (value, value, float(rep.mean()))
    return out


def sweep_cell(
    metrics: int, base: int, judge: str, per_cell: int, *, benchmarks: int,
    confidence_level: float, rng: np.random.Generator,
) -> SweepCell:
    """One design of the sweep: `benchmarks` simulated benchmarks' corrected intervals and
    whether they cover (call within `rules_lowered` to measure below the rules)."""
    runs: dict[str, list] = {}
    for _ in range(benchmarks):
        scores, labels, _ = simulate(
            rng, metrics=metrics, base_per_metric=base, labelled_per_group=per_cell,
            rater_accuracy=1.0, **JUDGES[judge],
        )
        for name, got in corrected_intervals(scores, labels, metrics, confidence_level).items():
            runs.setdefault(name, []).append(got)
    coverage: dict[str, float | None] = {}
    reported: dict[str, float] = {}
    for name, got in runs.items():
        arrays = np.array(got, dtype=bool)  # (benchmarks, intervals, (reported, covered))
        columns = [(arrays[:, j, 0], arrays[:, j, 1]) for j in range(arrays.shape[1])]
        by_type = metric_ends(name, columns) if name == "metric rate" else {name: columns[0]}
        covered, given = coverage_shares(by_type)
        coverage.update(covered)
        reported.update(given)
    return SweepCell(metrics, base, judge, per_cell, coverage=coverage, reported=reported)


def sweep(
    run: Sweep = SWEEP, *, judges: tuple[str, ...] = SWEEP_JUDGES,
    per_cell: tuple[int, ...] = SWEEP_PER_CELL,
) -> list[SweepCell]:
    """Every design of the sweep, each from its own seeded stream, measured below the rules."""
    return sweep_designs(sweep_cell, run, judges, per_cell)


def sweep_rule_of(name: str) -> int:
    """The base scenarios per metric the package's rule for sweep interval type `name` needs."""
    statistic, side = SWEEP_GOVERNED_BY[name]
    return getattr(interval_rules.RULES[statistic], side)


def sweep_measured_rules(cells: list[SweepCell], benchmarks: int) -> dict[str, int | None]:
    """Per interval type, the rule the sweep measures (`common.measured_rules`) over
    the designs where the labels let it be reported in at least half of the benchmarks: a
    label budget too small for a group (a demographic value's share of 3 labels per cell)
    withholds the corrected value whatever the design (`stats.ppi.untrusted`), and coverage
    over a few benchmarks says nothing about the design."""
    return {
        name: measured_rules(
            [c for c in cells if c.reported[name] >= MOSTLY_REPORTED], benchmarks, (name,)
        )[name]
        for name in SWEEP_STATISTICS
    }


def sweep_section(cells: list[SweepCell], benchmarks: int, seconds: float) -> list[str]:
    """The sweep's part of docs/judge_coverage.md: the rules it measures, the lowest and
    highest coverage per interval type and design, and every cell."""
    error = monte_carlo_error(benchmarks, 0.95)
    sizes = sorted({c.base_per_metric for c in cells})
    return [
        "",
        "## Rules: fewest base scenarios per metric for a corrected interval",
        "",
        (
            f"The design sweep (`sweep`, in {seconds:.0f} s on {len(cells)} designs): "
            f"{' or '.join(map(str, sorted({c.metrics for c in cells})))} metrics × base "
            f"scenarios per metric {', '.join(map(str, sizes))}, 2 variants × 2 samples, judges "
            f"{' and '.join(sorted({c.judge for c in cells}))}, "
            f"{' or '.join(map(str, sorted({c.per_cell for c in cells})))} labels per target × "
            "metric (`labels.per_cell`; its default and a small budget that still gives a "
            f"correction), raters always right; {benchmarks} simulated benchmarks per design, "
            f"Monte-Carlo standard error of a coverage near 0.95: ±{error:.3f}. The intervals "
            "are the package's own (`stats.ppi`, grouped as `corrected_rates` groups them), "
            "with the rules' withholding lowered to 2 base scenarios per metric "
            "(`rules_lowered`), so the designs below each rule are measured too; the label "
            "budget's own withholding (`stats.ppi.untrusted`) stays. \"measured\": the "
            f"smallest design from which no design at it or larger covers less than {LOW} by "
            f"more than two Monte-Carlo standard errors (±{2 * error:.3f}), among the designs "
            f"where the labels let the interval be reported in at least {MOSTLY_REPORTED:.0%} "
            "of the benchmarks (a demographic value's share of 3 labels per cell is too "
            "small for a correction in most; the share is in brackets), as for the other "
            "intervals ([interval_coverage.md](interval_coverage.md)); \"package\": what "
            "`pressurebench.stats.interval_rules` requires (`CORRECTED_RATE`, "
            "`CORRECTED_DIFFERENCE`), never less. Metric rate (min/max): the metric with the "
            "lowest and the highest coverage (of 20 metrics, four are measured); gap: a "
            "target's demographic gap, no true gap."
        ),
        "",
        *rules_table(SWEEP_STATISTICS, SWEEP_GOVERNED_BY, sweep_measured_rules(cells, benchmarks),
                     _package, first="interval type"),
        *by_design(cells, SWEEP_STATISTICS, rule_of=sweep_rule_of, shown=_shown_at,
                   over="judges × label budgets (lowest share reported)",
                   first="interval type", withheld="withheld: {}"),
        "",
        "### Every design: coverage (share reported)",
        "",
        *table(["metrics", "base / metric", "judge", "labels / cell", *SWEEP_STATISTICS],
               ([c.metrics, c.base_per_metric, c.judge, c.per_cell,
                 *(("none" if c.coverage[n] is None else f"{c.coverage[n]:.3f}")
                   + f" ({c.reported[n]:.2f})" for n in SWEEP_STATISTICS)] for c in cells),
               align=["---:", "---:", "---", "---:", *["---:"] * len(SWEEP_STATISTICS)]),
    ]


def _package(name: str) -> int | str:
    """What the package requires for sweep interval type `name`."""
    statistic, side = SWEEP_GOVERNED_BY[name]
    if side == "single" and interval_rules.RULES[statistic].single_unsupported:
        return "none (withheld at every design)"
    return sweep_rule_of(name)


def _shown_at(cells: list[SweepCell], name: str) -> str:
    """The lowest and highest coverage of `name` in `cells`, and its lowest share reported."""
    shown = [value for c in cells if (value := c.coverage[name]) is not None]
    text = "none" if not shown else f"{min(shown):.3f}–{max(shown):.3f}"
    return text + f" ({min(c.reported[name] for c in cells):.2f})"


def document(
    rows: list[str], replications: int, small: list[str] | None = None,
    swept: list[str] | None = None,
) -> str:
    """docs/judge_coverage.md: what was simulated, the sweep's rules, then the grid's rows."""
    error = np.sqrt(0.95 * 0.05 / replications)
    lines = [
        "# Coverage of judge-corrected pass rates (prediction-powered inference)",
        "",
        (
            "Written by `make judge-coverage` (`python -m pressurebench.stats.sweeps judge`, seed "
            f"11): {replications} simulated benchmarks per row, Monte-Carlo standard error of "
            f"a coverage of 0.95: {error:.3f}. Two targets with true pass rates "
            f"{TRUE_RATES['a']} and {TRUE_RATES['b']} (and their paired difference a − b), 4 "
            "metrics (alternately positive and negative) × base scenarios per metric × 2 "
            "variants × 2 samples, Beta scenario effects (ICC 1/9). The judge's verdicts have "
            "the given sensitivity and specificity (per metric m01–m04 in the last judge); two "
            "raters, always right, label the given number of items per target spread over its "
            "metrics (every row once the budget exceeds them). Coverage of the 95% interval "
            "and its mean width where given: corrected (PPI++, `stats.ppi`), the labelled rows "
            "alone (λ = 0) and the raw judged rate; λ is the mean power tuning."
        ),
        *(swept or []),
        "",
        "## Label budgets, judge qualities and designs",
        "",
        "| base / metric | judge | labels / target | rate | corrected | width "
        + "| labelled only | width | raw | width | λ |",
        "|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        *rows,
        *(budget_section(small) if small else []),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=400)
    parser.add_argument(
        "--judge", action="append", choices=list(JUDGES), help="only these judges (repeatable)"
    )
    parser.add_argument("--base", type=int, nargs="+", default=list(BASES),
                        help="base scenarios per metric")
    parser.add_argument("--out", help="write the markdown here instead of printing it")
    parser.add_argument("--small-budgets-only", action="store_true",
                        help="only the table of label budgets too small for a correction")
    parser.add_argument("--sweep-benchmarks", type=int, default=SWEEP.benchmarks,
                        help="simulated benchmarks per design of the sweep (0: no sweep)")
    parser.add_argument("--sweep-only", action="store_true",
                        help="only the sweep's rules and tables")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes of the sweep")
    args = parser.parse_args(argv)
    swept: list[str] = []
    if args.sweep_benchmarks:
        start = time.perf_counter()
        cells = sweep(replace(SWEEP, benchmarks=args.sweep_benchmarks, jobs=args.jobs))
        swept = sweep_section(cells, args.sweep_benchmarks, time.perf_counter() - start)
    if args.sweep_only:
        text = "\n".join(swept) + "\n"
    else:
        judges = {k: v for k, v in JUDGES.items() if not args.judge or k in args.judge}
        small = list(budget_rows(args.replications, SMALL_BUDGETS, SMALL_BUDGET_BASES))
        if args.small_budgets_only:
            text = "\n".join(budget_section(small)) + "\n"
        else:
            rows = list(grid_rows(args.replications, BUDGETS, judges, args.base))
            text = document(rows, args.replications, small, swept)
    write_page(text, args.out, end="")


if __name__ == "__main__":
    main()
