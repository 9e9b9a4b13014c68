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
- `tables/judge_probes-identity_gaps.csv`: each demographic gap as measured and as judged when
  every user reads as one variant, and the share of the gap that explains.

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


def identity_gaps_frame(study: JudgeProbesStudy) -> pd.DataFrame:
    rows = [{"target": g.target, "axis": g.axis, "a": g.a, "b": g.b,
             "as_if": "; ".join(f"{k}: {v}" for k, v in g.as_if.items()),
             "gap": g.measured.difference, "gap_ci_low": g.measured.ci_low,
             "gap_ci_high": g.measured.ci_high, "gap_as_if": g.as_if_one_variant.difference,
             "gap_as_if_ci_low": g.as_if_one_variant.ci_low,
             "gap_as_if_ci_high": g.as_if_one_variant.ci_high,
             "explained_share": g.explained_share, "reason": g.reason}
            for g in study.identity_gaps]
    return pd.DataFrame(rows, columns=["target", "axis", "a", "b", "as_if", "gap", "gap_ci_low",
                                       "gap_ci_high", "gap_as_if", "gap_as_if_ci_low",
                                       "gap_as_if_ci_high", "explained_share", "reason"])


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
    gaps = identity_gaps_frame(study)
    as_if = "; ".join(sorted(set(gaps["as_if"]))) or "one variant"
    body = [[name(r.target), latex.latex_escape(f"{r.a} - {r.b}"),
             _interval(r.gap, r.gap_ci_low, r.gap_ci_high, signed=True),
             _interval(r.gap_as_if, r.gap_as_if_ci_low, r.gap_as_if_ci_high, signed=True),
             latex.DASH if r.explained_share is None or pd.isna(r.explained_share)
             else f"{100 * r.explained_share:.0f}"]
            for r in latex.frame_rows(gaps)]
    out["identity_gaps"] = (gaps, latex.table_float(
        latex._tabular("@{}llrrr@{}", ["Target", "Gap", "Measured (pp)", "As if (pp)",
                                        "Explained (\\%)"], body),
        f"Whose gap is it? Demographic gaps of {b} as measured and when every conversation is "
        f"judged as if its user were {latex.latex_escape(as_if)} (the other variant's user turns "
        "rewritten into that voice, the replies unchanged), "
        f"with {pct} intervals; explained: the share of the gap the judge's reading of the user "
        "accounts for." + key, f"{stem}-identity-gaps"))
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
