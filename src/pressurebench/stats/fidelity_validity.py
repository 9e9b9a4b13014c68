"""The fidelity checks against human labels: how often do people agree that the simulated user
broke, and how large are the break shares by their account?

Raters answer, per conversation asked about, whether each kind of break the
checks decided happened (and whether the target showed test awareness). Per
kind, this module measures the checks' decision (the rules' findings and the
fidelity judge's verdicts together: what the break shares count) against the
human majority exactly as `stats.judge_validity` measures the behaviour judge:
accuracy, Cohen's κ, Krippendorff's α, sensitivity and specificity with
cluster-bootstrap intervals, each conversation weighed by its design weight.
And each target's break share is corrected by the labels with the same
prediction-powered inference as the pass rates (`stats.corrected_rates`): the
checks' share over every checked conversation plus the human-minus-checks
difference over the labelled ones, its interval withheld where the raw
share's is, and the value itself where too few answers carry it
(`stats.ppi.untrusted`).

The conversations asked about are drawn from those whose own-metric score row has
a verdict (the labelling draw's population); a conversation whose behaviour
verdict failed but whose fidelity was checked is in the checked share and
cannot be labelled, so the correction assumes it breaks as the others do.

A break is the "present" of a positive metric here: a conversation's "pass"
is the break, as in the break-share frames (`stats.fidelity.fidelity_frames`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..schemas import TEST_AWARENESS, USER_BREAKS, ConversationFidelity
from .corrected_rates import corrected_rates
from .fidelity import fidelity_frames
from .judge_validity import (
    NO_FIDELITY_LABELS,
    FidelityKindValidity,
    FidelityValidity,
    human_reference,
    judge_human_agreement,
    label_items,
    labelled_bootstrap,
)

KINDS = (*USER_BREAKS, TEST_AWARENESS)
LABEL_COLUMNS = ("kind", "conv_id", "metric_id", "target", "base_id", "rater", "label",
                 "checks_found", "stratum_weight")


def _frame_of(kind: str, frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return frames["aware" if kind == TEST_AWARENESS else kind]


def fidelity_validity(
    rows: Sequence[ConversationFidelity],
    labels: pd.DataFrame,
    *,
    resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
) -> FidelityValidity:
    """Per kind with answers: human reference, the checks' agreement with it, and each target's
    break share corrected (see the module docstring).

    `rows` are every checked conversation's fidelity rows; `labels` has one row per
    (kind, conversation, rater) in `LABEL_COLUMNS` (`labels.joined.fidelity_frame`).
    """
    missing = [c for c in LABEL_COLUMNS if c not in labels.columns]
    if missing:
        raise ValueError(f"fidelity labels lack column(s): {', '.join(missing)}")
    if labels.empty:
        return FidelityValidity(status="no labels", reason=NO_FIDELITY_LABELS)
    frames = fidelity_frames(rows)
    by_kind, weighted = {}, False
    for kind in KINDS:
        answers = labels[labels["kind"] == kind]
        frame = _frame_of(kind, frames)
        if answers.empty or frame.empty:
            continue
        # In the behaviour judge's terms: one item per conversation on a positive metric whose
        # "present" is the break.
        items = label_items(answers.assign(
            item_id=answers["conv_id"], scenario_metric_id=answers["metric_id"],
            metric_type="positive",
        ))
        bootstrap = labelled_bootstrap(frame, items, resamples, seed)
        item_cluster = bootstrap.codes(items["base_id"].astype(str))
        found = (
            answers.groupby("conv_id")["checks_found"].first()
            .reindex(items.index).astype("boolean").astype(float)
        )
        weighted |= bool(np.any(np.abs(items["weight"].to_numpy() - 1.0) > 1e-9))
        corrected = corrected_rates(frame, items, bootstrap, confidence_level)
        by_kind[kind] = FidelityKindValidity(
            human=human_reference(answers, items, item_cluster, bootstrap, confidence_level),
            checks=judge_human_agreement(found, items, item_cluster, bootstrap, confidence_level),
            corrected={t: c.overall for t, c in corrected.by_target.items()},
        )
    if not by_kind:
        return FidelityValidity(status="no labels", reason=NO_FIDELITY_LABELS)
    return FidelityValidity(status="ok", design_weighted=weighted, by_kind=by_kind)
