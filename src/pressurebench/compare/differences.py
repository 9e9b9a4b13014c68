"""The change from run A to run B per target and group, with the intervals validation arms use.

Two runs of a study are two arms in the sense of `stats.arm_comparison`: where they
played the same base scenarios the difference is paired (each scenario's
contribution to B − A is taken within the scenario, so the conversations of one
scenario are matched and what makes it hard in both runs cancels: *cluster-t*,
paired); otherwise the runs are independent samples of scenarios (*cluster-t,
Welch df*). Both come from `stats.arm_comparison.ArmTables.design` and
`stats.differences.estimate_differences`, the code behind the validation
studies' contrasts, and both are withheld with the reason where the design is
too small, as every interval is. Each run's own rate in a group is
`stats.rates.estimate_rates` on its rows, as in its results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from ..schemas import Row, Scenario
from ..stats.arm_comparison import ArmTables, arm_bootstraps
from ..stats.bootstrap import ClusterBootstrap, check_confidence_level
from ..stats.differences import estimate_differences
from ..stats.estimates import Difference, RateEstimate
from ..stats.frame import DEMOGRAPHIC_PREFIX, check_scores, cluster_ids, demographic_axes
from ..stats.grouping import pass_tables
from ..stats.rates import estimate_rates

Kind = Literal["overall", "metric type", "metric", "demographic"]
OVERALL = "all"


class GroupChange(Row):
    """One target's rate in a group in both runs, and the change B − A with its interval."""

    target: str
    kind: Kind
    group: str = Field(description="'all', a metric type, a metric id or '<axis>=<value>'")
    rate_a: RateEstimate
    rate_b: RateEstimate
    change: Difference = Field(description="rate in B minus rate in A (`a` names run B)")


class Pairing(Row):
    """Whether the runs' differences are paired by scenario, and why."""

    paired: bool
    reason: str


def scenario_pairing(
    frame_a: pd.DataFrame,
    frame_b: pd.DataFrame,
    scenarios_a: Sequence[Scenario] | None,
    scenarios_b: Sequence[Scenario] | None,
) -> Pairing:
    """Paired when both runs judged the same base scenarios and every row of them is identical.

    Ids alone cannot tell: a regenerated benchmark reuses `m01_s001` for another
    scenario, so the scenario rows themselves are compared.
    """
    for name, rows in (("A", scenarios_a), ("B", scenarios_b)):
        if rows is None:
            return Pairing(paired=False, reason=f"run {name} has no scenarios file to match")
    assert scenarios_a is not None and scenarios_b is not None, "returned above without them"
    bases_a, bases_b = set(cluster_ids(frame_a)), set(cluster_ids(frame_b))
    if bases_a != bases_b:
        return Pairing(
            paired=False,
            reason=f"the runs judged different base scenarios ({len(bases_a - bases_b)} only in A, "
            f"{len(bases_b - bases_a)} only in B)",
        )
    rows_a = {s.id: s for s in scenarios_a if s.base_id in bases_a}
    rows_b = {s.id: s for s in scenarios_b if s.base_id in bases_b}
    if rows_a.keys() != rows_b.keys():
        return Pairing(paired=False, reason="the runs' scenario rows (demographic variants) differ")
    changed = sorted(sid for sid in rows_a if rows_a[sid] != rows_b[sid])
    if changed:
        return Pairing(
            paired=False,
            reason=f"{len(changed)} scenario row(s) differ between the runs (first: {changed[0]})",
        )
    return Pairing(
        paired=True,
        reason=f"both runs played the same {len(bases_a)} base scenarios (identical scenario rows)",
    )


def _aligned(
    frame: pd.DataFrame, boot: ClusterBootstrap, groupings: list[list[str]], keys: list[list[tuple]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(clusters, groups) passes and valid rows and per-group errors, columns in `keys` order."""
    tables = pass_tables(frame, boot.codes(cluster_ids(frame)), boot.n_clusters, groupings)
    successes = np.zeros((boot.n_clusters, sum(map(len, keys))))
    trials = np.zeros_like(successes)
    errors = np.zeros(successes.shape[1])
    found_offset, out = 0, 0
    for grouping_keys, wanted in zip(tables.keys, keys):
        where = {key: found_offset + i for i, key in enumerate(grouping_keys)}
        for key in wanted:
            if key in where:
                successes[:, out] = tables.successes[:, where[key]]
                trials[:, out] = tables.trials[:, where[key]]
                errors[out] = tables.errors[where[key]]
            out += 1
        found_offset += len(grouping_keys)
    return successes, trials, errors


def _label(kind: Kind, column: str, key: tuple) -> str:
    if kind == "overall":
        return OVERALL
    value = str(key[1])
    return f"{column[len(DEMOGRAPHIC_PREFIX):]}={value}" if kind == "demographic" else value


def compare_frames(
    frame_a: pd.DataFrame,
    frame_b: pd.DataFrame,
    *,
    paired: bool,
    names: tuple[str, str] = ("A", "B"),
    confidence_level: float = 0.95,
) -> list[GroupChange]:
    """Every group of every target both runs scored: overall, per metric type, per metric and per
    demographic value, each with both runs' rates and the change B − A.

    `frame_a` and `frame_b` are score frames (`stages.aggregate.scores_frame`).
    A group one run has no valid rows in keeps its row, with no change and the
    reason; a target only one run has is left out (the caller lists it).
    """
    check_scores(frame_a)
    check_scores(frame_b)
    check_confidence_level(confidence_level)
    targets = sorted(set(frame_a["target"].astype(str)) & set(frame_b["target"].astype(str)))
    frame_a = frame_a[frame_a["target"].astype(str).isin(targets)].assign(
        target=lambda f: f["target"].astype(str)
    )
    frame_b = frame_b[frame_b["target"].astype(str).isin(targets)].assign(
        target=lambda f: f["target"].astype(str)
    )
    axes = list(dict.fromkeys(demographic_axes(frame_a) + demographic_axes(frame_b)))
    for frame in (frame_a, frame_b):
        for axis in axes:
            if DEMOGRAPHIC_PREFIX + axis not in frame.columns:
                frame[DEMOGRAPHIC_PREFIX + axis] = None
    kinds: list[tuple[Kind, list[str]]] = [
        ("overall", ["target"]),
        ("metric type", ["target", "metric_type"]),
        ("metric", ["target", "metric_id"]),
        *(("demographic", ["target", DEMOGRAPHIC_PREFIX + axis]) for axis in axes),
    ]
    groupings = [columns for _, columns in kinds]
    keys = [
        sorted(
            set(map(tuple, frame_a[columns].dropna().to_numpy().tolist()))
            | set(map(tuple, frame_b[columns].dropna().to_numpy().tolist()))
        )
        for columns in groupings
    ]
    # Only the bootstraps' clusters and strata are used: cluster-t intervals draw no replicates.
    boot_a, boot_b, _ = arm_bootstraps(frame_a, frame_b, paired=paired, resamples=1, seed=0)
    s_a, t_a, e_a = _aligned(frame_a, boot_a, groupings, keys)
    s_b, t_b, e_b = _aligned(frame_b, boot_b, groupings, keys)
    rates_a = estimate_rates(boot_a, s_a, t_a, e_a, confidence_level)
    rates_b = estimate_rates(boot_b, s_b, t_b, e_b, confidence_level)
    design, method = ArmTables(boot_b, boot_a, (s_b, t_b), (s_a, t_a), paired).design()
    n_groups = s_a.shape[1]
    changes = estimate_differences(
        [(names[1], names[0])] * n_groups, s_b, t_b, s_a, t_a, design,
        method=method, confidence_level=confidence_level,
    )
    out, g = [], 0
    for (kind, columns), grouping_keys in zip(kinds, keys):
        for key in grouping_keys:
            out.append(
                GroupChange(
                    target=key[0],
                    kind=kind,
                    group=_label(kind, columns[-1], key),
                    rate_a=rates_a[g],
                    rate_b=rates_b[g],
                    change=changes[g],
                )
            )
            g += 1
    order = {kind: i for i, (kind, _) in enumerate(kinds)}
    return sorted(out, key=lambda c: (c.target, order[c.kind], c.group))

