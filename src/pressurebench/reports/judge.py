"""The "Judge validity" section of the results report: the judge against human labels.

Without labels the section says how to start; with them, how often each judge
agrees with the human majority, and the pass rates corrected for the panel's
measured errors beside the raw ones, each with its n and interval method.
"""

from __future__ import annotations

import pandas as pd

from ..results import Results
from ..stats.estimates import AgreementEstimate
from .tables import MISSING, format_rate, method_label

NO_LABELS = (
    "**No human labels yet.** How often is the judge right? Draw a sample for raters with "
    "`pressurebench labels export --benchmark {benchmark}`, have people label the pages it "
    "writes under `reports/{benchmark}/labelling/`, then `pressurebench labels import FILE... "
    "--benchmark {benchmark}` and run `dvc repro`: this section then shows judge–human "
    "agreement and judge-corrected pass rates."
)
WEIGHTED = (
    " The sample over-drew items the judge panel disagreed on; every figure below weighs each "
    "item back to its share of the judged rows, so it describes the judge on all of them."
)
AGREEMENT_COLUMNS = ["judge", "items", "accuracy", "Cohen's κ", "Krippendorff's α",
                     "sensitivity", "specificity"]
CORRECTED_COLUMNS = ["target", "metric", "raw pass rate", "corrected [CI]", "judged",
                     "labelled", "note"]


def _estimate(e: AgreementEstimate) -> str:
    if e.value is None:
        return MISSING
    if e.ci_low is None:
        return f"{e.value:.2f}"
    return f"{e.value:.2f} [{e.ci_low:.2f}, {e.ci_high:.2f}]"


def set_aside_note(results: Results) -> str:
    """Markdown: the stored labels left out because they no longer match the data ("" if none)."""
    if not results.labels_set_aside:
        return ""
    parts = "; ".join(f"`{a.file}`: {a.n} ({a.reason})" for a in results.labels_set_aside)
    return (
        f"**Warning: {sum(a.n for a in results.labels_set_aside)} stored labels were set aside**, "
        f"as they no longer match the data: {parts}. The other labels are used. Labels of "
        "changed transcripts come from an earlier export: label the new one "
        "(`pressurebench labels export`).\n\n"
    )


def judge_note(results: Results) -> str:
    """Markdown: how to start without labels, else the human reference it rests on; first, any
    stored labels set aside."""
    validity = results.judge_validity
    if validity is None or validity.status == "no labels":
        return set_aside_note(results) + NO_LABELS.format(benchmark=results.benchmark)
    human = validity.human
    return set_aside_note(results) + (
        f"{human.n_items} labelled items from {human.n_raters} raters; {human.n_with_reference} "
        f"have a human majority ({human.n_tied} tied, {human.n_all_unsure} all unsure). "
        f"Agreement between raters (Krippendorff's α): {_estimate(human.krippendorff_alpha)}. "
        "Intervals resample base scenarios within metrics."
        + (WEIGHTED if validity.design_weighted else "")
    )


def agreement_table(results: Results) -> pd.DataFrame:
    """Per judge ("panel": the verdict the pipeline uses): its verdicts against the humans'."""
    validity = results.judge_validity
    if validity is None or validity.status == "no labels":
        return pd.DataFrame(columns=AGREEMENT_COLUMNS)
    rows = [
        [judge, a.n_items, _estimate(a.accuracy), _estimate(a.cohen_kappa),
         _estimate(a.krippendorff_alpha), _estimate(a.sensitivity), _estimate(a.specificity)]
        for judge, a in validity.judges.items()
    ]
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)


def corrected_table(results: Results) -> pd.DataFrame:
    """Per target, overall and per metric: the raw pass rate and the judge-corrected one."""
    validity = results.judge_validity
    if validity is None or validity.status == "no labels":
        return pd.DataFrame(columns=CORRECTED_COLUMNS)
    rows = []
    for target, correction in validity.corrected.items():
        for metric, rate in [("overall", correction.overall), *correction.by_metric.items()]:
            if rate.corrected_rate is None:
                corrected = MISSING
            else:
                corrected = format_rate(rate.corrected_rate, rate.ci_low, rate.ci_high)
                if rate.ci_low is not None:
                    corrected += f" ({method_label(rate.ci_method)})"
            rows.append([target, metric, format_rate(rate.raw.rate, None, None), corrected,
                         rate.n_judged, rate.n_labelled, rate.reason or ""])
    return pd.DataFrame(rows, columns=CORRECTED_COLUMNS)
