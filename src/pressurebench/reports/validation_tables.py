"""The comparison artifacts as tables for the study notebooks.

Rates are shown with their interval and n, differences in percentage points
(arm − main) with theirs; a missing number is "—" with its reason beside it,
never 0.
"""

from __future__ import annotations

import pandas as pd

from ..stats.rate_contrasts import TestedContrast
from ..validation.multiplicity import Multiplicity
from ..validation.studies import (
    EvaluatorArmResult,
    EvaluatorBiasStudy,
    GeneratorArmResult,
    GeneratorBiasStudy,
    PairedArmResult,
    Pairing,
    UserModelBiasStudy,
)
from . import study_frames as numbers
from .tables import (
    MISSING,
    format_difference,
    format_estimate,
    format_p,
    format_rate,
    format_rate_or_why,
    frame_records,
    method_label,
)

ArmResult = GeneratorArmResult | PairedArmResult


DIFFERENCE_COLUMNS = ["difference", "ci method", "p", "p (Holm)", "after Holm", "note"]


def _difference_columns(d: dict | None) -> dict:
    """A row of `study_frames.differences_frame` as text: the difference with its interval,
    its method, its tests and its reason ("not compared" where there is none)."""
    if d is None:
        return {"difference": MISSING, "ci method": MISSING, "note": "not compared",
                **_holm_columns(None)}
    found = _tested_columns(d["difference"], d)
    return {"difference": found.pop("value"), **found}


def _holm_columns(t: dict | None) -> dict:
    if t is None:
        return {"p": MISSING, "p (Holm)": MISSING, "after Holm": MISSING}
    significant = t["holm_significant"]
    return {
        "p": format_p(t["p_value"]),
        "p (Holm)": format_p(t["p_holm"]),
        "after Holm": MISSING if significant is None
        else ("differs" if significant else "no evidence"),
    }


def _tested_columns(value: float | None, t: dict) -> dict:
    """A tested value in percentage points (`value`) with its interval, method, tests and reason,
    from a numeric row holding ci_low, ci_high, ci_method, p_value, p_holm, holm_significant
    and reason."""
    return {
        "value": format_difference(value, t["ci_low"], t["ci_high"]),
        "ci method": method_label(t["ci_method"]),
        **_holm_columns(t),
        "note": t["reason"] or "",
    }


def multiplicity_note(result: ArmResult) -> str:
    """The family Holm's correction runs over, in a sentence for the report."""
    return family_note(result.multiplicity, "difference(s)")


def family_note(m: Multiplicity, what: str) -> str:
    """`Holm's correction over N <what>: <family>; family-wise error rate ≤ α.`"""
    return (f"Holm's correction over {m.n_comparisons} {what}: {m.family}; "
            f"family-wise error rate ≤ {m.alpha:g}.")


def contrast_columns(c: TestedContrast) -> dict:
    """A contrast in percentage points with its interval, method, tests and reason."""
    return _tested_columns(c.value, c.model_dump())


def _points(value: float | None) -> str:
    return format_difference(value, None, None)


def pairwise_changes_frame(result: ArmResult) -> pd.DataFrame:
    """Per pair of targets: t1 − t2 in each arm and the change (arm − main), with its interval
    and its Holm-corrected test over the arm's pairs."""
    rows = []
    for p in frame_records(numbers.pairwise_changes_frame(result)):
        rows.append({"pair": f"{p['target_1']} − {p['target_2']}",
                     "main": _points(p["difference_main"]), "arm": _points(p["difference_arm"]),
                     **_change_columns(p)})
    return pd.DataFrame(rows, columns=["pair", "main", "arm", *CHANGE_COLUMNS])


CHANGE_COLUMNS = ["change (arm − main)", "ci method", "p", "p (Holm)", "after Holm", "note"]


def _change_columns(row: dict) -> dict:
    """A numeric row's `change` (arm − main) as text with its interval, method and tests."""
    found = _tested_columns(row["change"], row)
    return {"change (arm − main)": found.pop("value"), **found}


def _family_or_why(found: bool, m: Multiplicity, what: str, why_none: str) -> str:
    return family_note(m, what) if found else why_none


def pairwise_note(result: ArmResult) -> str:
    """The pairwise changes' family, or why there is no pair."""
    return _family_or_why(
        bool(result.pairwise_changes), result.pairwise_multiplicity,
        "change(s) of a difference between targets",
        "No pair to compare: a change of a difference between two targets needs two or more "
        "targets with results in both arms (validation.targets).")


def gap_changes_frame(result: EvaluatorArmResult) -> pd.DataFrame:
    """Per target and gap: the gap under the main judge and under the arm's, and the change
    (arm − main) with its interval and its Holm-corrected test over the arm's gaps."""
    rows = []
    for g in frame_records(numbers.gap_changes_frame(result)):
        rows.append({
            "target": g["target"], "gap": f"{g['axis']}: {g['a']} − {g['b']}",
            "main judge": format_difference(g["gap_main"], g["gap_main_ci_low"],
                                            g["gap_main_ci_high"]),
            "arm judge": format_difference(g["gap_arm"], g["gap_arm_ci_low"],
                                           g["gap_arm_ci_high"]),
            **_change_columns(g),
        })
    return pd.DataFrame(rows, columns=["target", "gap", "main judge", "arm judge",
                                       *CHANGE_COLUMNS])


def gap_note(result: EvaluatorArmResult) -> str:
    """The gap changes' family, or why there is no gap."""
    return _family_or_why(
        bool(result.gaps), result.gap_multiplicity, "change(s) of a gap between judges",
        "No demographic gap: the planned rows have no two demographic values of an axis with "
        "verdicts from both judges in a common base scenario.")


def rates_frame(result: ArmResult) -> pd.DataFrame:
    """Per target: both arms' pass rates with n, base scenarios and n_error, and their
    difference with its method ("(no interval)" where the design cannot support one) and its
    Holm-corrected test."""
    diffs = {d["target"]: d for d in _differences(result)[:len(result.target_differences)]}
    rows = []
    for r in frame_records(numbers.rates_frame(result)):
        row = {"target": r["target"]}
        for side in ("main", "arm"):
            row |= {side: format_rate_or_why(r[f"{side}_rate"], r[f"{side}_ci_low"],
                                             r[f"{side}_ci_high"]),
                    f"{side} n": r[f"{side}_n"], f"{side} scenarios": r[f"{side}_n_clusters"],
                    f"{side} n_error": r[f"{side}_n_error"]}
        rows.append(row | _difference_columns(diffs.get(r["target"])))
    columns = ["target", *(f"{side}{c}" for side in ("main", "arm")
                           for c in ("", " n", " scenarios", " n_error"))]
    return pd.DataFrame(rows, columns=[*columns, *DIFFERENCE_COLUMNS])


def _differences(result: ArmResult) -> list[dict]:
    """The arm's differences per target (metric `all`) and per target × metric, as numbers."""
    return frame_records(numbers.differences_frame(result))


def metric_frame(result: ArmResult) -> pd.DataFrame:
    """Per target × metric: the difference (arm − main), the rows and base scenarios behind it,
    and its Holm-corrected test."""
    rows = [
        {
            "target": d["target"],
            "metric": d["metric"],
            "main rate": format_rate(d["rate_b"], None, None),
            "main n": d["n_b"],
            "main scenarios": d["n_clusters_b"],
            "arm rate": format_rate(d["rate_a"], None, None),
            "arm n": d["n_a"],
            "arm scenarios": d["n_clusters_a"],
            **_difference_columns(d),
        }
        for d in _differences(result)[len(result.target_differences):]
    ]
    columns = ["target", "metric", *(f"{side} {c}" for side in ("main", "arm")
                                     for c in ("rate", "n", "scenarios"))]
    return pd.DataFrame(rows, columns=[*columns, *DIFFERENCE_COLUMNS])


def _agreement_cell(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return MISSING
    if low is None:
        return f"{value:.2f}"
    return f"{value:.2f} [{low:.2f}, {high:.2f}]"


def agreement_frame(result: PairedArmResult) -> pd.DataFrame:
    """Per target and per target × metric ("all" for every metric): how often the two arms'
    verdicts agree on the paired rows, with Cohen's kappa and Scott's pi."""
    shown = {"share_agreeing": "share agreeing", "cohen_kappa": "Cohen kappa",
             "scott_pi": "Scott pi"}
    rows = []
    for a in frame_records(numbers.agreement_frame(result)):
        notes = {a[f"{s}_reason"] for s in shown if a[f"{s}_reason"]}
        rows.append({
            "target": a["target"], "metric": a["metric"], "paired rows": a["paired_rows"],
            "scenarios": a["n_clusters"],
            **{name: _agreement_cell(a[s], a[f"{s}_ci_low"], a[f"{s}_ci_high"])
               for s, name in shown.items()},
            "note": "; ".join(sorted(notes)),
        })
    return pd.DataFrame(rows, columns=["target", "metric", "paired rows", "scenarios",
                                       "share agreeing", "Cohen kappa", "Scott pi", "note"])


def confusion_frame(result: PairedArmResult) -> pd.DataFrame:
    """Per target, over every metric: the main arm's verdicts (rows) against the arm's."""
    return numbers.confusion_frame(result).rename(columns=lambda c: c.replace("_", " "))


CORRELATIONS = {"kendall_tau_b": "Kendall tau-b",
                "kendall_tau_b_noise_ceiling":
                    "Kendall tau-b, noise ceiling (two halves of the main arm)",
                "spearman_rho": "Spearman rho"}


def correlation_frame(result: ArmResult) -> pd.DataFrame:
    """Kendall's tau-b and Spearman's rho between the arms' rankings of the targets, and tau-b's
    noise ceiling: between two halves of the main arm, where nothing changed."""
    ceiling = result.tau_noise_ceiling
    rows = []
    for c in frame_records(numbers.correlation_frame(result)):
        value = MISSING if c["value"] is None else f"{c['value']:.2f}"
        low, high = c["ci_low"], c["ci_high"]
        if c["statistic"] == "kendall_tau_b_noise_ceiling":  # the splits' range, not an interval
            ci = MISSING if low is None else f"{low:.2f}–{high:.2f} over {ceiling.splits} splits"
            note = "; ".join(n for n in (ceiling.split, c["reason"]) if n)
        else:
            ci = MISSING if low is None else f"[{low:.2f}, {high:.2f}]"
            note = c["reason"] or ""
        rows.append({"statistic": CORRELATIONS[c["statistic"]], "value": value, "ci": ci,
                     "targets": c["n_targets"], "note": note})
    return pd.DataFrame(rows, columns=["statistic", "value", "ci", "targets", "note"])


def flips_frame(result: ArmResult) -> pd.DataFrame:
    """Per pair of targets: do the point estimates swap order, and how often the replicates do."""
    rows = [
        {
            "pair": f"{f['target_1']} / {f['target_2']}",
            "order flipped": MISSING if f["flipped"] is None else ("yes" if f["flipped"] else "no"),
            "flip probability": MISSING if f["probability"] is None
            else f"{f['probability']:.2f}",
        }
        for f in frame_records(numbers.flips_frame(result))
    ]
    if not rows:  # say why there is nothing, rather than show an empty table
        rows = [{"pair": MISSING, "order flipped": MISSING, "flip probability": MISSING,
                 "note": "no pair to compare: order flips need two or more targets with "
                         "results in both arms (validation.targets)"}]
        return pd.DataFrame(rows, columns=["pair", "order flipped", "flip probability", "note"])
    return pd.DataFrame(rows, columns=["pair", "order flipped", "flip probability"])


def generator_arms_frame(study: GeneratorBiasStudy) -> pd.DataFrame:
    rows = [
        {
            "arm": a.arm,
            "generator": a.generator,
            "metrics": "hand-written (scenarios regenerated)"
            if a.metrics_handwritten
            else "regenerated",
            "shared metrics": ", ".join(a.shared_metrics) or MISSING,
            "main generator": study.main_generator or "unknown",
            **_loss_columns(a),
        }
        for a in study.arms
    ]
    return pd.DataFrame(
        rows,
        columns=["arm", "generator", "metrics", "shared metrics", "main generator",
                 "base scenarios (planned / main / arm)", "lost in the arm"],
    )


def _loss_columns(arm: GeneratorArmResult) -> dict:
    """The base scenarios each arm scored against the plan, and why the arm lost some: losses
    never reach a score row, so no n_error shows them."""
    losses = arm.losses
    if losses is None:
        return {"base scenarios (planned / main / arm)": MISSING, "lost in the arm": MISSING}
    why = "; ".join(f"{e.base_id or e.metric_id or e.stage}: {e.reason}"
                    for e in losses.generation_errors)
    lost = f"{losses.lost}" + (f" ({why})" if why else "")
    return {
        "base scenarios (planned / main / arm)":
            f"{losses.planned} / {losses.scored_main} / {losses.scored_arm}",
        "lost in the arm": lost,
    }


def self_preference_frame(study: GeneratorBiasStudy) -> pd.DataFrame:
    rows = []
    for a in study.arms:
        s = a.self_preference
        rows.append(
            {
                "arm": a.arm,
                "generator family": s.generator_family,
                "main generator family": s.main_generator_family or "unknown",
                "in family": ", ".join(s.in_family) or MISSING,
                "others": ", ".join(s.out_of_family) or MISSING,
                "contrast": format_difference(s.value, s.ci_low, s.ci_high),
                "method": method_label(s.ci_method),
                "note": s.reason or "",
            }
        )
    columns = [
        "arm",
        "generator family",
        "main generator family",
        "in family",
        "others",
        "contrast",
        "method",
        "note",
    ]
    return pd.DataFrame(rows, columns=columns)


def user_arms_frame(study: UserModelBiasStudy) -> pd.DataFrame:
    rows = [
        {
            "arm": a.arm,
            "user model": a.user_model,
            "main user model": study.main_user_model or "unknown",
            "scenario rows": a.n_scenarios,
            "base scenarios": a.n_base_scenarios,
        }
        for a in study.arms
    ]
    return pd.DataFrame(
        rows, columns=["arm", "user model", "main user model", "scenario rows", "base scenarios"]
    )


FIDELITY_COLUMNS = ["arm", "user model", "target", "any break", "leak", "role swap / echo",
                    "out of character", "landmark skipped", "no pressure", "target test-aware"]


def user_fidelity_frame(study: UserModelBiasStudy) -> pd.DataFrame:
    """Each user model's break shares per target, side by side (main first)."""
    rows = []
    for f in study.fidelity:
        for target, tf in f.targets.items():
            kinds = tf.by_kind
            rows.append([
                f.arm, f.user_model or "unknown", target, format_estimate(tf.any_break),
                *(format_estimate(kinds[k]) for k in
                  ("leak", "role_swap", "out_of_character", "landmark_skipped", "no_pressure")),
                format_estimate(tf.test_awareness),
            ])
    return pd.DataFrame(rows, columns=FIDELITY_COLUMNS)


def evaluator_arms_frame(study: EvaluatorBiasStudy) -> pd.DataFrame:
    rows = [
        {
            "arm": a.arm,
            "evaluator": a.evaluator,
            "main evaluator": ", ".join(study.main_evaluators or []) or "unknown",
            "scenario rows": a.n_scenarios,
            "base scenarios": a.n_base_scenarios,
        }
        for a in study.arms
    ]
    return pd.DataFrame(
        rows, columns=["arm", "evaluator", "main evaluator", "scenario rows", "base scenarios"]
    )


def pairing_frame(result: PairedArmResult) -> pd.DataFrame:
    """Per target: rows in each arm, errors, and how many pair up (valid in both) to be compared."""
    return pd.DataFrame(
        [p.model_dump() for p in result.pairing], columns=list(Pairing.model_fields)
    )
