"""The "Judge validity" section of the results report: the judge against human labels.

Without labels the section says how to start; with them, how often each judge
agrees with the human majority, and every pass rate, target difference and
demographic gap as judged beside its value corrected by the labels
(prediction-powered inference), each with its interval, method and n.
"""

from __future__ import annotations

import pandas as pd

from ..stats.corrected_rates import CorrectedRate
from ..stats.estimates import AgreementEstimate
from ..stats.results import Results
from .tables import MISSING, format_rate, interval_method

NO_LABELS = (
    "**No human labels yet.** How often is the judge right? Draw a sample for raters with "
    "`pressurebench labels export --benchmark {benchmark}`, have people label the pages it "
    "writes under `reports/{benchmark}/labelling/`, then `pressurebench labels import FILE... "
    "--benchmark {benchmark}` and run `dvc repro`: this section then shows judge–human "
    "agreement and every pass rate corrected by the labels."
)
WEIGHTED = (
    " The sample over-drew items the judge panel disagreed on; every figure below weighs each "
    "item back to its share of the judged rows, so it describes the judge on all of them."
)
CORRECTED_NOTE = (
    "prediction-powered inference (PPI++): the judge's rate on every judged row plus the "
    "human-minus-judge difference on the labelled rows, with λ (0 to 1) the weight the "
    "judge's verdicts earn from how well they track the labels. Unbiased whatever the judge's "
    "quality; its interval is withheld below its own rule (the fewest base scenarios per metric "
    "at which the judge-corrected coverage sweep finds it covering), and the corrected value itself "
    "where too few labels can carry it (the note says which labels would give one)."
)
AGREEMENT_COLUMNS = ["judge", "items", "accuracy", "Cohen's κ", "Krippendorff's α",
                     "sensitivity", "specificity"]
CORRECTED_COLUMNS = ["target", "rate", "raw [CI]", "corrected [CI]", "method", "λ", "judged",
                     "labelled", "note"]
DIFFERENCE_COLUMNS = ["target", "difference", "raw", "corrected [CI]", "method", "labelled",
                      "note"]


def _estimate(e: AgreementEstimate) -> str:
    if e.value is None:
        return MISSING
    if e.ci_low is None:
        return f"{e.value:z.2f}"
    return f"{e.value:z.2f} [{e.ci_low:z.2f}, {e.ci_high:z.2f}]"


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
    assert human is not None, "judge validity with labels has its human reference"
    return set_aside_note(results) + (
        f"{human.n_items} labelled items from {human.n_raters} raters; {human.n_with_reference} "
        f"have a human majority ({human.n_tied} tied, {human.n_all_unsure} all unsure). "
        f"Agreement between raters (Krippendorff's α): {_estimate(human.krippendorff_alpha)}. "
        "Intervals resample base scenarios within metrics."
        + (WEIGHTED if validity.design_weighted else "")
        + " Corrected rates: " + CORRECTED_NOTE
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


def _corrected_cells(rate: CorrectedRate) -> list:
    return [
        format_rate(rate.raw.rate, rate.raw.ci_low, rate.raw.ci_high),
        format_rate(rate.corrected_rate, rate.ci_low, rate.ci_high),
        interval_method(rate.ci_method, None),
        MISSING if rate.power_tuning is None else f"{rate.power_tuning:z.2f}",
        rate.n_judged,
        rate.n_labelled,
        rate.reason or "",
    ]


def corrected_table(results: Results) -> pd.DataFrame:
    """Per target, every pass rate as judged (raw, with its interval) and corrected by the
    labels: overall, positive and negative metrics, per metric and per demographic value."""
    validity = results.judge_validity
    if validity is None or validity.corrected is None:
        return pd.DataFrame(columns=CORRECTED_COLUMNS)
    rows = []
    for target, c in validity.corrected.by_target.items():
        breakdown = [("overall", c.overall), ("positive metrics", c.positive),
                     ("negative metrics", c.negative), *c.by_metric.items()]
        breakdown += [(f"{axis}={value}", rate) for axis, values in c.by_demographic.items()
                      for value, rate in values.items()]
        rows += [[target, name, *_corrected_cells(rate)] for name, rate in breakdown
                 if rate.n_judged]
    return pd.DataFrame(rows, columns=CORRECTED_COLUMNS)


def corrected_differences_table(results: Results) -> pd.DataFrame:
    """The paired differences between targets and each target's demographic gaps, as judged
    and corrected by the labels."""
    validity = results.judge_validity
    if validity is None or validity.corrected is None:
        return pd.DataFrame(columns=DIFFERENCE_COLUMNS)
    corrected = validity.corrected
    named = [("", f"{d.a} − {d.b}", d) for d in corrected.differences]
    named += [(target, f"{axis}: {d.a} − {d.b}", d)
              for target, c in corrected.by_target.items()
              for axis, gaps in c.gaps.items() for d in gaps]
    rows = [
        [target, name,
         MISSING if d.raw_difference is None else f"{d.raw_difference:+z.3f}",
         MISSING if d.corrected_difference is None else (
             f"{d.corrected_difference:+z.3f}" + (
                 "" if d.ci_low is None else f" [{d.ci_low:+z.3f}, {d.ci_high:+z.3f}]")),
         interval_method(d.ci_method, None), d.n_labelled_a + d.n_labelled_b, d.reason or ""]
        for target, name, d in named
    ]
    return pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS)


def tables(results: Results) -> list[pd.DataFrame]:
    """The section's tables with rows, in order (none without labels): a table with nothing
    to show is left out rather than shown as headers over nothing."""
    validity = results.judge_validity
    if validity is None or validity.status != "ok":
        return []
    shown = (agreement_table(results), corrected_table(results),
             corrected_differences_table(results))
    return [t for t in shown if len(t)]


def fidelity_tables(results: Results) -> list[pd.DataFrame]:
    """The fidelity part's tables with rows (none until raters answered the fidelity items)."""
    validity = results.judge_validity
    if validity is None or validity.fidelity is None or validity.fidelity.status != "ok":
        return []
    return [t for t in (fidelity_agreement_table(results), fidelity_corrected_table(results))
            if len(t)]


FIDELITY_COLUMNS = ["kind", "conversations", "human α", "accuracy", "Cohen's κ", "sensitivity",
                    "specificity"]
FIDELITY_SHARE_COLUMNS = ["kind", "target", "checked [CI]", "corrected [CI]", "method", "λ",
                          "checked", "labelled", "note"]


def fidelity_note(results: Results) -> str:
    """Markdown: what the fidelity part of the section holds, or how to start it ("" where
    fidelity was not checked)."""
    validity = results.judge_validity
    if results.fidelity is None or validity is None:
        return ""
    if validity.fidelity is None or validity.fidelity.status == "no labels":
        return (
            "**The fidelity checks have no human answers yet.** Each rater page asks, for one "
            "item per checked conversation, whether the simulated user broke (and whether the "
            "target showed test awareness); labels files with those answers measure the checks "
            "here as the judge is measured above."
        )
    return (
        "**The fidelity checks against the raters.** Per kind of break, the checks' decision "
        "(the rules' findings and the fidelity judge's verdicts, as the Simulated user section "
        "counts them) against the raters' majority on the conversations they were asked "
        "about, and each target's break share as checked beside its value corrected by the "
        "answers (prediction-powered inference, as the pass rates above)."
        + (" Conversations are weighed back to their strata." if validity.fidelity.design_weighted else "")
    )


def fidelity_agreement_table(results: Results) -> pd.DataFrame:
    """Per kind of break: the fidelity checks' decision against the raters' majority."""
    validity = results.judge_validity
    if validity is None or validity.fidelity is None:
        return pd.DataFrame(columns=FIDELITY_COLUMNS)
    rows = [
        [kind, v.checks.n_items, _estimate(v.human.krippendorff_alpha), _estimate(v.checks.accuracy),
         _estimate(v.checks.cohen_kappa), _estimate(v.checks.sensitivity),
         _estimate(v.checks.specificity)]
        for kind, v in validity.fidelity.by_kind.items()
    ]
    return pd.DataFrame(rows, columns=FIDELITY_COLUMNS)


def fidelity_corrected_table(results: Results) -> pd.DataFrame:
    """Per kind of break and target: the share of conversations with it, as checked and
    corrected by the raters' answers."""
    validity = results.judge_validity
    if validity is None or validity.fidelity is None:
        return pd.DataFrame(columns=FIDELITY_SHARE_COLUMNS)
    rows = [
        [kind, target, *_corrected_cells(share)]
        for kind, v in validity.fidelity.by_kind.items() for target, share in v.corrected.items()
    ]
    return pd.DataFrame(rows, columns=FIDELITY_SHARE_COLUMNS)
