"""Paper exports of the judge probes (`data/<b>/validation/probes/bias/judge_probes.json`),
beside the other studies'.

Under `reports/<b>/export/`, when the study's artifact exists:

- `figures/judge_probes-flip_rates` (SVG, PDF): each probe's flip rate per target with its
  interval and the warning threshold (the figure of the study's report);
- `tables/judge_probes-flips.csv`: per probe × target (metric `all`) and per metric, the share
  of rows whose verdict moved, with n, base scenarios, rows left out and the interval (or why
  it was withheld);
- `tables/judge_probes-pass_rates.csv`: per probe × target, the pass rate before and after the
  edit on the paired rows and their paired difference (after − before);
- `tables/judge_probes-flip_excess.csv`: per probe, floor (repeat, paraphrase) and target
  (metric `all`) and per metric, both flip rates on the rows both judged and the excess
  (probe − floor) with its interval, the p-value that inverts it, Holm's adjustment over the
  study's excesses and the family in words;
- `tables/judge_probes-identity_gaps.csv`: each demographic gap as measured and as judged when
  every user reads as one variant, the judge's part of it (measured − as if) with its
  interval, p-value and Holm's adjustment over the study's judge parts, and the share of the
  gap that part is with Fieller's interval (or why it is withheld).

CSV holds numbers (fractions, counts; a missing value empty); each table also comes as a
captioned LaTeX float.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..io import read_artifact
from ..paths import Layout
from ..validation.judge_probes import STAGE, JudgeProbesStudy
from . import latex
from .judge_probes import flip_rate_plot

ALL_METRICS = "all"
PREFIX = "judge_probes"


def flips_frame(study: JudgeProbesStudy) -> pd.DataFrame:
    rows = [{"probe": r.probe, "target": f.target, "metric": f.metric_id or ALL_METRICS,
             "flip_rate": f.estimate.rate, "ci_low": f.estimate.ci_low,
             "ci_high": f.estimate.ci_high, "n": f.estimate.n, "n_error": f.estimate.n_error,
             "n_clusters": f.estimate.n_clusters, "ci_method": f.estimate.ci_method,
             "reason": f.estimate.reason}
            for r in study.results for f in r.flips]
    return pd.DataFrame(rows, columns=["probe", "target", "metric", "flip_rate", "ci_low",
                                       "ci_high", "n", "n_error", "n_clusters", "ci_method",
                                       "reason"])


def pass_rates_frame(study: JudgeProbesStudy) -> pd.DataFrame:
    rows = []
    for r in study.results:
        for d in r.target_differences:
            rows.append({"probe": r.probe, "target": d.target, "before": d.rate_b,
                         "after": d.rate_a, "n": d.n_a, "difference": d.difference,
                         "ci_low": d.ci_low, "ci_high": d.ci_high, "ci_method": d.ci_method,
                         "reason": d.reason})
    return pd.DataFrame(rows, columns=["probe", "target", "before", "after", "n", "difference",
                                       "ci_low", "ci_high", "ci_method", "reason"])


TESTED = ["ci_low", "ci_high", "ci_method", "p_value", "p_holm", "holm_significant",
          "n_comparisons", "reason"]
EXCESS_COLUMNS = ["probe", "floor", "target", "metric", "n", "probe_rate", "floor_rate",
                  "excess", *TESTED, "family"]
GAP_COLUMNS = ["target", "axis", "a", "b", "as_if", "gap", "gap_ci_low", "gap_ci_high",
               "gap_as_if", "gap_as_if_ci_low", "gap_as_if_ci_high", "judge_part",
               *(f"judge_part_{c}" for c in TESTED), "explained_share", "explained_share_ci_low",
               "explained_share_ci_high", "explained_share_ci_method", "explained_share_reason",
               "family"]


def _tested(prefix: str, c) -> dict:
    return {f"{prefix}{k}": getattr(c, k) for k in TESTED}


def flip_excess_frame(study: JudgeProbesStudy) -> pd.DataFrame:
    family = study.flip_excess_multiplicity.family
    rows = [{"probe": e.probe, "floor": e.floor, "target": e.target,
             "metric": e.metric_id or ALL_METRICS, "n": e.n, "probe_rate": e.probe_rate,
             "floor_rate": e.floor_rate, "excess": e.excess.value, **_tested("", e.excess),
             "family": family}
            for e in study.flip_excess]
    return pd.DataFrame(rows, columns=EXCESS_COLUMNS)


def identity_gaps_frame(study: JudgeProbesStudy) -> pd.DataFrame:
    family = study.judge_part_multiplicity.family
    rows = [{"target": g.target, "axis": g.axis, "a": g.a, "b": g.b,
             "as_if": "; ".join(f"{k}: {v}" for k, v in g.as_if.items()),
             "gap": g.measured.difference, "gap_ci_low": g.measured.ci_low,
             "gap_ci_high": g.measured.ci_high, "gap_as_if": g.as_if_one_variant.difference,
             "gap_as_if_ci_low": g.as_if_one_variant.ci_low,
             "gap_as_if_ci_high": g.as_if_one_variant.ci_high,
             "judge_part": g.judge_part.value, **_tested("judge_part_", g.judge_part),
             "explained_share": g.explained_share.value,
             "explained_share_ci_low": g.explained_share.ci_low,
             "explained_share_ci_high": g.explained_share.ci_high,
             "explained_share_ci_method": g.explained_share.ci_method,
             "explained_share_reason": g.explained_share.reason, "family": family}
            for g in study.identity_gaps]
    return pd.DataFrame(rows, columns=GAP_COLUMNS)


def _stacked(value: str, interval: str) -> str:
    """A number with its interval beneath in small type, as the rates tables write them."""
    return (f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{value}\\\\\\scriptsize {interval}"
            "\\end{tabular}")


def _points_cell(value, low, high, scale: float = 100.0, signed: bool = True) -> str:
    """`value` (scaled, signed) with its interval beneath; a dash where there is none."""
    if value is None or pd.isna(value):
        return latex.DASH
    sign = "+" if signed else ""
    shown = f"{scale * value:{sign}.1f}"
    if low is None or pd.isna(low):
        return _stacked(shown, latex.DASH)
    return _stacked(shown, f"[{scale * low:{sign}.0f}, {scale * high:{sign}.0f}]")


def _p_cell(value) -> str:
    return latex.DASH if value is None or pd.isna(value) else f"{value:.3f}"


def _interval(value, low, high, signed: bool = False) -> str:
    if value is None or pd.isna(value):
        return latex.DASH
    sign = "+" if signed else ""
    if low is None or pd.isna(low):
        return f"{100 * value:{sign}.1f}"
    return f"{100 * value:{sign}.1f} [{100 * low:{sign}.0f}, {100 * high:{sign}.0f}]"


def probe_tables(study: JudgeProbesStudy) -> dict[str, tuple[pd.DataFrame, str]]:
    b = latex.latex_escape(study.benchmark)
    pct = latex.latex_escape(f"{study.statistics.confidence_level:.0%}")
    stem = f"tab:{study.benchmark}-judge-probes"
    targets = list(study.targets)
    written, key = latex.target_names(targets)

    def name(t: str) -> str:
        return written.get(t, latex.latex_escape(t))

    flips = flips_frame(study)
    body = [[latex.latex_escape(r.probe), name(r.target), latex.latex_escape(r.metric),
             _interval(r.flip_rate, r.ci_low, r.ci_high), str(r.n), str(r.n_error),
             str(r.n_clusters)] for r in latex.frame_rows(flips)]
    out = {"flips": (flips, latex.table_float(
        latex._tabular("@{}lllrrrr@{}", ["Probe", "Target", "Metric", "Flips (\\%)", "n", "e", "k"],
                       body),
        f"Judge probes of {b}: share of verdicts (\\%) that moved when only the probed feature "
        f"of the transcript changed, with {pct} intervals where the design allows one: n rows "
        "with a verdict before and after the edit, e rows left out, k base scenarios." + key,
        f"{stem}-flips"))}
    rates = pass_rates_frame(study)
    body = [[latex.latex_escape(r.probe), name(r.target), _interval(r.before, None, None),
             _interval(r.after, None, None), str(r.n),
             _interval(r.difference, r.ci_low, r.ci_high, signed=True)]
            for r in latex.frame_rows(rates)]
    out["pass_rates"] = (rates, latex.table_float(
        latex._tabular("@{}llrrrr@{}", ["Probe", "Target", "Before", "After", "n",
                                         "After $-$ before (pp)"], body),
        f"Judge probes of {b}: pass rate (\\%) before and after the edit on the same rows, and "
        f"the paired difference with its {pct} interval." + key, f"{stem}-pass-rates"))
    excess = flip_excess_frame(study)
    m = study.flip_excess_multiplicity
    body = [[latex.latex_escape(r.probe), latex.latex_escape(r.floor), name(r.target),
             latex.latex_escape(r.metric), str(r.n), _interval(r.probe_rate, None, None),
             _interval(r.floor_rate, None, None),
             _points_cell(r.excess, r.ci_low, r.ci_high), _p_cell(r.p_holm)]
            for r in latex.frame_rows(excess)]
    out["flip_excess"] = (excess, latex.table_float(
        latex._tabular("@{}lllrrrrrr@{}", ["Probe", "Floor", "Target", "Metric", "n",
                                            "Probe", "Floor", "Excess", "$p_{\\mathrm{Holm}}$"],
                       body),
        f"Judge probes of {b} over their floors: share of verdicts (\\%) each probe and each "
        "floor (repeat: the judge asked again; paraphrase: the user's turns reworded in the same "
        "voice) moved on the same n rows, and the excess (probe $-$ floor, percentage points) "
        f"with its paired {pct} interval beneath; $p_{{\\mathrm{{Holm}}}}$: its two-sided "
        f"test, which inverts the interval, after Holm's correction over the {m.n_comparisons} "
        f"excesses of the study (family-wise error rate {m.alpha:g})." + key,
        f"{stem}-flip-excess"))
    gaps = identity_gaps_frame(study)
    as_if = "; ".join(sorted(set(gaps["as_if"]))) or "one variant"
    j = study.judge_part_multiplicity
    body = [[name(r.target), latex.latex_escape(f"{r.a} - {r.b}"),
             _points_cell(r.gap, r.gap_ci_low, r.gap_ci_high),
             _interval(r.gap_as_if, None, None, signed=True),
             _points_cell(r.judge_part, r.judge_part_ci_low, r.judge_part_ci_high),
             _p_cell(r.judge_part_p_holm),
             _points_cell(r.explained_share, r.explained_share_ci_low,
                          r.explained_share_ci_high, signed=False)]
            for r in latex.frame_rows(gaps)]
    out["identity_gaps"] = (gaps, latex.table_float(
        latex._wrapped(latex._tabular("@{}llrrrrr@{}", [
            "Target", "Gap", "Measured", "As if", "Judge's part", "$p_{\\mathrm{Holm}}$",
            "Share (\\%)"], body), 1),
        f"Whose gap is it? Demographic gaps of {b} (percentage points) as measured and when "
        f"every conversation is judged as if its user were {latex.latex_escape(as_if)} (the "
        "other variant's user turns rewritten into that voice, the replies unchanged). The "
        "judge's part is measured $-$ as if on the same rows, with its paired " + pct +
        " interval beneath and its two-sided test after Holm's correction over the "
        f"{j.n_comparisons} judge's parts of the study; share: the judge's part over the "
        "measured gap, with Fieller's interval (withheld where the gap's interval includes 0)."
        + key, f"{stem}-identity-gaps"))
    return out


def export_probes(layout: Layout, out_dir: Path, save_figure, save_table
                  ) -> dict[str, list[str]]:
    """The judge probes' figure and tables, when the study's artifact exists."""
    written: dict[str, list[str]] = {"figures": [], "tables": []}
    path = layout.study_file(STAGE)
    if not path.is_file():
        return written
    study = read_artifact(path, JudgeProbesStudy)
    written["figures"] += save_figure(flip_rate_plot(study), out_dir / "figures",
                                      f"{PREFIX}-flip_rates")
    for name, (frame, tex) in probe_tables(study).items():
        written["tables"] += save_table(frame, tex, out_dir / "tables", f"{PREFIX}-{name}")
    return written
