"""The judge probes in reports: the results report's headline, and the study's tables and figure.

The headline says when the judge shares a model family with a target or the generator, and
warns when a probe's flip rate exceeds its floors' by more than `validation.judge_probes_warn`
with a Holm-significant excess (or the judge disagrees with itself that often), naming the
family the correction runs over. The study's own report (notebooks/validation/judge_probes.ipynb)
shows, per probe and target, how often the verdict moved and by how much more than each floor,
the pass rate before and after the edit, and for the identity probe the judge's part of each
demographic gap with its interval and the share of the gap it is. "No data" is never drawn at 0.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..stats.results import Results
from ..validation.judge_probes import JudgeProbesStudy, ProbeResult
from .figures import ReportFigure, dodge_offsets, interval_point, message, no_data, palette, plain
from .notebook_display import Note
from .tables import (
    MISSING,
    format_difference,
    format_estimate,
    format_share,
    interval_method,
    method_label,
)
from .validation_tables import contrast_columns, family_note


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
        family = f"\n\n{notes.multiplicity}." if notes.multiplicity else ""
        parts.append(
            "**⚠ The judge's verdict moved when only an irrelevant feature changed.** Pass "
            "rates and demographic gaps below may be partly the judge's doing; see the judge "
            f"probes' report.\n\n{lines}{family}"
        )
    return "\n\n".join(parts)


def _flip_cell(result: ProbeResult, target: str, metric: str | None):
    return next(f.estimate for f in result.flips if f.target == target and f.metric_id == metric)


def summary_frame(study: JudgeProbesStudy) -> pd.DataFrame:
    """Per probe × target: the flip rate with its interval, its excess over each floor, the pass
    rate before and after the edit, and their paired difference (after − before)."""
    rows = []
    for result in study.results:
        diffs = {d.target: d for d in result.target_differences}
        for t in result.targets:
            flips = _flip_cell(result, t, None)
            d = diffs.get(t)
            over = [e for e in study.flip_excess
                    if (e.probe, e.target, e.metric_id) == (result.probe, t, None)]
            rows.append({
                "probe": result.probe,
                "target": t,
                "flip rate": format_estimate(flips),
                "rows paired": flips.n,
                "base scenarios": flips.n_clusters,
                "rows left out": flips.n_error,
                "ci method": interval_method(flips.ci_method, flips.reason),
                "excess over the floors": "; ".join(
                    f"{e.floor}: " + format_difference(e.excess.value, e.excess.ci_low,
                                                       e.excess.ci_high) for e in over) or MISSING,
                "pass rate before": format_estimate(result.rates_main[t]),
                "pass rate after": format_estimate(result.rates_arm[t]),
                "after − before": MISSING if d is None else format_difference(
                    d.difference, d.ci_low, d.ci_high),
            })
    return pd.DataFrame(rows, columns=[
        "probe", "target", "flip rate", "rows paired", "base scenarios", "rows left out",
        "ci method", "excess over the floors", "pass rate before", "pass rate after",
        "after − before"])


def excess_frame(study: JudgeProbesStudy) -> pd.DataFrame:
    """Per probe, floor and target (metric "all"), then per metric: both flip rates on the
    rows both judged, and the excess (probe − floor) with its interval and Holm-corrected test."""
    rows = []
    for e in study.flip_excess:
        found = contrast_columns(e.excess)
        rows.append({"probe": e.probe, "floor": e.floor, "target": e.target,
                     "metric": e.metric_id or "all", "rows": e.n,
                     "probe flips": format_share(e.probe_rate),
                     "floor flips": format_share(e.floor_rate),
                     "excess (probe − floor)": found.pop("value"), **found})
    return pd.DataFrame(rows, columns=["probe", "floor", "target", "metric", "rows", "probe flips",
                                       "floor flips", "excess (probe − floor)", "ci method", "p",
                                       "p (Holm)", "after Holm", "note"])


def excess_note(study: JudgeProbesStudy) -> str:
    """The excesses' family, or why there is none."""
    if not study.flip_excess:
        return ("No excess over a floor: run the floors (repeat, paraphrase) beside the probes "
                "in validation.judge_probes to read a flip rate against them.")
    note = family_note(study.flip_excess_multiplicity, "excess(es) over a floor")
    run = {r.probe for r in study.results}
    if run & {"identity", "verbosity"} and "paraphrase" not in run:
        note += (" The paraphrase floor was not run (validation.judge_probes): an excess over "
                 "repeat alone cannot tell the probed feature from the edit itself.")
    return note


def flips_by_metric_frame(result: ProbeResult) -> pd.DataFrame:
    rows = [{
        "target": f.target, "metric": f.metric_id, "flip rate": format_estimate(f.estimate),
        "n": f.estimate.n, "base scenarios": f.estimate.n_clusters, "n_error": f.estimate.n_error,
        "ci method": interval_method(f.estimate.ci_method, f.estimate.reason),
    } for f in result.flips if f.metric_id is not None]
    return pd.DataFrame(rows, columns=["target", "metric", "flip rate", "n", "base scenarios",
                                       "n_error", "ci method"])


def _share_cell(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return MISSING
    if low is None:
        return format_share(value)
    return f"{format_share(value)} [{format_share(low)}, {format_share(high)}]"


def identity_gap_frame(study: JudgeProbesStudy) -> pd.DataFrame:
    """Each demographic gap as measured and as judged when every user reads as one variant,
    the judge's part of it (measured − as if) with its interval and Holm-corrected test, and
    the share of the gap that part is."""
    rows = []
    for g in study.identity_gaps:
        part, share = g.judge_part, g.explained_share
        found = contrast_columns(part)
        notes = [n for n in (g.measured.reason, part.reason,
                             share.reason and f"share: {share.reason}") if n]
        rows.append({
            "target": g.target,
            "gap": f"{g.axis}: {g.a} − {g.b}",
            "as measured": format_difference(g.measured.difference, g.measured.ci_low,
                                             g.measured.ci_high),
            "judged as if every user were": ", ".join(f"{k}: {v}" for k, v in g.as_if.items()),
            "gap then": format_difference(g.as_if_one_variant.difference,
                                          g.as_if_one_variant.ci_low,
                                          g.as_if_one_variant.ci_high),
            "judge's part": found["value"],
            "ci method": found["ci method"],
            "p": found["p"], "p (Holm)": found["p (Holm)"], "after Holm": found["after Holm"],
            "share of the gap": _share_cell(share.value, share.ci_low, share.ci_high),
            "share method": method_label(share.ci_method),
            "note": "; ".join(notes),
        })
    return pd.DataFrame(rows, columns=["target", "gap", "as measured",
                                       "judged as if every user were", "gap then",
                                       "judge's part", "ci method", "p", "p (Holm)", "after Holm",
                                       "share of the gap", "share method", "note"])


def judge_part_note(study: JudgeProbesStudy) -> str:
    """The judge parts' family, in a sentence ("" without a gap: `identity_gap_view` says why)."""
    if not study.identity_gaps:
        return ""
    return family_note(study.judge_part_multiplicity, "judge's part(s) of a gap")


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
