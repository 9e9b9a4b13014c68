"""The judge probes in reports: the results report's headline, and the study's tables and figure.

The headline says when the judge shares a model family with a target or the generator, and
warns when a probe's verdict flip rate exceeds `validation.judge_probes_warn`. The study's
own report (notebooks/validation/judge_probes.ipynb) shows, per probe and target, how often the
verdict moved, the pass rate before and after the edit, and for the identity probe how much of
the demographic gap the judge's reading of the user explains. "No data" is never drawn at 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..stats.results import Results
from ..validation.judge_probes import JudgeProbesStudy, ProbeResult
from .figures import ReportFigure, dodge_offsets, interval_point, message, no_data, palette, plain
from .notebook_display import Note
from .tables import MISSING, format_difference, format_estimate, format_share, interval_method


def warnings_markdown(results: Results) -> str:
    """The family notes and the flip-rate warnings, for the top of the results report."""
    notes = results.judge_probes
    if notes is None or not (notes.warnings or notes.family):
        return ""
    parts = []
    if notes.family:
        parts.append("**The judge reads its own family.** " + " ".join(notes.family))
    if notes.warnings:
        lines = "\n".join(f"- {w}" for w in notes.warnings)
        parts.append(
            "**⚠ The judge's verdict moved when only an irrelevant feature changed.** Pass "
            "rates and demographic gaps below may be partly the judge's doing; see the judge "
            f"probes' report.\n\n{lines}"
        )
    return "\n\n".join(parts)


def _flip_cell(result: ProbeResult, target: str, metric: str | None):
    return next(f.estimate for f in result.flips if f.target == target and f.metric_id == metric)


def summary_frame(study: JudgeProbesStudy) -> pd.DataFrame:
    """Per probe × target: the flip rate with its interval, the pass rate before and after the
    edit, their paired difference (after − before), and whether the flip rate is above the
    warning threshold (yes, no, or — without a rate)."""
    rows = []
    for result in study.results:
        diffs = {d.target: d for d in result.target_differences}
        for t in result.targets:
            flips = _flip_cell(result, t, None)
            d = diffs.get(t)
            rows.append({
                "probe": result.probe,
                "target": t,
                "flip rate": format_estimate(flips),
                "rows paired": flips.n,
                "base scenarios": flips.n_clusters,
                "rows left out": flips.n_error,
                "ci method": interval_method(flips.ci_method, flips.reason),
                "pass rate before": format_estimate(result.rates_main[t]),
                "pass rate after": format_estimate(result.rates_arm[t]),
                "after − before": MISSING if d is None else format_difference(
                    d.difference, d.ci_low, d.ci_high),
                "above warning": MISSING if flips.rate is None else (
                    "yes" if flips.rate > study.warn else "no"),
            })
    return pd.DataFrame(rows, columns=[
        "probe", "target", "flip rate", "rows paired", "base scenarios", "rows left out",
        "ci method", "pass rate before", "pass rate after", "after − before", "above warning"])


def flips_by_metric_frame(result: ProbeResult) -> pd.DataFrame:
    rows = [{
        "target": f.target, "metric": f.metric_id, "flip rate": format_estimate(f.estimate),
        "n": f.estimate.n, "base scenarios": f.estimate.n_clusters, "n_error": f.estimate.n_error,
        "ci method": interval_method(f.estimate.ci_method, f.estimate.reason),
    } for f in result.flips if f.metric_id is not None]
    return pd.DataFrame(rows, columns=["target", "metric", "flip rate", "n", "base scenarios",
                                       "n_error", "ci method"])


def identity_gap_frame(study: JudgeProbesStudy) -> pd.DataFrame:
    """Each demographic gap as measured and as judged when every user reads as one variant."""
    rows = []
    for g in study.identity_gaps:
        rows.append({
            "target": g.target,
            "gap": f"{g.axis}: {g.a} − {g.b}",
            "as measured": format_difference(g.measured.difference, g.measured.ci_low,
                                             g.measured.ci_high),
            "judged as if every user were": ", ".join(f"{k}: {v}" for k, v in g.as_if.items()),
            "gap then": format_difference(g.as_if_one_variant.difference,
                                          g.as_if_one_variant.ci_low,
                                          g.as_if_one_variant.ci_high),
            "share explained by the judge": format_share(g.explained_share),
            "note": g.reason or g.measured.reason or "",
        })
    return pd.DataFrame(rows, columns=["target", "gap", "as measured",
                                       "judged as if every user were", "gap then",
                                       "share explained by the judge", "note"])


def identity_gap_view(study: JudgeProbesStudy) -> pd.DataFrame | Note:
    """The identity probe's gaps (`identity_gap_frame`), or, where there are none, why: the
    probe was not asked for or judged nothing, or the study has no demographic gap to read."""
    if study.identity_gaps:
        return identity_gap_frame(study)
    if "identity" not in study.probes:
        return Note("No gap to read: the identity probe is not among "
                    f"`validation.judge_probes` ({', '.join(study.probes) or 'none'}).")
    if "identity" in study.not_run:
        return Note("No gap to read: the identity probe judged no row "
                    f"({study.not_run['identity']}).")
    return Note("No gap to read: the main arm has no demographic gap "
                "(`generation.demographics` gives no axis with two values).")


def family_frame(study: JudgeProbesStudy) -> pd.DataFrame:
    rows = [{
        "target": f.target, "judges": ", ".join(f.judges),
        "shares a family with": ", ".join(f.shared_with) or "no one",
        "judges of that family": ", ".join(f.in_family) or MISSING,
        "other judges": ", ".join(f.other_judges) or MISSING,
    } for f in study.family]
    return pd.DataFrame(rows, columns=["target", "judges", "shares a family with",
                                       "judges of that family", "other judges"])


def edits_frame(result: ProbeResult) -> pd.DataFrame:
    """What the edits did: conversations edited or failed, messages, characters before/after."""
    rows = [{
        "target": e.target, "conversations": e.conversations, "edited": e.edited,
        "failed": e.errors, "messages edited": e.messages, "characters before": e.chars_before,
        "characters after": e.chars_after,
        "length ratio": MISSING if not e.chars_before else f"{e.chars_after / e.chars_before:.2f}",
        "cut off": e.truncated, "first failure": e.first_error or "",
    } for e in result.edits]
    return pd.DataFrame(rows, columns=["target", "conversations", "edited", "failed",
                                       "messages edited", "characters before", "characters after",
                                       "length ratio", "cut off", "first failure"])


def flip_rate_plot(study: JudgeProbesStudy) -> Figure:
    """Per target, each probe's flip rate with its interval and n, and the warning threshold."""
    if not study.results:
        return message(ReportFigure(figsize=(6, 1.5)), "No probe judged any row.")
    targets = study.targets
    probes = [r.probe for r in study.results]
    colours, offsets = palette(len(probes)), dodge_offsets(len(probes))
    fig = ReportFigure(figsize=(9, 1.4 + 0.5 * len(targets) * max(1, len(probes) / 2)),
                       layout="constrained")
    ax = fig.subplots()
    for si, result in enumerate(study.results):
        for ri, target in enumerate(targets):
            est, y = _flip_cell(result, target, None), ri + offsets[si]
            if est.rate is None:
                no_data(ax, 0.5, y, colours[si], f" ({est.n_error} left out)" if est.n_error else "")
                continue
            interval_point(ax, est.rate, y, est.ci_low, est.ci_high, colours[si],
                           f"{result.probe} n={est.n}")
    ax.axvline(study.warn, color="0.5", linestyle="--", linewidth=0.8)
    ax.set_yticks(range(len(targets)), [plain(t) for t in targets])
    ax.set_ylim(len(targets) - 0.5, -0.5)
    ax.set_xlim(-0.02, 1.12)
    ax.set_xticks(np.linspace(0, 1, 6))
    level = f"{study.statistics.confidence_level:.0%}"
    ax.set_xlabel(f"share of verdicts that moved ({level} CI); dashed: the warning threshold")
    ax.grid(axis="x", color="0.92")
    ax.set_title(plain("Judge probes: verdict flip rate per target and probe"))
    return fig
