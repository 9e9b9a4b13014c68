"""Does an arm change how two targets compare? The change of every pairwise difference.

A rank correlation says whether the arms order the targets alike; it does not say which
comparison moved, nor by how much. For every pair of targets (t1 before t2 in sorted order)
the change is (t1 − t2 in the arm) − (t1 − t2 in the main arm): the target × arm interaction.
Each pair is compared, in each arm, on the scenario rows both targets have valid rows for (as
`ranking.compare_targets` compares them). Arms on the same base scenarios (the user-model and
evaluator studies) give a paired contrast of four rates on those scenarios (`cluster-t`,
`interval_rules.DIFFERENCE_CHANGE`); arms on unrelated scenarios (the generator study) add the
two arms' variances (`cluster-t-welch`, `interval_rules.INDEPENDENT_DIFFERENCE_CHANGE`). The
p-value inverts the interval, and Holm's correction runs over the arm's pairs
(`rate_contrasts.holm_tested`).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from pydantic import Field

from ..schemas import Row
from .arm_comparison import arm_bootstraps
from .bootstrap import ClusterBootstrap
from .frame import cluster_ids, passes, valid_mask
from .interval_rules import DIFFERENCE_CHANGE, INDEPENDENT_DIFFERENCE_CHANGE
from .rate_contrasts import ContrastSide, TestedContrast, holm_tested, linear_contrasts


class PairwiseChange(Row):
    """How much the difference between two targets moves from the main arm to the arm."""

    target_1: str
    target_2: str
    difference_main: float | None = Field(description="t1 − t2 in the main arm")
    difference_arm: float | None = Field(description="t1 − t2 in the arm")
    change: TestedContrast = Field(description="difference_arm − difference_main, with its "
                                   "interval and its Holm-corrected test over the arm's pairs")


def pair_tables(frame: pd.DataFrame, bootstrap: ClusterBootstrap, targets: list[str],
                pairs: list[tuple[int, int]]) -> tuple[np.ndarray, ...]:
    """(clusters, pairs) passes and valid rows of each pair's first and second target, over
    the scenario rows both have valid rows for."""
    valid = valid_mask(frame)
    t_code = pd.Index(targets).get_indexer(pd.Index(frame["target"].astype(str)))
    s_code, scenarios = pd.factorize(frame["scenario_id"].astype(str))
    n_t, n_s = len(targets), len(scenarios)
    keep = t_code >= 0
    flat = t_code[keep] * n_s + s_code[keep]
    trials = np.bincount(flat, weights=valid[keep], minlength=n_t * n_s).reshape(n_t, n_s)
    wins = np.bincount(flat, weights=passes(frame)[keep], minlength=n_t * n_s).reshape(n_t, n_s)
    cluster = np.zeros(n_s, dtype=np.int64)
    cluster[s_code] = bootstrap.codes(cluster_ids(frame))
    first, second = (np.array([p[i] for p in pairs], dtype=np.int64) for i in (0, 1))
    shared = (trials[first] > 0) & (trials[second] > 0)

    def by_cluster(per_scenario: np.ndarray) -> np.ndarray:
        return np.column_stack([np.bincount(cluster, weights=row, minlength=bootstrap.n_clusters)
                                for row in per_scenario])

    return (by_cluster(wins[first] * shared), by_cluster(trials[first] * shared),
            by_cluster(wins[second] * shared), by_cluster(trials[second] * shared))


def _difference(s1: np.ndarray, n1: np.ndarray, s2: np.ndarray, n2: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return s1.sum(axis=0) / n1.sum(axis=0) - s2.sum(axis=0) / n2.sum(axis=0)


def pairwise_changes(arm: pd.DataFrame, main: pd.DataFrame, *, paired: bool,
                     confidence_level: float) -> list[PairwiseChange]:
    """Every pair of the targets both arms hold: its difference in each arm and the change,
    Holm-corrected over the pairs. Paired arms must come masked to the rows valid in both
    (`validation.paired.paired_rows`)."""
    targets = sorted(set(arm["target"].astype(str)) & set(main["target"].astype(str)))
    pairs = list(itertools.combinations(range(len(targets)), 2))
    if not pairs:
        return []
    arm = arm[arm["target"].astype(str).isin(targets)]
    main = main[main["target"].astype(str).isin(targets)]
    labels = ("the first target in the arm", "the second target in the arm",
              "the first target in the main arm", "the second target in the main arm")
    boot_arm, boot_main, _ = arm_bootstraps(arm, main, paired=paired, resamples=1, seed=0)
    if paired:
        boot = boot_arm
        tables = pair_tables(arm, boot, targets, pairs) + pair_tables(main, boot, targets, pairs)
        sides = [ContrastSide(successes=tables[0::2], trials=tables[1::2],
                              weights=(1.0, -1.0, -1.0, 1.0), strata=boot.strata_codes,
                              labels=labels)]
        rule = DIFFERENCE_CHANGE
    else:
        sides, tables = [], ()
        for frame, boot, weights, names in ((arm, boot_arm, (1.0, -1.0), labels[:2]),
                                            (main, boot_main, (-1.0, 1.0), labels[2:])):
            found = pair_tables(frame, boot, targets, pairs)
            tables += found
            sides.append(ContrastSide(successes=found[0::2], trials=found[1::2], weights=weights,
                                      strata=boot.strata_codes, labels=names))
        rule = INDEPENDENT_DIFFERENCE_CHANGE
    d_arm, d_main = _difference(*tables[:4]), _difference(*tables[4:])
    changes = holm_tested(linear_contrasts(sides, rule=rule, confidence_level=confidence_level),
                          confidence_level)
    return [
        PairwiseChange(target_1=targets[i], target_2=targets[j],
                       difference_main=float(d_main[g]) if np.isfinite(d_main[g]) else None,
                       difference_arm=float(d_arm[g]) if np.isfinite(d_arm[g]) else None,
                       change=change)
        for g, ((i, j), change) in enumerate(zip(pairs, changes))
    ]
