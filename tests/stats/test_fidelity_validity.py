"""The fidelity checks against human labels: a scripted checker of known sensitivity and
specificity, measured against planted human answers, is recovered exactly, and the break shares
corrected by labels of every conversation are the humans' shares."""

from __future__ import annotations

import pandas as pd
import pytest

from pressurebench.labels.joined import FIDELITY_COLUMNS
from pressurebench.schemas import ConversationFidelity, FidelityCheck, conv_id
from pressurebench.stats.fidelity_validity import fidelity_validity

METRICS = ("m01", "m02")
BASES = 15  # per metric
SAMPLES = 2
# Per target, which conversations truly leak (by their index 0..59): 20 of a's, 30 of b's.
TRULY_LEAKS = {"a": lambda k: k % 3 == 0, "b": lambda k: k % 2 == 0}


def conversations():
    """(target, conv_id, sid, metric, sample, truth, found) with the checks finding 4 of every
    5 true leaks and 1 of every 10 conversations without one: sensitivity 0.8, specificity 0.9."""
    out = []
    for target, truly in TRULY_LEAKS.items():
        k = hits = misses = 0
        for metric in METRICS:
            for b in range(1, BASES + 1):
                sid = f"{metric}_s{b:03d}_v01"
                for sample in range(SAMPLES):
                    truth = truly(k)
                    if truth:
                        found, hits = hits % 5 != 4, hits + 1
                    else:
                        found, misses = misses % 10 == 0, misses + 1
                    out.append((target, conv_id(sid, target, sample), sid, metric, sample, truth, found))
                    k += 1
    return out


def row(target, cid, sid, metric, sample, found) -> ConversationFidelity:
    def check(kind, turn, flagged):
        return FidelityCheck(kind=kind, turn=turn, flagged=flagged, decided_by="judge",
                             reason="r", status="ok")

    checks = [check(k, 1, k == "leak" and found) for k in ("out_of_character", "leak", "role_swap")]
    checks += [check("no_pressure", None, False), check("test_awareness", 1, False)]
    return ConversationFidelity(
        conv_id=cid, scenario_id=sid, base_id=sid[:-4], metric_id=metric, target=target,
        sample=sample, user_model="u", status="ok", broken=found, breaks=["leak"] if found else [],
        test_aware=False, checks=checks,
    )


def labels(convs, raters=("ada", "bo")) -> pd.DataFrame:
    return pd.DataFrame([
        {"kind": "leak", "conv_id": cid, "metric_id": metric, "target": target,
         "base_id": sid[:-4], "rater": rater, "label": "present" if truth else "absent",
         "checks_found": found, "stratum_weight": 1.0}
        for target, cid, sid, metric, _, truth, found in convs for rater in raters
    ], columns=FIDELITY_COLUMNS)


def test_a_checker_of_known_quality_is_recovered_against_planted_labels():
    convs = conversations()
    rows = [row(t, c, s, m, n, f) for t, c, s, m, n, _, f in convs]
    validity = fidelity_validity(rows, labels(convs), resamples=200, seed=1)
    assert validity.status == "ok" and list(validity.by_kind) == ["leak"]
    leak = validity.by_kind["leak"]
    assert leak.human.n_items == len(convs) == leak.checks.n_items
    assert leak.human.krippendorff_alpha.value == pytest.approx(1.0)  # the raters agree
    checks = leak.checks
    assert checks.sensitivity.value == pytest.approx(0.8)
    assert checks.specificity.value == pytest.approx(0.9)
    # Cohen's κ from the 2 × 2 table: 40 hits, 10 misses, 7 false alarms, 63 correct rejections.
    po, p_checks, p_human = (40 + 63) / 120, 47 / 120, 50 / 120
    pe = p_checks * p_human + (1 - p_checks) * (1 - p_human)
    assert checks.cohen_kappa.value == pytest.approx((po - pe) / (1 - pe))
    for estimate in (checks.sensitivity, checks.specificity, checks.cohen_kappa):
        assert estimate.ci_low < estimate.value < estimate.ci_high

    # Every conversation labelled: the corrected share is the humans' share, the raw one the
    # checks'; both with intervals (30 base scenarios in 2 metrics).
    for target in TRULY_LEAKS:
        share = leak.corrected[target]
        mine = [c for c in convs if c[0] == target]
        assert share.corrected_rate == pytest.approx(sum(c[5] for c in mine) / len(mine))
        assert share.raw.rate == pytest.approx(sum(c[6] for c in mine) / len(mine))
        assert share.n_labelled == share.n_judged == len(mine)
        assert share.ci_low <= share.corrected_rate <= share.ci_high


def test_a_labelled_sample_gets_an_interval_and_a_small_design_withholds_it():
    convs = conversations()
    rows = [row(t, c, s, m, n, f) for t, c, s, m, n, _, f in convs]
    # Labels on the first sample of each base scenario only.
    sample0 = [c for c in convs if c[4] == 0]
    leak = fidelity_validity(rows, labels(sample0, raters=("ada",)), resamples=200, seed=1).by_kind["leak"]
    for target in TRULY_LEAKS:
        share = leak.corrected[target]
        assert share.n_labelled == 30 and share.n_judged == 60
        assert share.ci_low is not None and share.power_tuning is not None
    # Two base scenarios of one metric: no interval, with the reason, as for the raw share.
    few = [c for c in convs if c[3] == "m01" and c[2] in ("m01_s001_v01", "m01_s002_v01")]
    small = fidelity_validity([row(t, c, s, m, n, f) for t, c, s, m, n, _, f in few], labels(few),
                              resamples=200, seed=1).by_kind["leak"]
    share = small.corrected["a"]
    assert share.ci_low is None and share.reason


def test_no_answers_no_section():
    convs = conversations()
    rows = [row(t, c, s, m, n, f) for t, c, s, m, n, _, f in convs]
    validity = fidelity_validity(rows, labels([]))
    assert validity.status == "no labels" and validity.by_kind == {}
