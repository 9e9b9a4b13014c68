"""How often judge-corrected pass rates cover the true pass rate, and raw ones do not.

Simulates benchmarks of clustered score rows (`synthetic.synthetic_scores`:
base scenarios with Beta-distributed pass probabilities around each metric's
mean, so the true pass rate of a target is known) whose verdicts come from a
judge with planted sensitivity and specificity, not from the truth. Two
raters, each right with a fixed probability, label a seeded sample of items
per target × metric; their disagreements are ties and have no reference.
Run `cd tests && python -m stats_support.judge_coverage` to print the
coverage of the corrected and the raw overall rates per target.
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
    metric_spread: float = METRIC_SPREAD,
    concentration: float = CONCENTRATION,
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
        samples=2,
        metric_spread=metric_spread,
        concentration=concentration,
        seed=rng,
    )
    positive = (truth["metric_type"] == "positive").to_numpy()
    present = truth["passed"].astype(bool).to_numpy() == positive
    u = rng.uniform(size=len(truth))
    judged = np.where(present, u < sensitivity, u >= specificity)
    scores = truth.assign(
        passed=(judged == positive).astype(object),
        conv_id=[f"c{i}" for i in range(len(truth))],
        scenario_metric_id=truth["metric_id"],
    )
    sample = (
        scores.assign(present_true=present, judged=judged)
        .groupby(["target", "metric_id"], group_keys=False)
        .sample(n=labelled_per_group, random_state=rng)
    )
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


class Coverage(NamedTuple):
    """Per target: shares of simulated benchmarks whose interval contains the true rate."""

    corrected: dict[str, float]  # among benchmarks that got a corrected interval
    raw: dict[str, float]
    withheld: dict[str, float]  # share of benchmarks without a corrected interval
    replications: int


def coverage(
    replications: int = 600, *, resamples: int = 500, seed: int = 11, **design
) -> Coverage:
    """Simulate `replications` benchmarks (`simulate(**design)`) and count covering intervals."""
    rng = np.random.default_rng(seed)
    hits = {t: [0, 0, 0] for t in TRUE_RATES}  # corrected covers, raw covers, withheld
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
    return Coverage(
        corrected={t: h[0] / max(replications - h[2], 1) for t, h in hits.items()},
        raw={t: h[1] / replications for t, h in hits.items()},
        withheld={t: h[2] / replications for t, h in hits.items()},
        replications=replications,
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
    args = parser.parse_args()
    error = np.sqrt(0.95 * 0.05 / args.replications)
    print(
        f"true pass rates {TRUE_RATES}, judge sensitivity {SENSITIVITY}, specificity "
        f"{SPECIFICITY}, {args.replications} benchmarks, {args.resamples} resamples "
        f"(Monte-Carlo standard error of a coverage of 0.95: {error:.3f})"
    )
    for labelled in args.labelled:
        result = coverage(args.replications, resamples=args.resamples, labelled_per_group=labelled)
        for target in TRUE_RATES:
            print(
                f"{labelled:3d} labelled per target x metric, target {target}: corrected "
                f"coverage {result.corrected[target]:.3f} where given (withheld in "
                f"{result.withheld[target]:.3f}), raw coverage {result.raw[target]:.3f}"
            )


if __name__ == "__main__":
    main()
