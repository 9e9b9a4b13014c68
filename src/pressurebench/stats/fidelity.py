"""Fidelity of the instrument in numbers: break shares, test awareness, and the sensitivity of
every headline pass rate to the conversations whose simulated user broke.

A break share is a rate like a pass rate: conversations with the break over
conversations whose check was decided, clustered in base scenarios within
metrics, so it gets the same cluster-t interval (`stats.rates.estimate_rates`),
withheld with the reason where the design is too small. A conversation whose
checks could not be decided and found no break is an error row, counted in
`n_error` and left out of the denominator: an unchecked conversation is
neither faithful nor broken.

Sensitivity. Each headline pass rate is recomputed on the conversations
checked and found without a break (undecided ones are left out too), and the
difference "without breaks − all" gets a paired interval: both rates lie on
the same base scenarios, and their linearized contributions are differenced
per scenario (`stats.differences.paired_design`) for the correlation of the
MOVER interval built from the two rates' Wilson-t intervals
(`cluster-t-mover-wilson`, as for differences between targets), one metric's on that
metric's base scenarios alone. The difference rests on the
few conversations that broke, so a symmetric cluster-t interval, too narrow
where none or one of the failing conversations broke, covered 0.70–0.90 for
one metric at 12–30 base scenarios; these cover 0.93 or more from 3
(docs/capitulation_coverage.md). Withheld below the sensitivity difference's
rule (`interval_rules.SENSITIVITY`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd
from pydantic import Field

from ..schemas import TEST_AWARENESS, USER_BREAKS, ConversationFidelity, Row
from . import methods
from .bootstrap import ClusterBootstrap
from .differences import estimate_differences, paired_design
from .estimates import Difference, RateEstimate
from .frame import cluster_ids
from .grouping import pass_tables
from .interval_rules import SENSITIVITY
from .rates import estimate_rates, grouped_rates, no_data

SUBSET = "subset"
ALL, WITHOUT_BREAKS = "all", "without breaks"


class TargetFidelity(Row):
    """How faithfully the simulated user played against one target, and whether it noticed."""

    user_model: str
    any_break: RateEstimate = Field(description="share of conversations with any user break")
    by_kind: dict[str, RateEstimate] = Field(
        description="share of conversations with each kind of break, among those checked for it"
    )
    by_metric: dict[str, RateEstimate] = Field(description="any break, per scenario metric")
    by_turn: dict[str, RateEstimate] = Field(
        description="share of conversations whose user message at this turn broke, among those "
        "that reached it"
    )
    test_awareness: RateEstimate = Field(
        description="share of conversations in which the target said or implied it was tested"
    )
    test_awareness_by_turn: dict[str, RateEstimate]
    n_checks: int = Field(ge=0)
    n_checks_error: int = Field(ge=0, description="checks nobody could decide")
    n_checks_by_detector: int = Field(ge=0, description="breaks a rule found without a judge")
    n_ended_early: int = Field(ge=0, description="conversations the simulated user ended early")


class SensitivityRate(Row):
    """A headline pass rate on the conversations without a break, and its difference to the rate
    on all conversations (without breaks − all)."""

    without_breaks: RateEstimate
    difference: Difference


class TargetSensitivity(Row):
    n_excluded_broken: int = Field(ge=0, description="score rows of conversations with a break")
    n_excluded_undecided: int = Field(
        ge=0, description="score rows of conversations whose checks were undecided"
    )
    overall: SensitivityRate
    positive: SensitivityRate | None
    negative: SensitivityRate | None
    by_metric: dict[str, SensitivityRate]

    def compared(self) -> list[tuple[str, SensitivityRate]]:
        """The rates compared, named as the tables name them: overall, positive, negative (each
        where the target has such rows), then each metric."""
        named = [("overall", self.overall), ("positive", self.positive),
                 ("negative", self.negative), *self.by_metric.items()]
        return [(name, rate) for name, rate in named if rate is not None]


class FidelityResults(Row):
    warn_share: float
    targets: dict[str, TargetFidelity]
    sensitivity: dict[str, TargetSensitivity]
    warnings: list[str] = Field(
        default_factory=list, description="targets whose break share exceeds warn_share"
    )


# --- frames ------------------------------------------------------------------------


def _base(row: ConversationFidelity) -> dict:
    return {
        "target": row.target, "user_model": row.user_model, "metric_id": row.metric_id,
        "metric_type": "n/a", "base_id": row.base_id, "scenario_id": row.scenario_id,
        "sample": row.sample, "conv_id": row.conv_id,
    }


def _outcome(checks: list, flagged_any: bool) -> tuple[str, bool | None]:
    """(status, passed) of a frame row: the break found, none found, or undecided."""
    if flagged_any:
        return "ok", True
    if any(c.status == "error" for c in checks):
        return "error", None
    return "ok", False


def fidelity_frames(rows: Iterable[ConversationFidelity]) -> dict[str, pd.DataFrame]:
    """Frames in the score-frame columns whose `passed` is "the break happened":
    "any" (per conversation), one per kind, "turn" (per conversation and turn) and the
    awareness frames "aware" and "aware_turn". Failed conversations are error rows of "any"."""
    records: dict[str, list[dict]] = {k: [] for k in ("any", "turn", "aware", "aware_turn", *USER_BREAKS)}
    for row in rows:
        base = _base(row)
        records["any"].append({**base, "status": row.status, "passed": row.broken})
        if not row.checks:
            continue
        user = [c for c in row.checks if c.kind != TEST_AWARENESS]
        aware = [c for c in row.checks if c.kind == TEST_AWARENESS]
        for kind in USER_BREAKS:
            of_kind = [c for c in user if c.kind == kind]
            if of_kind:
                status, passed = _outcome(of_kind, any(c.flagged for c in of_kind))
                records[kind].append({**base, "status": status, "passed": passed})
        for turn in sorted({c.turn for c in user if c.turn is not None}):
            at = [c for c in user if c.turn == turn]
            status, passed = _outcome(at, any(c.flagged for c in at))
            records["turn"].append({**base, "turn": str(turn), "status": status, "passed": passed})
        if aware:
            status, passed = _outcome(aware, any(c.flagged for c in aware))
            records["aware"].append({**base, "status": status, "passed": passed})
        for c in aware:
            status, passed = _outcome([c], bool(c.flagged))
            records["aware_turn"].append({**base, "turn": str(c.turn), "status": status, "passed": passed})
    columns = list(_base_columns())
    return {
        name: pd.DataFrame.from_records(
            recs, columns=columns + (["turn"] if "turn" in name else []) + ["status", "passed"])
        for name, recs in records.items()
    }


def _base_columns() -> tuple[str, ...]:
    return ("target", "user_model", "metric_id", "metric_type", "base_id", "scenario_id", "sample", "conv_id")


# --- break shares ------------------------------------------------------------------------


def _by(frame: pd.DataFrame, bootstrap: ClusterBootstrap, columns: list[str], level: float):
    if frame.empty:
        return {}
    (est,) = grouped_rates(frame, bootstrap, [columns], confidence_level=level)
    return est


def target_fidelity(
    rows: list[ConversationFidelity], *, confidence_level: float
) -> dict[str, TargetFidelity]:
    frames = fidelity_frames(rows)
    bootstrap = ClusterBootstrap.from_scores(frames["any"], resamples=1, seed=0)
    level = confidence_level
    anyb = _by(frames["any"], bootstrap, ["target"], level)
    by_metric = _by(frames["any"], bootstrap, ["target", "metric_id"], level)
    by_turn = _by(frames["turn"], bootstrap, ["target", "turn"], level)
    aware = _by(frames["aware"], bootstrap, ["target"], level)
    aware_turn = _by(frames["aware_turn"], bootstrap, ["target", "turn"], level)
    kinds = {k: _by(frames[k], bootstrap, ["target"], level) for k in USER_BREAKS}

    def of(target: str, estimates: dict) -> dict[str, RateEstimate]:
        items = {str(k[1]): e for k, e in estimates.items() if k[0] == target}
        return dict(sorted(items.items(), key=lambda kv: (len(kv[0]), kv[0])))

    out = {}
    for target in sorted({r.target for r in rows}):
        mine = [r for r in rows if r.target == target]
        checks = [c for r in mine for c in r.checks]
        out[target] = TargetFidelity(
            user_model=", ".join(sorted({r.user_model for r in mine})),
            any_break=anyb.get((target,), no_data()),
            by_kind={k: kinds[k].get((target,), no_data()) for k in USER_BREAKS},
            by_metric=of(target, by_metric),
            by_turn=of(target, by_turn),
            test_awareness=aware.get((target,), no_data()),
            test_awareness_by_turn=of(target, aware_turn),
            n_checks=len(checks),
            n_checks_error=sum(c.status == "error" for c in checks),
            n_checks_by_detector=sum(c.decided_by == "detector" for c in checks),
            n_ended_early=sum(r.ended_by == "user" for r in mine),
        )
    return out


# --- sensitivity ------------------------------------------------------------------------


def sensitivity(
    scores: pd.DataFrame, rows: list[ConversationFidelity], *, confidence_level: float
) -> dict[str, TargetSensitivity]:
    """Per target: overall, positive, negative and per-metric pass rates without the
    conversations that broke, beside the rates on all of them."""
    broken = {r.conv_id for r in rows if r.broken is True}
    clean = {r.conv_id for r in rows if r.broken is False}
    checked = {r.conv_id for r in rows}
    scores = scores[scores["conv_id"].isin(checked)].reset_index(drop=True)
    if scores.empty:
        return {}
    bootstrap = ClusterBootstrap.from_scores(scores, resamples=1, seed=0)
    stacked = pd.concat(
        [scores.assign(**{SUBSET: ALL}),
         scores[scores["conv_id"].isin(clean)].assign(**{SUBSET: WITHOUT_BREAKS})],
        ignore_index=True,
    )
    groupings = [[SUBSET, "target"], [SUBSET, "target", "metric_type"], [SUBSET, "target", "metric_id"]]
    tables = pass_tables(stacked, bootstrap.codes(cluster_ids(stacked)), bootstrap.n_clusters, groupings)
    keys = [k for group in tables.keys for k in group]
    column = {k: i for i, k in enumerate(keys)}
    rates = estimate_rates(bootstrap, tables.successes, tables.trials, tables.errors, confidence_level)
    strata = bootstrap.strata_codes

    def compare(rest: tuple) -> SensitivityRate | None:
        a, b = column.get((WITHOUT_BREAKS, *rest)), column.get((ALL, *rest))
        if b is None:
            return None
        if a is None:  # every conversation of the group broke
            n_b = int(tables.trials[:, b].sum())
            diff = Difference(
                a=WITHOUT_BREAKS, b=ALL, rate_a=None, rate_b=rates[b].rate, n_a=0, n_b=n_b,
                difference=None, ci_low=None, ci_high=None, ci_method=methods.NONE,
                n_clusters_a=0, n_clusters_b=rates[b].n_clusters,
                reason="no conversation without a break",
            )
            return SensitivityRate(without_breaks=no_data(), difference=diff)
        sa, ta = tables.successes[:, [a]], tables.trials[:, [a]]
        sb, tb = tables.successes[:, [b]], tables.trials[:, [b]]
        design = paired_design(sa, ta, sb, tb, strata, rule=SENSITIVITY)
        diff = estimate_differences(
            [(WITHOUT_BREAKS, ALL)], sa, ta, sb, tb, design,
            method=methods.CLUSTER_T_MOVER, confidence_level=confidence_level,
        )[0]
        return SensitivityRate(without_breaks=rates[a], difference=diff)

    out = {}
    for target in sorted(scores["target"].astype(str).unique()):
        of_target = scores[scores["target"].astype(str) == target]
        metric_ids = sorted(of_target["metric_id"].astype(str).unique())
        out[target] = TargetSensitivity(
            n_excluded_broken=int(of_target["conv_id"].isin(broken).sum()),
            n_excluded_undecided=int((~of_target["conv_id"].isin(broken | clean)).sum()),
            overall=compare((target,)),
            positive=compare((target, "positive")),
            negative=compare((target, "negative")),
            by_metric={m: s for m in metric_ids if (s := compare((target, m))) is not None},
        )
    return out


def fidelity_results(
    scores: pd.DataFrame,
    rows: Sequence[ConversationFidelity],
    *,
    warn_share: float,
    confidence_level: float,
) -> FidelityResults:
    """Break shares, test awareness and sensitivity for every target, with the warnings."""
    rows = list(rows)
    targets = target_fidelity(rows, confidence_level=confidence_level)
    warnings = [
        f"{target}: the simulated user ({tf.user_model}) broke in {tf.any_break.rate:.0%} of "
        f"conversations ({tf.any_break.n} checked), above fidelity.warn_share = {warn_share:g}; "
        "read the pass rates beside their values without those conversations"
        for target, tf in targets.items()
        if tf.any_break.rate is not None and tf.any_break.rate > warn_share
    ]
    return FidelityResults(
        warn_share=warn_share,
        targets=targets,
        sensitivity=sensitivity(scores, rows, confidence_level=confidence_level),
        warnings=warnings,
    )
