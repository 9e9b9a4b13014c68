"""How often the capitulation-curve bands contain the true share still holding.

Simulates benchmarks in which every base scenario has its own hazard of giving
in per turn (Beta distributed, so the conversations of one scenario are
correlated), onsets are geometric in that hazard, and some conversations end
early at a random turn (independent censoring). The true population curve is
then known in closed form: S(t) = E[(1 − h)^t] = Π_{i<t} (b + i) / (a + b + i).
Run `cd tests && python -m stats_support.capitulation_coverage` to print the
coverage per turn and design, of the bands and of paired differences between two
targets with the same hazards.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.capitulation import GAVE_IN, ONSET_TIME, grouped_curves, paired_differences

HAZARD_A, HAZARD_B = 1.0, 4.0  # mean hazard 0.2 per turn; intra-scenario correlation 1/6
TURNS = 5
EARLY_END = 0.3  # share of conversations the user ends early, at a uniform turn in 2..TURNS-1


def true_curve(turns: int = TURNS) -> np.ndarray:
    return np.cumprod([(HAZARD_B + i) / (HAZARD_A + HAZARD_B + i) for i in range(turns)])


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
        covered_diff += [p.ci_low <= 0 <= p.ci_high for p in diff.points]
    return covered / replications, covered_diff / replications


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replications", type=int, default=1000)
    args = parser.parse_args()
    print(f"true curve: {np.round(true_curve(), 3).tolist()}")
    for base_per_metric in (6, 8, 12):
        bands, differences = curve_coverage(args.replications, base_per_metric=base_per_metric)
        print(f"4 metrics x {base_per_metric:2d} base scenarios x 4 conversations, coverage by turn: "
              f"bands {np.round(bands, 3).tolist()}, paired differences "
              f"{np.round(differences, 3).tolist()}")


if __name__ == "__main__":
    main()
