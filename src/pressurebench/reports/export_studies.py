"""Paper exports of the validation studies: each arm's figures and tables beside the main run's.

A paper's validation section needs the studies' numbers as files, not copied
from their HTML reports. For every study whose comparison artifact exists
(`data/<b>/<study>.json`), and every arm in it, `export_studies` writes under
`reports/<b>/export/`, named `<study>-<arm>-<name>` (the arm's name with `/`
as `-`):

- `figures/…-rates`, `…-ranks`, `…-differences` (SVG and PDF): the figures of
  the study's report;
- `tables/…-rates.csv`: both arms' pass rates per target with n, base scenarios
  and rows without a verdict;
- `tables/…-differences.csv`: arm − main per target (metric `all`) and per
  target × metric, each with its interval, two-sided p-value and Holm's
  adjustment within the arm's family, and the family in words;
- `tables/…-rank_flips.csv`, `…-rank_correlation.csv`: how often each pair of
  targets swaps order between the arms, and Kendall's tau-b and Spearman's rho, with
  tau-b's noise ceiling (tau-b between two halves of the main arm);
- `tables/…-pairwise_changes.csv`: per pair of targets, the difference in each arm and
  its change (arm − main) with its interval, the p-value that inverts it and Holm's
  adjustment over the arm's pairs;
- paired studies: `tables/…-agreement.csv`, the arms' verdicts on the same rows
  (share agreeing, Cohen's kappa, Scott's pi, with intervals and the 2 × 2
  counts), per target and per target × metric; the evaluator study also
  `…-confusion`, the main judge's verdicts against the other judge's, and `…-gaps`,
  each demographic gap under both judges and its change (arm − main) with its
  interval, p-value and Holm's adjustment over the arm's gaps;
- the generator study: `tables/…-self_preference.csv`.

CSV holds numbers (fractions, counts; a missing value empty), each interval's
method and, where withheld, its reason; every table also comes as a captioned
LaTeX float written by `reports.latex`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ..io import read_artifact
from ..paths import Layout
from ..validation.studies import (
    EvaluatorArmResult,
    EvaluatorBiasStudy,
    GeneratorArmResult,
    GeneratorBiasStudy,
    PairedArmResult,
    UserModelBiasStudy,
)
from . import latex
from . import validation_figures as vf
from .study_frames import (
    agreement_frame,
    confusion_frame,
    correlation_frame,
    differences_frame,
    flips_frame,
    gap_changes_frame,
    pairwise_changes_frame,
    rates_frame,
    self_preference_frame,
)

STUDIES: dict[str, tuple[type[GeneratorBiasStudy | UserModelBiasStudy | EvaluatorBiasStudy],
                         str]] = {
    "generator_bias": (GeneratorBiasStudy, "generator"),
    "user_model_bias": (UserModelBiasStudy, "user model"),
    "evaluator_bias": (EvaluatorBiasStudy, "evaluator"),
}


def arm_slug(arm: str) -> str:
    """An arm's name as part of a file name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", arm)


def study_files(layout: Layout) -> dict[str, GeneratorBiasStudy | UserModelBiasStudy
                                        | EvaluatorBiasStudy]:
    """The studies whose comparison artifact exists, validated on read."""
    out: dict[str, GeneratorBiasStudy | UserModelBiasStudy | EvaluatorBiasStudy] = {}
    for name, (model, _) in STUDIES.items():
        path = layout.study_file(name)
        if path.is_file():
            out[name] = read_artifact(path, model)
    return out


def _change_cell(value, low, high) -> str:
    """A change in percentage points with its interval beneath in small type."""
    if value is None or pd.isna(value):
        return latex.DASH
    interval = (f"[{latex._percent(low, 0)}, {latex._percent(high, 0)}]"
                if low is not None and not pd.isna(low) else latex.DASH)
    return (f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{latex._percent(value)}\\\\"
            f"\\scriptsize {interval}\\end{{tabular}}")


def _points(value) -> str:
    return latex.DASH if value is None or pd.isna(value) else latex._percent(value)


def _p_cell(value) -> str:
    return latex.DASH if value is None or pd.isna(value) else f"{value:.3f}"


def _coefficient(value, low, high) -> str:
    if value is None or pd.isna(value):
        return latex.DASH
    if low is None or pd.isna(low):
        return f"{value:.2f}"
    return f"{value:.2f} [{low:.2f}, {high:.2f}]"


def _agreement_tex(frame: pd.DataFrame, caption: str, label: str, targets: list[str]) -> str:
    written, key = latex.target_names(targets)
    body = [[written.get(r.target, latex.latex_escape(r.target)), latex.latex_escape(r.metric),
             str(r.paired_rows), _coefficient(r.share_agreeing, r.share_agreeing_ci_low,
                                              r.share_agreeing_ci_high),
             _coefficient(r.cohen_kappa, r.cohen_kappa_ci_low, r.cohen_kappa_ci_high),
             _coefficient(r.scott_pi, r.scott_pi_ci_low, r.scott_pi_ci_high)]
            for r in latex.frame_rows(frame)]
    header = ["Target", "Metric", "Rows", "Agreeing", "Cohen $\\kappa$", "Scott $\\pi$"]
    return latex.table_float(latex._tabular("@{}llrrrr@{}", header, body), caption + key, label)


def _rate(value, low, high) -> str:
    if value is None or pd.isna(value):
        return latex.DASH
    if low is None or pd.isna(low):
        return latex._percent(value)
    return f"{latex._percent(value)} [{latex._percent(low, 0)}, {latex._percent(high, 0)}]"


def _rates_tex(frame: pd.DataFrame, caption: str, label: str, targets: list[str]) -> str:
    written, key = latex.target_names(targets)
    body = []
    for r in latex.frame_rows(frame):
        body.append([written.get(r.target, latex.latex_escape(r.target))] + [
            cell for side in ("main", "arm") for cell in (
                _rate(getattr(r, f"{side}_rate"), getattr(r, f"{side}_ci_low"),
                      getattr(r, f"{side}_ci_high")),
                str(getattr(r, f"{side}_n")), str(getattr(r, f"{side}_n_error")),
                str(getattr(r, f"{side}_n_clusters")))])
    header = ["Target", "Main", "n", "e", "k", "Arm", "n", "e", "k"]
    return latex.table_float(latex._tabular("@{}lrrrrrrrr@{}", header, body), caption + key,
                             label)


def arm_tables(study: str, result: GeneratorArmResult | PairedArmResult, benchmark: str,
               level: float) -> dict[str, tuple[pd.DataFrame, str]]:
    """Each of one arm's tables: its numbers (for the CSV) and its LaTeX float."""
    what = STUDIES[study][1]
    arm = latex.latex_escape(result.arm)
    b = latex.latex_escape(benchmark)
    pct = latex.latex_escape(f"{level:.0%}")
    stem = f"tab:{benchmark}-{study.replace('_', '-')}-{arm_slug(result.arm)}"
    m = result.multiplicity
    out: dict[str, tuple[pd.DataFrame, str]] = {}
    rates = rates_frame(result)
    out["rates"] = (rates, _rates_tex(
        rates,
        f"Pass rates (\\%) of {b} per target in the main arm and in the {what} arm {arm}, with "
        f"{pct} intervals where the design allows one: n rows with a verdict, e rows without one "
        "(left out of the denominator), k base scenarios.",
        f"{stem}-rates", list(result.targets)))
    differences = differences_frame(result)
    shown = differences.assign(a="arm", b="main")
    out["differences"] = (differences, latex.differences_table(
        shown,
        f"Pass rate in the {what} arm {arm} minus in the main arm of {b}, per target (metric "
        f"all) and per target $\\times$ metric, in percentage points, with {pct} intervals and "
        f"two-sided tests of no difference; $^{{*}}$: significant after Holm's correction over the "
        f"arm's family, the {m.n_comparisons} differences per target and per target $\\times$ "
        f"metric with a $p$-value (family-wise error rate {m.alpha:g}).",
        f"{stem}-differences", lead=["target", "metric"], targets=list(result.targets),
        target_columns=["target"]))
    flips = flips_frame(result)
    out["rank_flips"] = (flips, latex.table_float(
        latex.booktabs(flips),
        f"Order of each pair of targets of {b} in the main arm and the {what} arm {arm}: flipped "
        "by the point estimates, and the share of bootstrap replicates that order it oppositely.",
        f"{stem}-rank-flips"))
    correlation = correlation_frame(result)
    out["rank_correlation"] = (correlation, latex.table_float(
        latex.booktabs(correlation[["statistic", "value", "ci_low", "ci_high", "n_targets"]]),
        f"Rank correlation of the targets of {b} between the main arm and the {what} arm {arm}, "
        f"with {pct} percentile intervals; the noise ceiling is Kendall's $\\tau_b$ between two "
        "halves of the main arm (its mean over seeded splits, and the 2.5--97.5\\% range of the "
        "splits): what an arm that changes nothing would show at half the main arm's size.",
        f"{stem}-rank-correlation"))
    pairs = pairwise_changes_frame(result)
    written, key = latex.target_names(list(result.targets))
    pm = result.pairwise_multiplicity
    pairing = ("paired on the same scenarios" if result.comparison.paired
               else "the arms on unrelated scenarios")
    names = {t: written.get(t, latex.latex_escape(t)) for t in result.targets}
    body = [[f"{names[str(r.target_1)]} $-$ {names[str(r.target_2)]}",
             _points(r.difference_main), _points(r.difference_arm),
             _change_cell(r.change, r.ci_low, r.ci_high), _p_cell(r.p_value), _p_cell(r.p_holm)]
            for r in pairs.itertuples(index=False)]
    out["pairwise_changes"] = (pairs, latex.table_float(
        latex._tabular("@{}lrrrrr@{}", ["Pair", "Main", "Arm", "Change", "$p$",
                                         "$p_{\\mathrm{Holm}}$"], body),
        f"Difference between each pair of targets of {b} (percentage points) in the main arm and "
        f"in the {what} arm {arm}, and its change (arm $-$ main) with its {pct} interval "
        f"beneath ({pairing}); "
        f"$p$: its two-sided test, which inverts the interval; Holm's correction over the "
        f"{pm.n_comparisons} changes of the arm (family-wise error rate {pm.alpha:g})." + key,
        f"{stem}-pairwise-changes"))
    if isinstance(result, PairedArmResult):
        agreement = agreement_frame(result)
        out["agreement"] = (agreement, _agreement_tex(
            agreement,
            f"Agreement of the verdicts of the main arm and the {what} arm {arm} of {b} on the "
            "same rows, per target (metric all) and per target $\\times$ metric: share of rows "
            "agreeing, Cohen's $\\kappa$ and Scott's $\\pi$, with " + pct + " cluster-bootstrap "
            f"intervals over base scenarios ({latex.DASH}: undefined or withheld, reason in the "
            "CSV).", f"{stem}-agreement", list(result.targets)))
        if isinstance(result, EvaluatorArmResult):
            confusion = confusion_frame(result)
            out["confusion"] = (confusion, latex.table_float(
                latex.booktabs(confusion),
                f"Verdicts of the main judge (rows) against the judge of {arm} (columns) on the "
                f"same conversations of {b}, per target.", f"{stem}-confusion"))
            out["gaps"] = _gaps_table(result, b, arm, pct, stem)
    if isinstance(result, GeneratorArmResult):
        preference = self_preference_frame(result)
        p = result.self_preference
        interval = (f"[{latex._percent(p.ci_low)}, {latex._percent(p.ci_high)}]"
                    if p.ci_low is not None else latex.DASH)
        tabular = latex._tabular("@{}lrr@{}", ["Generator family", "pp", "Interval (pp)"],
                                 [[latex.latex_escape(p.generator_family),
                                   latex._percent(p.value), interval]])
        members = "; ".join(p.in_family) or "none"
        others = "; ".join(p.out_of_family) or "none"
        out["self_preference"] = (preference, latex.table_float(
            tabular,
            f"Self-preference of the generator of {arm} ({b}): mean change (arm $-$ main) of the "
            f"targets of its family minus mean change of the others, in percentage points, with "
            f"its {pct} interval. Family: {latex.latex_escape(members)}; others: "
            f"{latex.latex_escape(others)}."
            + (f" {latex.DASH}: {latex.latex_escape(p.reason)}." if p.reason else ""),
            f"{stem}-self-preference"))
    return out


def _gaps_table(result: EvaluatorArmResult, b: str, arm: str, pct: str, stem: str
                ) -> tuple[pd.DataFrame, str]:
    gaps = gap_changes_frame(result)
    written, key = latex.target_names(list(result.targets))
    gm = result.gap_multiplicity
    body = [[written.get(str(r.target), latex.latex_escape(str(r.target))),
             latex.latex_escape(f"{r.a} - {r.b}"),
             _change_cell(r.gap_main, r.gap_main_ci_low, r.gap_main_ci_high),
             _change_cell(r.gap_arm, r.gap_arm_ci_low, r.gap_arm_ci_high),
             _change_cell(r.change, r.ci_low, r.ci_high), _p_cell(r.p_holm)]
            for r in gaps.itertuples(index=False)]
    return gaps, latex.table_float(
        latex._tabular("@{}llrrrr@{}", ["Target", "Gap", "Main judge", "Arm judge", "Change",
                                         "$p_{\\mathrm{Holm}}$"], body),
        f"Demographic gaps of {b} (percentage points) under the main judge and under the judge "
        f"of {arm} on the same conversations, with {pct} intervals beneath, and the change "
        "(arm $-$ main), a paired contrast on the same rows; $p_{\\mathrm{Holm}}$: its "
        f"two-sided test, which inverts the interval, after Holm's correction over the "
        f"{gm.n_comparisons} gap changes of the arm (family-wise error rate {gm.alpha:g})." + key,
        f"{stem}-gaps")


def arm_figures(result: GeneratorArmResult | PairedArmResult, level: float) -> dict:
    return {"rates": vf.rates_plot(result, level), "ranks": vf.rank_bump_chart(result),
            "differences": vf.difference_forest_plot(result, level)}


def export_studies(layout: Layout, out_dir: Path, save_figure, save_table
                   ) -> dict[str, list[str]]:
    """Write every study's arms' figures and tables with `save_figure` / `save_table`
    (`reports.export`'s writers); the files written, by kind."""
    written: dict[str, list[str]] = {"figures": [], "tables": []}
    for study, data in study_files(layout).items():
        level = data.statistics.confidence_level
        for result in data.arms:
            prefix = f"{study}-{arm_slug(result.arm)}"
            for name, fig in arm_figures(result, level).items():
                written["figures"] += save_figure(fig, out_dir / "figures", f"{prefix}-{name}")
            for name, (frame, tex) in arm_tables(study, result, data.benchmark, level).items():
                written["tables"] += save_table(frame, tex, out_dir / "tables", f"{prefix}-{name}")
    return written
