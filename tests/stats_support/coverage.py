"""How often the intervals contain the true pass rate: the check that they are honest.

Simulates many benchmarks with a known true rate and strong within-scenario
correlation (`synthetic_scores`), and counts how often each interval covers
the truth: the stratified cluster bootstrap as used (n_h − 1 draws), the
textbook one (n_h draws), and a naive bootstrap that resamples rows as if they
were independent. Run `cd tests && python -m stats_support.coverage` to print the
figures.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pressurebench.stats.bootstrap import ClusterBootstrap, Draws
from pressurebench.stats.estimates import RateEstimate
from pressurebench.stats.rates import rate_estimate

from .synthetic import synthetic_scores

TRUE_RATE = 0.7
# Six metrics of twelve base scenarios, three demographic variants each, three
# samples per variant: 648 rows with an intra-scenario correlation of 1/3.
DESIGN = {
    "metrics": 6,
    "base_per_metric": 12,
    "axes": {"persona": ["p1", "p2", "p3"]},
    "samples": 3,
    "concentration": 2.0,
    "metric_spread": 0.15,
}


@dataclass(frozen=True)
class Coverage:
    """Shares of simulated benchmarks whose interval contains the true rate."""

    benchmarks: int
    resamples: int
    confidence_level: float
    cluster: float
    cluster_n_draws: float
    naive_rows: float


def _covers(estimate: RateEstimate, truth: float) -> bool:
    return estimate.ci_low is not None and estimate.ci_low <= truth <= estimate.ci_high


def coverage_study(
    benchmarks: int = 1000,
    *,
    resamples: int = 500,
    confidence_level: float = 0.95,
    seed: int = 2024,
) -> Coverage:
    """Coverage of the cluster bootstrap (both draw counts) and of the naive row bootstrap."""
    data_seed, *boot_seeds = np.random.SeedSequence(seed).spawn(4)
    rng = np.random.default_rng(data_seed)
    boot_rngs = [np.random.default_rng(s) for s in boot_seeds]
    hits = np.zeros(3)
    for _ in range(benchmarks):
        scores = synthetic_scores(target_rates={"target": TRUE_RATE}, seed=rng, **DESIGN)
        rows = scores.assign(base_id=[f"row{i}" for i in range(len(scores))], metric_id="all")
        # rows stand in as clusters of one in a single stratum: the naive bootstrap
        plans: list[tuple[pd.DataFrame, Draws]] = [(scores, "n-1"), (scores, "n"), (rows, "n")]
        for i, ((frame, draws), boot_rng) in enumerate(zip(plans, boot_rngs)):
            bootstrap = ClusterBootstrap.from_scores(
                frame, resamples=resamples, seed=int(boot_rng.integers(2**63)), draws=draws
            )
            estimate = rate_estimate(frame, bootstrap, confidence_level=confidence_level)
            hits[i] += _covers(estimate, TRUE_RATE)
    cluster, cluster_n_draws, naive_rows = hits / benchmarks
    return Coverage(
        benchmarks=benchmarks,
        resamples=resamples,
        confidence_level=confidence_level,
        cluster=float(cluster),
        cluster_n_draws=float(cluster_n_draws),
        naive_rows=float(naive_rows),
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--benchmarks", type=int, default=1000)
    parser.add_argument("--resamples", type=int, default=500)
    parser.add_argument("--confidence-level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args(argv)
    result = coverage_study(
        args.benchmarks,
        resamples=args.resamples,
        confidence_level=args.confidence_level,
        seed=args.seed,
    )
    print(
        f"coverage of nominal {result.confidence_level:.0%} intervals over {result.benchmarks} "
        f"simulated benchmarks ({result.resamples} resamples each, true rate {TRUE_RATE}):"
    )
    print(f"  stratified cluster bootstrap (n_h - 1 draws, as used): {result.cluster:.3f}")
    print(f"  stratified cluster bootstrap (n_h draws):              {result.cluster_n_draws:.3f}")
    print(f"  naive row bootstrap:                                   {result.naive_rows:.3f}")


if __name__ == "__main__":
    main()
