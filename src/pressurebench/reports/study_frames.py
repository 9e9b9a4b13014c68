"""The validation studies' tables as numbers: one builder per table of an arm.

Each frame holds fractions, counts, each interval's method and, where a number is withheld,
its reason (a missing value is empty, never 0). The paper export writes them as CSV and
formats its LaTeX floats from them (`reports.export_studies`); the study notebooks format
their display tables from the same frames (`reports.validation_tables`).
"""

from __future__ import annotations

import pandas as pd

from ..stats.estimates import AgreementEstimate
from ..validation.studies import EvaluatorArmResult, GeneratorArmResult, PairedArmResult

ArmResult = GeneratorArmResult | PairedArmResult
DIFFERENCE_COLUMNS = ["target", "metric", "a", "b", "rate_a", "rate_b", "n_a", "n_b",
                      "n_clusters_a", "n_clusters_b", "difference", "ci_low", "ci_high",
                      "ci_method", "reason", "p_value", "p_holm", "holm_significant",
                      "n_comparisons", "family"]
ALL_METRICS = "all"


RATE_FIELDS = ["rate", "ci_low", "ci_high", "ci_method", "n", "n_error", "n_clusters", "reason"]
RATES_COLUMNS = ["target", *(f"{side}_{f}" for side in ("main", "arm") for f in RATE_FIELDS)]


def rates_frame(result: ArmResult) -> pd.DataFrame:
    """Per target: both arms' pass rates with their intervals, n, rows without a verdict
    (n_error) and base scenarios (n_clusters)."""
    rows = []
    for t in result.targets:
        row: dict[str, object] = {"target": t}
        for side, est in (("main", result.rates_main[t]), ("arm", result.rates_arm[t])):
            row |= {f"{side}_rate": est.rate, f"{side}_ci_low": est.ci_low,
                    f"{side}_ci_high": est.ci_high, f"{side}_ci_method": est.ci_method,
                    f"{side}_n": est.n, f"{side}_n_error": est.n_error,
                    f"{side}_n_clusters": est.n_clusters, f"{side}_reason": est.reason}
        rows.append(row)
    return pd.DataFrame(rows, columns=RATES_COLUMNS)


def differences_frame(result: ArmResult) -> pd.DataFrame:
    """arm − main per target (metric `all`, first) and per target × metric, each with its
    interval, p-value and Holm's adjustment within the arm's family."""
    m = result.multiplicity
    rows = [
        {**d.model_dump(), "metric": getattr(d, "metric_id", ALL_METRICS)}
        for d in [*result.target_differences, *result.metric_differences]
    ]
    frame = pd.DataFrame(rows, columns=[c for c in DIFFERENCE_COLUMNS
                                        if c not in ("n_comparisons", "family")])
    return frame.assign(n_comparisons=m.n_comparisons, family=m.family)[DIFFERENCE_COLUMNS]


def flips_frame(result: ArmResult) -> pd.DataFrame:
    """Per pair of targets: whether the point estimates swap order between the arms, and the
    share of bootstrap replicates that order the pair oppositely."""
    return pd.DataFrame([f.model_dump() for f in result.comparison.order_flips],
                        columns=["target_1", "target_2", "flipped", "probability"])


def correlation_frame(result: ArmResult) -> pd.DataFrame:
    """tau-b and rho with their intervals, and tau-b's noise ceiling: its mean over splits of
    the main arm, and (as ci_low, ci_high) the 2.5–97.5% range of the splits."""
    c, ceiling = result.comparison, result.tau_noise_ceiling
    rows = [{"statistic": name, **r.model_dump()}
            for name, r in (("kendall_tau_b", c.kendall_tau), ("spearman_rho", c.spearman_rho))]
    rows.insert(1, {"statistic": "kendall_tau_b_noise_ceiling", "value": ceiling.value,
                    "ci_low": ceiling.low, "ci_high": ceiling.high,
                    "ci_method": f"split-halves of the main arm ({ceiling.splits}): "
                                 f"{ceiling.split}" if ceiling.split else "none",
                    "n_targets": ceiling.n_targets, "reason": ceiling.reason})
    return pd.DataFrame(rows, columns=["statistic", "value", "ci_low", "ci_high", "ci_method",
                                       "n_targets", "reason"])


TESTED = ["ci_low", "ci_high", "ci_method", "p_value", "p_holm", "holm_significant",
          "n_comparisons", "reason"]


def pairwise_changes_frame(result: ArmResult) -> pd.DataFrame:
    """Per pair of targets: t1 − t2 in each arm and its change (arm − main), with the change's
    interval and its test within the arm's pairs."""
    family = result.pairwise_multiplicity.family
    rows = [{"target_1": p.target_1, "target_2": p.target_2,
             "difference_main": p.difference_main, "difference_arm": p.difference_arm,
             "change": p.change.value, **{k: getattr(p.change, k) for k in TESTED},
             "family": family}
            for p in result.pairwise_changes]
    return pd.DataFrame(rows, columns=["target_1", "target_2", "difference_main",
                                       "difference_arm", "change", *TESTED, "family"])


def gap_changes_frame(result: EvaluatorArmResult) -> pd.DataFrame:
    """Per target and demographic gap: the gap under each judge with its interval, and its
    change (arm − main) with its interval and its test within the arm's gaps."""
    family = result.gap_multiplicity.family
    rows = [{"target": g.target, "axis": g.axis, "a": g.a, "b": g.b,
             "gap_main": g.main.difference, "gap_main_ci_low": g.main.ci_low,
             "gap_main_ci_high": g.main.ci_high, "gap_arm": g.arm.difference,
             "gap_arm_ci_low": g.arm.ci_low, "gap_arm_ci_high": g.arm.ci_high,
             "change": g.change.value, **{k: getattr(g.change, k) for k in TESTED},
             "family": family}
            for g in result.gaps]
    return pd.DataFrame(rows, columns=["target", "axis", "a", "b", "gap_main", "gap_main_ci_low",
                                       "gap_main_ci_high", "gap_arm", "gap_arm_ci_low",
                                       "gap_arm_ci_high", "change", *TESTED, "family"])


def _estimate(prefix: str, e: AgreementEstimate) -> dict:
    return {prefix: e.value, f"{prefix}_ci_low": e.ci_low, f"{prefix}_ci_high": e.ci_high,
            f"{prefix}_ci_method": e.ci_method, f"{prefix}_reason": e.reason}


AGREEMENT_STATISTICS = ["share_agreeing", "cohen_kappa", "scott_pi"]
AGREEMENT_COLUMNS = ["target", "metric", "paired_rows", "n_clusters", "main_pass_arm_pass",
                     "main_pass_arm_fail", "main_fail_arm_pass", "main_fail_arm_fail",
                     *(f"{s}{f}" for s in AGREEMENT_STATISTICS
                       for f in ("", "_ci_low", "_ci_high", "_ci_method", "_reason"))]


def agreement_frame(result: PairedArmResult) -> pd.DataFrame:
    """Per target and per target × metric (`all` for every metric): the arms' verdicts on the
    same rows, their 2 × 2 counts, and the share agreeing, Cohen's kappa and Scott's pi with
    their intervals."""
    rows = []
    for a in result.agreement:
        rows.append({
            "target": a.target, "metric": a.metric_id or ALL_METRICS,
            "paired_rows": a.share_agreeing.n_items, "n_clusters": a.share_agreeing.n_clusters,
            "main_pass_arm_pass": a.main_pass_arm_pass, "main_pass_arm_fail": a.main_pass_arm_fail,
            "main_fail_arm_pass": a.main_fail_arm_pass, "main_fail_arm_fail": a.main_fail_arm_fail,
            **_estimate("share_agreeing", a.share_agreeing),
            **_estimate("cohen_kappa", a.cohen_kappa), **_estimate("scott_pi", a.scott_pi),
        })
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def confusion_frame(result: PairedArmResult) -> pd.DataFrame:
    """Per target, over every metric: the main arm's verdicts (rows) against the arm's."""
    rows = []
    for a in result.agreement:
        if a.metric_id is None:
            rows += [{"target": a.target, "main_verdict": "pass", "arm_pass": a.main_pass_arm_pass,
                      "arm_fail": a.main_pass_arm_fail},
                     {"target": a.target, "main_verdict": "fail", "arm_pass": a.main_fail_arm_pass,
                      "arm_fail": a.main_fail_arm_fail}]
    return pd.DataFrame(rows, columns=["target", "main_verdict", "arm_pass", "arm_fail"])


def self_preference_frame(result: GeneratorArmResult) -> pd.DataFrame:
    """The generator's self-preference: the mean change of its family's targets minus the
    others', with its interval."""
    s = result.self_preference
    return pd.DataFrame([{
        "generator_family": s.generator_family, "main_generator_family": s.main_generator_family,
        "in_family": "; ".join(s.in_family), "out_of_family": "; ".join(s.out_of_family),
        "value": s.value, "ci_low": s.ci_low, "ci_high": s.ci_high, "ci_method": s.ci_method,
        "reason": s.reason}])
