"""How often judge-corrected pass rates cover the true pass rate, and raw ones do not.

Simulates benchmarks of clustered score rows (`synthetic.synthetic_scores`:
base scenarios with Beta-distributed pass probabilities around each metric's
mean, so the true pass rate of a target is known) whose verdicts come from a
judge with planted sensitivity and specificity, not from the truth. Two
raters, each right with a fixed probability, label a seeded sample of items
per target × metric; their disagreements are ties and have no reference.

With `disagreement_rate` > 0 the verdicts come from a judge panel that splits
on that share of rows, and on those rows the verdict is right only with
`disagreement_accuracy`; the sample over-samples them as `labels export`
does (`disagreement_share` of each cell, uniform within each stratum) and
gives each labelled item its `stratum_weight`. `weighted=False` drops the
weights (every item weighs 1), the analysis that over-sampling biases.

Run `cd tests && python -m stats_support.judge_coverage` to print the
coverage of the corrected and the raw rates, overall and per metric.
"""

from __future__ import annotations

import argparse
from typing import NamedTuple

import numpy as np
import pandas as pd

from pressurebench.stats.judge_validity import PANEL, judge_validity
from stats_support.synthetic import synthetic_scores

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
    sensitivity: float = SENSITIVITY,
    specificity: float = SPECIFICITY,
    labelled_per_group: int = 10,
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
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Score rows judged by an imperfect judge, human labels of a sample, and the panel verdicts.

    4 metrics × 12 base scenarios × 2 variants × 2 samples per target by
    default; metric types alternate positive and negative.
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
    u = rng.uniform(size=len(truth))
    judged = np.where(present, u < sensitivity, u >= specificity)
    disagrees = rng.uniform(size=len(truth)) < disagreement_rate
    split_right = rng.uniform(size=len(truth)) < disagreement_accuracy
    judged = np.where(disagrees, np.where(split_right, present, ~present), judged)
    scores = truth.assign(
        passed=(judged == positive).astype(object),
        conv_id=[f"c{i}" for i in range(len(truth))],
        scenario_metric_id=truth["metric_id"],
    )
    judged_rows = scores.assign(present_true=present, judged=judged, disagrees=disagrees)
    sample = pd.concat(
        draw_cell(cell, labelled_per_group, disagreement_share, rng)
        for _, cell in judged_rows.groupby(["target", "metric_id"])
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
    return pd.concat(
        [
            stratum.sample(n=n, random_state=rng).assign(stratum_weight=len(stratum) / n)
            for stratum, n in ((disagree, n_disagree), (agree, n_agree))
            if n
        ]
    )


class Coverage(NamedTuple):
    """Shares of simulated benchmarks whose interval contains the true rate.

    Overall per target, and per target × metric cell (`by_metric`, keyed
    "target/metric"): a corrected interval's coverage counts the benchmarks
    that got one; `withheld` is the share that did not.
    """

    corrected: dict[str, float]
    raw: dict[str, float]
    withheld: dict[str, float]
    by_metric_corrected: dict[str, float]
    by_metric_withheld: dict[str, float]
    replications: int


def true_metric_rates(metrics: int, metric_spread: float) -> dict[str, float]:
    """The true pass rate of every "target/metric" cell: `synthetic_scores` spreads metric means
    evenly around the target's rate."""
    offsets = np.linspace(-metric_spread, metric_spread, metrics) if metrics > 1 else [0.0]
    return {
        f"{t}/m{m + 1:02d}": rate + offset
        for t, rate in TRUE_RATES.items()
        for m, offset in enumerate(offsets)
    }


def coverage(
    replications: int = 600, *, resamples: int = 500, seed: int = 11, **design
) -> Coverage:
    """Simulate `replications` benchmarks (`simulate(**design)`) and count covering intervals."""
    rng = np.random.default_rng(seed)
    cells = true_metric_rates(design.get("metrics", 4), design.get("metric_spread", METRIC_SPREAD))
    hits = {t: [0, 0, 0] for t in TRUE_RATES}  # corrected covers, raw covers, withheld
    cell_hits = {c: [0, 0] for c in cells}  # corrected covers, withheld
    for r in range(replications):
        scores, labels, verdicts = simulate(rng, **design)
        result = judge_validity(scores, labels, verdicts, resamples=resamples, seed=seed + r)
        for target, truth in TRUE_RATES.items():
            overall = result.corrected[target].overall
            if overall.ci_low is None:
                hits[target][2] += 1
            else:
                hits[target][0] += overall.ci_low <= truth <= overall.ci_high
            raw = overall.raw
            hits[target][1] += raw.ci_low is not None and raw.ci_low <= truth <= raw.ci_high
        for cell, truth in cells.items():
            target, metric = cell.split("/")
            rate = result.corrected[target].by_metric[metric]
            if rate.ci_low is None:
                cell_hits[cell][1] += 1
            else:
                cell_hits[cell][0] += rate.ci_low <= truth <= rate.ci_high
    return Coverage(
        corrected={t: h[0] / max(replications - h[2], 1) for t, h in hits.items()},
        raw={t: h[1] / replications for t, h in hits.items()},
        withheld={t: h[2] / replications for t, h in hits.items()},
        by_metric_corrected={
            c: h[0] / (replications - h[1]) if h[1] < replications else float("nan")
            for c, h in cell_hits.items()
        },
        by_metric_withheld={c: h[1] / replications for c, h in cell_hits.items()},
        replications=replications,
    )


def report(result: Coverage, label: str) -> None:
    for target in TRUE_RATES:
        print(
            f"{label}, target {target}: corrected coverage {result.corrected[target]:.3f} where "
            f"given (withheld in {result.withheld[target]:.3f}), raw coverage "
            f"{result.raw[target]:.3f}"
        )
    given = [c for c in result.by_metric_corrected.values() if not np.isnan(c)]
    withheld = result.by_metric_withheld.values()
    spread = f"{min(given):.3f}-{max(given):.3f} where given" if given else "never given"
    print(
        f"{label}, per target x metric ({len(withheld)} cells): corrected coverage {spread} "
        f"(withheld in {min(withheld):.3f}-{max(withheld):.3f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument(
        "--labelled",
        type=int,
        nargs="+",
        default=[10, 20, 40],
        help="labelled items per target x metric (one run each)",
    )
    parser.add_argument("--base", type=int, default=12, help="base scenarios per metric")
    parser.add_argument(
        "--panel",
        action="store_true",
        help="a panel splitting on 15%% of rows (right on half of them), 8 samples, half of "
        "each cell's labels drawn from its splits; weighted and unweighted",
    )
    args = parser.parse_args()
    error = np.sqrt(0.95 * 0.05 / args.replications)
    print(
        f"true pass rates {TRUE_RATES}, judge sensitivity {SENSITIVITY}, specificity "
        f"{SPECIFICITY}, {args.base} base scenarios per metric, {args.replications} benchmarks, "
        f"{args.resamples} resamples "
        f"(Monte-Carlo standard error of a coverage of 0.95: {error:.3f})"
    )
    designs = [({"base_per_metric": args.base}, "")]
    if args.panel:
        designs = [
            ({**PANEL_DESIGN, "base_per_metric": args.base, "weighted": True}, ", panel, weighted"),
            (
                {**PANEL_DESIGN, "base_per_metric": args.base, "weighted": False},
                ", panel, unweighted",
            ),
        ]
    for labelled in args.labelled:
        for design, name in designs:
            result = coverage(
                args.replications, resamples=args.resamples, labelled_per_group=labelled, **design
            )
            report(result, f"{labelled:3d} labelled per target x metric{name}")


if __name__ == "__main__":
    main()
