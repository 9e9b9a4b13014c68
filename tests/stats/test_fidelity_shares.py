"""Fidelity in numbers: break shares with cluster intervals, and the sensitivity analysis
recovering a planted effect of the broken conversations on the pass rate."""

from __future__ import annotations

import pytest

from pressurebench.schemas import ConversationFidelity, FidelityCheck, Score, conv_id
from pressurebench.stages.aggregate import scores_frame
from pressurebench.stats.fidelity import fidelity_results
from pressurebench.stats.interval_rules import SENSITIVITY

METRICS = ("m01", "m02")
BASES = 12  # per metric: more base scenarios than any rule of these intervals needs
SAMPLES = 5


def check(kind: str, turn: int | None, flagged: bool | None) -> FidelityCheck:
    if flagged is None:
        return FidelityCheck(kind=kind, turn=turn, status="error", error="fidelity judges tied 1–1")
    return FidelityCheck(
        kind=kind, turn=turn, flagged=flagged, decided_by="judge", reason="r", status="ok"
    )


def fidelity_row(cid: str, sid: str, metric: str, sample: int, breaks: dict, aware: bool = False):
    """A checked two-turn conversation; `breaks` maps (kind, turn) to True (found) or None."""
    checks = [
        check(kind, turn, breaks.get((kind, turn), False))
        for turn in (1, 2) for kind in ("out_of_character", "leak", "role_swap")
    ] + [check("no_pressure", None, breaks.get(("no_pressure", None), False))]
    checks += [check("test_awareness", t, aware and t == 2) for t in (1, 2)]
    found = list(dict.fromkeys(c.kind for c in checks if c.kind != "test_awareness" and c.flagged))
    undecided = not found and any(c.status == "error" for c in checks)
    return ConversationFidelity(
        conv_id=cid, scenario_id=sid, base_id=sid.rsplit("_", 1)[0], metric_id=metric,
        target="t", sample=sample, user_model="u",
        status="error" if undecided else "ok", error="undecided" if undecided else None,
        broken=None if undecided else bool(found), breaks=found, test_aware=aware, checks=checks,
    )


def score(cid: str, sid: str, metric: str, sample: int, passed: bool) -> Score:
    return Score(
        conv_id=cid, scenario_id=sid, base_id=sid.rsplit("_", 1)[0], metric_id=metric,
        scenario_metric_id=metric, metric_type="positive", target="t", sample=sample,
        present=passed, passed=passed, status="ok",
    )


def planted():
    """Sample 0 of every scenario breaks (leak at turn 2) and fails; of the other four, every
    one passes in even base scenarios and two pass in odd ones. So 0.6 pass overall and 0.75
    without the broken conversations: a planted effect of +0.15."""
    scores, rows = [], []
    for metric in METRICS:
        for b in range(1, BASES + 1):
            sid = f"{metric}_s{b:03d}_v01"
            for sample in range(SAMPLES):
                cid = conv_id(sid, "t", sample)
                broken = sample == 0
                passed = not broken and (b % 2 == 0 or sample <= 2)
                scores.append(score(cid, sid, metric, sample, passed))
                rows.append(fidelity_row(
                    cid, sid, metric, sample, {("leak", 2): True} if broken else {},
                    aware=(sample == 1 and b == 1),
                ))
    return scores, rows


def test_sensitivity_recovers_the_planted_effect():
    scores, rows = planted()
    results = fidelity_results(scores_frame(scores), rows, warn_share=0.1, confidence_level=0.95)
    sens = results.sensitivity["t"]
    assert sens.n_excluded_broken == 24 and sens.n_excluded_undecided == 0
    diff = sens.overall.difference
    assert diff.rate_b == pytest.approx(0.6) and diff.rate_a == pytest.approx(0.75)
    assert diff.difference == pytest.approx(0.15)
    assert diff.ci_low < 0.15 < diff.ci_high and diff.ci_method == "cluster-t-mover-wilson"
    assert sens.overall.without_breaks.n == 96
    for metric in METRICS:
        assert sens.by_metric[metric].difference.difference == pytest.approx(0.15)
    assert sens.positive.difference.difference == pytest.approx(0.15)
    assert sens.negative is None


def test_no_break_no_difference():
    scores, rows = planted()
    rows = [
        fidelity_row(r.conv_id, r.scenario_id, r.metric_id, r.sample, {}) for r in rows
    ]
    results = fidelity_results(scores_frame(scores), rows, warn_share=0.1, confidence_level=0.95)
    diff = results.sensitivity["t"].overall.difference
    assert diff.difference == pytest.approx(0.0)
    assert results.targets["t"].any_break.rate == 0.0
    assert results.warnings == []


def test_break_shares_per_kind_and_turn_with_cluster_intervals():
    scores, rows = planted()
    results = fidelity_results(scores_frame(scores), rows, warn_share=0.1, confidence_level=0.95)
    tf = results.targets["t"]
    assert tf.any_break.rate == pytest.approx(0.2) and tf.any_break.n == 120
    assert tf.any_break.ci_low < 0.2 < tf.any_break.ci_high
    assert tf.by_kind["leak"].rate == pytest.approx(0.2)
    assert tf.by_kind["role_swap"].rate == 0.0 and tf.by_kind["no_pressure"].rate == 0.0
    assert tf.by_kind["landmark_skipped"].n == 0 and tf.by_kind["landmark_skipped"].rate is None
    assert list(tf.by_turn) == ["1", "2"]
    assert tf.by_turn["1"].rate == 0.0 and tf.by_turn["2"].rate == pytest.approx(0.2)
    assert tf.test_awareness.rate == pytest.approx(2 / 120)
    assert tf.test_awareness_by_turn["2"].rate == pytest.approx(2 / 120)
    assert tf.by_metric["m01"].rate == pytest.approx(0.2)
    (warning,) = results.warnings
    assert warning.startswith("t: the simulated user (u) broke in 20% of conversations")


def test_undecided_conversations_are_errors_not_passes():
    scores, rows = planted()
    # sample 1 of every scenario: a tie on pressure and no break found
    rows = [
        fidelity_row(r.conv_id, r.scenario_id, r.metric_id, r.sample, {("no_pressure", None): None})
        if r.sample == 1 else r
        for r in rows
    ]
    results = fidelity_results(scores_frame(scores), rows, warn_share=0.5, confidence_level=0.95)
    tf = results.targets["t"]
    assert tf.any_break.n == 96 and tf.any_break.n_error == 24
    assert tf.any_break.rate == pytest.approx(24 / 96)
    assert tf.by_kind["no_pressure"].n_error == 24
    sens = results.sensitivity["t"]
    assert sens.n_excluded_undecided == 24
    assert sens.overall.without_breaks.n == 72
    assert results.warnings == []


def test_small_design_withholds_the_interval_with_its_reason():
    scores, rows = planted()
    keep = {f"{m}_s00{b}" for m in METRICS for b in (1, 2)}
    scores = [s for s in scores if s.base_id in keep]
    rows = [r for r in rows if r.base_id in keep]
    results = fidelity_results(scores_frame(scores), rows, warn_share=0.1, confidence_level=0.95)
    est = results.targets["t"].any_break
    assert est.rate == pytest.approx(0.2) and est.ci_low is None and "too few base scenarios" in est.reason
    diff = results.sensitivity["t"].overall.difference
    assert diff.ci_low is None and "too few base scenarios" in diff.reason


def _sensitivity_at(per_metric: int):
    scores, rows = planted()
    keep = {f"{m}_s{b:03d}" for m in METRICS for b in range(1, per_metric + 1)}
    scores = [s for s in scores if s.base_id in keep]
    rows = [r for r in rows if r.base_id in keep]
    results = fidelity_results(scores_frame(scores), rows, warn_share=0.1, confidence_level=0.95)
    return results.sensitivity["t"]


def test_a_sensitivity_difference_below_its_rule_is_withheld_and_at_it_reported():
    """The sensitivity difference has its own measured rule (docs/capitulation_coverage.md), not
    the 20 degrees of freedom of unmeasured statistics: over the 2 metrics it is reported from
    SENSITIVITY.pooled base scenarios per metric, and one metric's from SENSITIVITY.single."""
    below = _sensitivity_at(SENSITIVITY.pooled - 1).overall.difference
    assert below.ci_low is None and below.reason.startswith(
        "too few base scenarios for a sensitivity difference interval "
        f"({2 * (SENSITIVITY.pooled - 1)} with valid rows over 2 metrics; the coverage grids "
        f"need {SENSITIVITY.pooled} per metric)")
    at = _sensitivity_at(SENSITIVITY.pooled).overall.difference
    assert at.reason is None and at.ci_low < at.difference < at.ci_high
    assert at.ci_method == SENSITIVITY.method
    one_below = _sensitivity_at(SENSITIVITY.single - 1).by_metric["m01"].difference
    assert one_below.ci_low is None and one_below.reason.startswith(
        "too few base scenarios for a sensitivity difference interval "
        f"({SENSITIVITY.single - 1} with valid rows in one metric")
    one_at = _sensitivity_at(SENSITIVITY.single).by_metric["m01"].difference
    assert one_at.reason is None and one_at.ci_low is not None
    assert one_at.ci_method == SENSITIVITY.method
