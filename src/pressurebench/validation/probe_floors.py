"""A probe's flip rate against its floors: how much more an edit moves the verdict than asking
again, or than rewriting without the feature.

A flip rate is never 0 for free. `repeat` (the judge asked again about the unedited transcript)
moves verdicts by the judge's own sampling; `paraphrase` (the user's turns rewritten in the same
voice) moves them by sampling plus whatever an edited transcript does to the judge (a rewritten
turn beside a reply to the original can read oddly). An edit's flip rate is the feature's doing
only as far as it exceeds those floors. Each excess (probe − floor) is a paired difference of
two flip rates on the same rows (the rows with a verdict in the main arm, the probe and the
floor), per target and per target × metric, with its cluster-t interval (`stats.rate_contrasts`,
withheld below `interval_rules.FLIP_EXCESS`) and the p-value that inverts it; Holm's correction
runs over every excess the study reports (`Multiplicity`).

The floors each probe is read against: `identity` and `verbosity` against `repeat` and
`paraphrase`; `paraphrase` against `repeat` (the edit's own noise beyond the judge's); `family`
(other judges deciding) against `repeat`. A probe whose floors were not run has no excess.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd
from pydantic import Field

from ..schemas import Row
from ..stats.bootstrap import ClusterBootstrap
from ..stats.frame import cluster_ids, valid_mask
from ..stats.grouping import pass_tables
from ..stats.interval_rules import FLIP_EXCESS
from ..stats.rate_contrasts import (
    ContrastEstimate,
    ContrastSide,
    TestedContrast,
    holm_tested,
    linear_contrasts,
)
from .multiplicity import Multiplicity, family_of

FLOORS_OF: dict[str, tuple[str, ...]] = {
    "identity": ("repeat", "paraphrase"),
    "verbosity": ("repeat", "paraphrase"),
    "paraphrase": ("repeat",),
    "family": ("repeat",),
}
FAMILY = ("every excess of a probe's flip rate over a floor's (repeat, paraphrase) in this "
          "study, per target and per target × metric, that has a p-value")


class FlipExcess(Row):
    """A probe's flip rate minus a floor's on the rows both judged (and the main arm did)."""

    probe: str
    floor: str
    target: str
    metric_id: str | None = Field(description="None: every metric of the target")
    probe_rate: float | None = Field(description="the probe's flip rate on those rows")
    floor_rate: float | None = Field(description="the floor's flip rate on the same rows")
    n: int = Field(ge=0, description="rows with a verdict in the main arm, the probe and the floor")
    excess: TestedContrast = Field(description="probe − floor, paired by row, with its interval "
                                   "and its Holm-corrected test over the study's family")


def floors_of(probe: str, run: Collection[str]) -> list[str]:
    """The floors `probe` is read against among the probes that judged rows (`run`)."""
    return [f for f in FLOORS_OF.get(probe, ()) if f in run]


def _masked(frame: pd.DataFrame, keep: np.ndarray) -> pd.DataFrame:
    return frame.assign(status=np.where(keep, frame["status"], "error").astype(object),
                        passed=frame["passed"].astype(object).where(keep, None))


def flip_excesses(flips: dict[str, pd.DataFrame], targets: list[str], *, confidence_level: float
                  ) -> tuple[list[FlipExcess], Multiplicity]:
    """Every probe's excess over each of its floors, per target (metric None) and per target ×
    metric (sorted), Holm-corrected over all of them. `flips` holds each probe's flip frame
    (`judge_probes.flip_frame`: `passed` = the verdict moved), all on the main arm's rows in
    one order."""
    run = set(flips)
    pending: list[tuple[dict, ContrastEstimate]] = []
    for probe, frame in flips.items():
        for floor in floors_of(probe, run):
            other = flips[floor]
            both = valid_mask(frame) & valid_mask(other)
            one, two = _masked(frame, both), _masked(other, both)
            pending += _excesses(probe, floor, one, two, targets, confidence_level)
    tested = holm_tested([estimate for _, estimate in pending], confidence_level)
    rows = [FlipExcess(**fields, excess=estimate)
            for (fields, _), estimate in zip(pending, tested)]
    return rows, family_of([r.excess for r in rows], FAMILY, confidence_level)


def _excesses(probe: str, floor: str, one: pd.DataFrame, two: pd.DataFrame, targets: list[str],
              confidence_level: float) -> list[tuple[dict, ContrastEstimate]]:
    """(fields, contrast) per target and per target × metric of one probe over one floor."""
    metrics = sorted(set(one["metric_id"].astype(str)))
    groups = [(t, None) for t in targets] + [(t, m) for t in targets for m in metrics]
    if one.empty:
        return []
    bootstrap = ClusterBootstrap.from_scores(one, resamples=1, seed=0)
    codes = bootstrap.codes(cluster_ids(one))
    tables = [pass_tables(frame.assign(metric_id=frame["metric_id"].astype(str)), codes,
                          bootstrap.n_clusters, [["target"], ["target", "metric_id"]])
              for frame in (one, two)]
    found = {key: i for i, key in enumerate(k for keys in tables[0].keys for k in keys)}
    columns = []
    for target, metric in groups:
        key = (target,) if metric is None else (target, metric)
        columns.append(found.get(key, -1))
    take = np.array([max(c, 0) for c in columns])
    present = np.array([c >= 0 for c in columns])[None, :]
    (s1, t1), (s2, t2) = ((tab.successes[:, take] * present, tab.trials[:, take] * present)
                          for tab in tables)
    side = ContrastSide(successes=(s1, s2), trials=(t1, t2), weights=(1.0, -1.0),
                        strata=bootstrap.strata_codes,
                        labels=(f"the {probe} probe's flips", f"the {floor} floor's flips"))
    estimates = linear_contrasts([side], rule=FLIP_EXCESS, confidence_level=confidence_level)
    out = []
    for g, ((target, metric), estimate) in enumerate(zip(groups, estimates)):
        n = float(t1[:, g].sum())
        out.append(({
            "probe": probe, "floor": floor, "target": target, "metric_id": metric,
            "probe_rate": float(s1[:, g].sum() / n) if n else None,
            "floor_rate": float(s2[:, g].sum() / n) if n else None, "n": int(n),
        }, estimate))
    return out
