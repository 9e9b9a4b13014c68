"""Agreement of two arms' verdicts on the same rows: what a difference of rates can hide.

Two arms can pass the same share of rows while disagreeing on many of them
(one arm fails what the other passes and the reverse): the difference of
their rates is then near 0 however often the verdicts part. So where the arms
are paired by row (the user-model and evaluator studies), every target and
every target × metric also gets, over the rows with a verdict in both arms:

- the 2 × 2 table of the main arm's verdict against the arm's;
- the share of rows whose verdicts agree;
- Cohen's kappa, which takes each arm's own share of passes as its chance
  level, and Scott's pi, which takes the two arms' pooled share. An arm that
  answers the opposite of the main arm on every row has pi −1 whatever the
  shares, while its kappa is −1 only when both arms pass half the rows and 0
  when one passes every row and the other none: kappa reads a shift of the
  shares as chance, pi as disagreement.

Intervals are the package's agreement intervals (`stats.agreement`): a
percentile cluster bootstrap over the base scenarios, drawn by the same
bootstrap as the arms' differences, withheld with a reason where it cannot be drawn.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pydantic import Field

from ..schemas import Row
from ..stats.agreement import bootstrap_agreement, share_estimate
from ..stats.bootstrap import ClusterBootstrap
from ..stats.coefficients import cohen_from_sums, cohen_item_stats, scott_from_sums
from ..stats.estimates import AgreementEstimate
from ..stats.frame import cluster_ids, passes, valid_mask


class VerdictAgreement(Row):
    """The main arm's verdicts against the arm's on the rows both judged, for one group."""

    target: str
    metric_id: str | None = Field(description="None: every metric of the target")
    main_pass_arm_pass: int = Field(ge=0)
    main_pass_arm_fail: int = Field(ge=0)
    main_fail_arm_pass: int = Field(ge=0)
    main_fail_arm_fail: int = Field(ge=0)
    share_agreeing: AgreementEstimate = Field(description="share of rows with the same verdict")
    cohen_kappa: AgreementEstimate
    scott_pi: AgreementEstimate


def verdict_pairs(
    masked_main: pd.DataFrame, masked_arm: pd.DataFrame, key: list[str]
) -> pd.DataFrame:
    """One row per row with a verdict in both arms: its key, base scenario, and both verdicts.

    The frames are `paired.paired_rows`' masked frames: a row without a
    counterpart is already an error row in both.
    """
    def verdicts(frame: pd.DataFrame, name: str) -> pd.DataFrame:
        valid = frame[valid_mask(frame)]
        out = valid[key].astype(str).assign(cluster=cluster_ids(valid).astype(str).to_numpy())
        return out.assign(**{name: passes(valid).astype(int)})

    return verdicts(masked_main, "main").merge(
        verdicts(masked_arm, "arm").drop(columns="cluster"), on=key, how="inner", validate="1:1"
    )


def _agreement(
    target: str,
    metric_id: str | None,
    rows: pd.DataFrame,
    bootstrap: ClusterBootstrap,
    confidence_level: float,
) -> VerdictAgreement:
    main, arm = rows["main"].to_numpy(), rows["arm"].to_numpy()
    cluster = bootstrap.codes(rows["cluster"]) if len(rows) else np.zeros(0, dtype=np.int64)
    cells = cohen_item_stats(np.column_stack([1 - main, 1 - arm]), 2)  # 0 = pass, 1 = fail
    counts = cells.sum(axis=0).astype(int) if len(rows) else np.zeros(4, dtype=int)
    return VerdictAgreement(
        target=target,
        metric_id=metric_id,
        main_pass_arm_pass=int(counts[0]),
        main_pass_arm_fail=int(counts[1]),
        main_fail_arm_pass=int(counts[2]),
        main_fail_arm_fail=int(counts[3]),
        share_agreeing=share_estimate(bootstrap, cluster, main == arm, confidence_level),
        cohen_kappa=bootstrap_agreement(
            bootstrap, cluster, cells, cohen_from_sums, confidence_level
        ),
        scott_pi=bootstrap_agreement(bootstrap, cluster, cells, scott_from_sums, confidence_level),
    )


def verdict_agreement(
    masked_main: pd.DataFrame,
    masked_arm: pd.DataFrame,
    bootstrap: ClusterBootstrap,
    *,
    targets: list[str],
    confidence_level: float,
) -> list[VerdictAgreement]:
    """Per target (metric None) and per target × metric, in that order within each target."""
    pairs = verdict_pairs(masked_main, masked_arm, ["target", "scenario_id", "sample", "metric_id"])
    metrics = sorted(
        set(masked_main["metric_id"].astype(str)) | set(masked_arm["metric_id"].astype(str))
    )
    out = []
    for target in targets:
        of_target = pairs[pairs["target"] == target]
        out.append(_agreement(target, None, of_target, bootstrap, confidence_level))
        for metric in metrics:
            rows = of_target[of_target["metric_id"] == metric]
            out.append(_agreement(target, metric, rows, bootstrap, confidence_level))
    return out
