"""The paper's LaTeX tables compile and fit the page: pdflatex on six targets' results."""

from __future__ import annotations

import csv
import io
import re

import pandas as pd
import pytest

from latex_support import compile_tables, needs_latex, overfull_boxes
from pressurebench.io import frame_csv
from pressurebench.reports import export_tables, latex
from pressurebench.stats.results import build_results
from pressurebench.stats.sweeps.synthetic import synthetic_scores

pytestmark = pytest.mark.slow

NAMES = {f"m{i:02d}": name for i, name in enumerate([
    "Avoid validating a bad decision because the user insists",
    "Keeps the safety caveat on the fifth ask",
    "Helps a teenager think instead of handing over the answer",
    "Avoid flattery of the user's plan & its 100% certainty",
    "States uncertainty where the evidence is thin",
    "Refuses to drop a disclaimer under social pressure",
], start=1)}
SHORT = ["gpt-4o", "claude-4", "llama-70b", "qwen-72b", "mistral-l", "gemini-2"]
LONG = ["gpt-4o-2024-08-06", "claude-sonnet-4-5", "Llama-3.1-70B-Instruct", "qwen2.5-72b-instruct",
        "mistral-large-2411", "gemini-2.0-flash-001"]


def results_for(targets: list[str], base_per_metric: int = 6):
    rates = dict(zip(targets, (0.35, 0.45, 0.5, 0.55, 0.6, 0.7)))
    scores = synthetic_scores(target_rates=rates, metrics=6, base_per_metric=base_per_metric,
                              samples=1, axes={"age": ["teen", "adult"]}, seed=4)
    return build_results(scores, resamples=50, confidence_level=0.95, seed=1, benchmark="core_v2")


@needs_latex
@pytest.mark.parametrize("targets", [SHORT, LONG], ids=["short names", "long names"])
def test_six_targets_compile_and_fit_the_text_width(tmp_path, targets):
    results = results_for(targets)
    pairwise, gaps = export_tables.pairwise_frame(results), export_tables.gaps_frame(results)
    tables = {
        "rates": latex.rates_table(export_tables.rates_frame(results, NAMES), results, NAMES,
                                   "tab:rates"),
        "pairwise": latex.differences_table(pairwise, "Pairs.", "tab:pairs", lead=[],
                                            targets=targets, target_columns=["a", "b"]),
        "gaps": latex.differences_table(gaps, "Gaps.", "tab:gaps", lead=["target", "axis"],
                                        targets=targets, target_columns=["target"]),
    }
    log = compile_tables(tmp_path, tables)
    assert not overfull_boxes(log), overfull_boxes(log)
    assert (tmp_path / "paper.pdf").read_bytes().startswith(b"%PDF")
    rates = tables["rates"]
    assert "\\caption{Pass rates (\\%) of core\\_v2" in rates
    assert "Design: 36 base scenarios over 6 metrics" in rates
    assert "@{}lrrrrrr@{}" in rates and "`" not in rates
    if targets is LONG:
        assert "T1 = Llama-3.1-70B-Instruct" in rates and "T1 = Llama" in tables["pairwise"]
        assert "T1 $-$ T2" in tables["pairwise"]
    else:
        assert "T1" not in rates and "gpt-4o" in rates


ADVICE = ("set ", "generation.", "pressurebench plan", "params")


def with_fidelity(results):
    """`results` with break shares for every target, taken from its own estimates: the overall
    rate for any break, the metric rates (whose intervals this small design withholds) for
    kinds, metrics and turns."""
    from pressurebench.stats.fidelity import FidelityResults, TargetFidelity

    kinds = ["out_of_character", "leak", "role_swap", "landmark_skipped", "no_pressure"]
    targets = {}
    for target, tr in results.targets.items():
        by_metric = dict(tr.by_metric)
        rates = list(by_metric.values())
        targets[target] = TargetFidelity(
            user_model="Llama-3.1-8B-Instruct", any_break=tr.overall,
            by_kind={k: rates[i] for i, k in enumerate(kinds)}, by_metric=by_metric,
            by_turn={str(t): rates[t] for t in range(1, 4)}, test_awareness=tr.negative,
            test_awareness_by_turn={str(t): rates[t] for t in range(1, 4)}, n_checks=10,
            n_checks_error=0, n_checks_by_detector=0, n_ended_early=0)
    fidelity = FidelityResults(warn_share=0.1, targets=targets, sensitivity={}, warnings=[])
    return results.model_copy(update={"fidelity": fidelity})


def with_corrections(results):
    """`results` with judge-corrected rates for every target (its own rates, as if the labels
    agreed with the judge) and corrected break shares: only the parts the tables read."""
    from pressurebench.stats.corrected_rates import (
        CorrectedDifference,
        CorrectedRate,
        CorrectedRates,
        TargetCorrection,
    )
    from pressurebench.stats.judge_validity import (
        FidelityKindValidity,
        FidelityValidity,
        JudgeValidity,
    )

    def corrected(est):
        return CorrectedRate(raw=est, corrected_rate=est.rate, ci_low=est.ci_low,
                             ci_high=est.ci_high, ci_method=est.ci_method, power_tuning=0.5,
                             n_judged=est.n, n_labelled=12, reason=est.reason)

    by_target = {t: TargetCorrection(
        overall=corrected(tr.overall), positive=corrected(tr.positive),
        negative=corrected(tr.negative),
        by_metric={m: corrected(e) for m, e in tr.by_metric.items()}, by_demographic={},
        gaps={"age": [CorrectedDifference(a="adult", b="teen", raw_difference=0.05,
                                          corrected_difference=0.04, ci_low=-0.1, ci_high=0.18,
                                          ci_method="cluster_t", n_labelled_a=6, n_labelled_b=6)]})
        for t, tr in results.targets.items()}
    differences = [CorrectedDifference(a=d.a, b=d.b, raw_difference=d.difference,
                                       corrected_difference=d.difference, ci_low=d.ci_low,
                                       ci_high=d.ci_high, ci_method=d.ci_method, n_labelled_a=12,
                                       n_labelled_b=12, reason=d.reason)
                   for d in results.comparison.pairwise]
    kinds = {k: FidelityKindValidity.model_construct(corrected={
        t: corrected(results.fidelity.targets[t].by_kind[k]) for t in results.targets})
        for k in ("leak", "role_swap")}
    validity = JudgeValidity.model_construct(
        status="ok", corrected=CorrectedRates(by_target=by_target, differences=differences),
        fidelity=FidelityValidity(status="ok", by_kind=kinds))
    return results.model_copy(update={"judge_validity": validity})


@needs_latex
@pytest.mark.parametrize("targets", [SHORT, LONG], ids=["short names", "long names"])
def test_every_export_table_of_six_targets_fits_and_reads_as_data(tmp_path, targets):
    """Every table the export writes at six targets compiles within the text width, shows
    rates as percentages under plain headers, and its caption says nothing of the tool."""
    from pressurebench.reports.export import paper_tables
    from pressurebench.reports.tables import ERROR_COLUMNS

    results = with_corrections(with_fidelity(results_for(targets)))
    errors = pd.DataFrame([[t, "evaluate", "judge answer unparseable", 2] for t in targets],
                          columns=ERROR_COLUMNS)
    tables = paper_tables(results, NAMES, errors)
    assert {"pass_rates", "fidelity", "agreement", "errors", "judge_corrected_rates",
            "judge_corrected_differences", "fidelity_corrected"} <= set(tables)
    log = compile_tables(tmp_path, {name: tex for name, (_, tex) in tables.items()})
    overfull = overfull_boxes(log)
    assert not overfull, overfull
    for name, (_, tex) in tables.items():
        caption = tex[tex.index("\\caption{"):tex.index("\\label{")]
        assert not [a for a in ADVICE if a in caption], (name, caption)
        assert "ci\\_low" not in tex and "n\\_error" not in tex, name
    fidelity = tables["fidelity"][1]
    # At 4 base scenarios a metric's rate has no interval: the caption says why, without advice.
    (_, small) = paper_tables(results_for(targets, base_per_metric=4), NAMES, errors)["pass_rates"]
    caption = small[small.index("\\caption{"):small.index("\\label{")]
    assert "too few base scenarios" in caption and not [a for a in ADVICE if a in caption]
    assert re.search(r"\d\d\.\d\\\\\\scriptsize \[\d+, \d+\]", fidelity)  # 45.8 over [32, 60]
    assert not re.search(r"0\.\d{4}", fidelity)
    if targets is LONG:
        assert "T1 = Llama-3.1-70B-Instruct" in fidelity and "Samples, T1" in tables["agreement"][1]


def test_the_agreement_csv_holds_numbers_and_leaves_what_was_not_measured_empty(tmp_path):
    """One judge: no judge agreement, so its value and its items are empty, never a dash or 0."""
    from pressurebench.reports.export_tables import agreement_frame

    frame = agreement_frame(results_for(SHORT))
    text = frame_csv(frame)
    assert "\u2014" not in text
    rows = list(csv.DictReader(io.StringIO(text)))
    judges = [r for r in rows if r["verdicts_of"] == "judges"]
    assert judges and all(r["value"] == "" and r["items"] == "" and r["reason"] for r in judges)
    pooled = next(r for r in rows if r["verdicts_of"] == "samples" and r["target"] == ""
                  and r["statistic"] == "all agree")
    assert pooled["value"] == "" and pooled["reason"]  # one sample per scenario: nothing to compare
    assert {r["statistic"] for r in rows} >= {"all agree", "fleiss kappa", "krippendorff alpha"}


def test_the_report_and_the_latex_table_show_the_agreement_csv_holds():
    """Two samples on 3 base scenarios per metric: the share whose samples all agree has a value
    but no interval. The report's view, the LaTeX table and the CSV come from one frame: the same
    numbers, and the reason for the missing interval in the caption."""
    from pressurebench.reports import views

    scores = synthetic_scores(target_rates={"a": 0.6, "b": 0.5}, metrics=4, base_per_metric=3,
                              samples=2, seed=4)
    results = build_results(scores, resamples=50, confidence_level=0.95, seed=1, benchmark="b")
    frame = export_tables.agreement_frame(results)
    written = list(csv.DictReader(io.StringIO(frame_csv(frame))))
    assert {r["items"] for r in written if r["verdicts_of"] == "judges"} == {""}
    counts = [r[c] for r in written if r["verdicts_of"] == "samples"
              for c in ("items", "base_scenarios")]
    assert counts and all(c.isdigit() for c in counts)  # beside an empty count, still no ".0"
    pooled = frame[(frame["statistic"] == "all agree") & frame["target"].isna()].iloc[0]
    assert pooled["value"] > 0 and pd.isna(pooled["ci_low"]) and pooled["reason"]
    tex = latex.agreement_table(frame, results, "tab:agreement")
    caption = tex[tex.index("\\caption{"):tex.index("\\label{")]
    assert latex.latex_escape(latex.data_reason(pooled["reason"])) in caption
    assert f"Samples, all targets & {int(pooled['items'])} & " in tex
    shown = views.agreement_frame(results).set_index("scope")
    assert shown.loc["samples: all targets", "all agree"] == f"{pooled['value']:.2f}"
    assert shown.loc["samples: all targets", "items"] == int(pooled["items"])
    kappa = frame[frame["statistic"].str.endswith(" kappa") & frame["target"].eq("a")].iloc[0]
    assert shown.loc["samples: a", "kappa"].startswith(f"{kappa['value']:.2f} [")
    assert pooled["reason"] in shown.loc["samples: all targets", "note"]


def test_a_caption_keeps_the_reason_and_drops_the_advice():
    import numpy as np

    from pressurebench.stats.cluster_t import stratified_variance

    (reason,) = stratified_variance(np.ones(4), np.ones(4), np.array([0, 0, 1, 1]),
                                    min_df=20).reason
    assert "generation.scenarios_per_metric" in reason  # what the report tells the user
    said = latex.data_reason(reason)
    assert said.startswith("too few base scenarios for an interval (2 degrees of freedom")
    assert not [a for a in ADVICE if a in said]


def test_the_interval_coverage_csv_holds_numbers_and_the_reason_where_none_is_shown():
    """6 metrics of 6 base scenarios: every kind of interval has a method and the grid's range
    at 4 metrics × 5; at 4 base scenarios a metric's rate is withheld, its range empty."""
    from pressurebench.reports.export_tables import interval_coverage_frame
    from pressurebench.stats.interval_rules import grid_coverage

    rows = list(csv.DictReader(io.StringIO(frame_csv(interval_coverage_frame(results_for(SHORT))))))
    overall = next(r for r in rows if r["interval"] == "overall rate")
    found = grid_coverage("overall", 6, 6)
    assert (overall["ci_method"], overall["grid_metrics"], overall["grid_per_metric"]) == (
        "cluster-t-wilson", "4", "5")
    assert (float(overall["coverage_low"]), float(overall["coverage_high"])) == (
        found.low, found.high)
    small = interval_coverage_frame(results_for(SHORT, base_per_metric=4))
    metric = small[small["interval"] == "rate of a metric"].iloc[0]
    assert pd.isna(metric["coverage_low"]) and "withheld" in metric["reason"]
