"""Figures of a benchmark's results, as `matplotlib.figure.Figure` objects.

Figures are built on `Figure()` rather than pyplot: no global state, nothing
to close, safe under any backend (Agg in DVC runs, inline in notebooks). Every
rate is drawn with its interval and its n, and a rate that does not exist is
written "no data" where its point would be, never drawn at 0.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ..stats.estimates import Difference, RateEstimate
from ..stats.results import Results
from .tables import OVERALL, method_label, metric_ids, metric_label

NO_DATA = "no data"
NO_INTERVAL = "no CI"
PALETTE = "colorblind"
SMALL = 7
NOTEBOOK_DPI = 100


class ReportFigure(Figure):
    """A Figure that shows itself in a notebook as a PNG.

    A figure made without pyplot has no notebook display unless the inline
    backend happens to be active; this one does not depend on it.
    """

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        # "tight" takes in every text, a caption or a long reason included, not just the axes.
        self.savefig(buf, format="png", dpi=NOTEBOOK_DPI, metadata={"Software": None},
                     bbox_inches="tight")
        return buf.getvalue()


def plain(text: str) -> str:
    """Text drawn as written: a `$` in a metric name must not start matplotlib's math mode."""
    return text.replace("$", r"\$")


def palette(n: int) -> list:
    return sns.color_palette(PALETTE, max(n, 1))


def _level(results: Results) -> str:
    return f"{results.statistics.confidence_level:.0%}"


def dodge_offsets(k: int, band: float = 0.7) -> np.ndarray:
    """Vertical offsets that spread k series over one row without overlap."""
    if k == 1:
        return np.zeros(1)
    return (np.arange(k) - (k - 1) / 2) * (band / k)


def message(fig: Figure, text: str) -> Figure:
    ax = fig.subplots()
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    ax.set_axis_off()
    return fig


def _legend(ax: Axes, targets: Sequence[str], colours) -> None:
    handles = [Line2D([], [], marker="o", linestyle="", color=c, label=t) for t, c in zip(targets, colours)]
    ax.legend(handles=handles, title="target", loc="upper left", bbox_to_anchor=(1.01, 1.0),
              fontsize=SMALL + 1, frameon=False)


def interval_point(ax: Axes, x: float, y: float, low, high, colour, label: str) -> None:
    """A point, its interval drawn from its own bounds, and a label to the right of both.

    The interval is drawn as given, not as offsets from the point: a percentile
    interval need not contain its point estimate (nor, by float rounding, a
    bound of 0 equal to a rate of 0), and the figure must show what was computed.
    """
    right = x
    if low is not None and high is not None:
        ax.plot([low, high], [y, y], color=colour, linewidth=1.2, marker="|", markersize=6)
        right = max(x, high)
    ax.plot([x], [y], marker="o", linestyle="", color=colour, markersize=4)
    ax.text(right + 0.015, y, label, fontsize=SMALL, va="center", color=colour)


def rate_note(est: RateEstimate) -> str:
    """The label beside a rate: its n, its base scenarios, and a mark where it has no interval."""
    note = f"n={est.n}, {est.n_clusters} sc."
    return note + f", {NO_INTERVAL}" if est.ci_low is None else note


def difference_note(d: Difference) -> str:
    """The label beside a difference: n of both sides, base scenarios, and marks for a missing
    interval or a demographic gap that holds after Holm's correction (`*`)."""
    note = f"n={d.n_a}/{d.n_b}, {max(d.n_clusters_a, d.n_clusters_b)} sc."
    if d.ci_low is None:
        note += f", {NO_INTERVAL}"
    if getattr(d, "holm_significant", None):
        note += " *"
    return note


def interval_methods(results: Results) -> str:
    """The methods of the forest plot's intervals, by reader's name."""
    used = {
        est.ci_method
        for rates in results.targets.values()
        for est in [rates.overall, *rates.by_metric.values()]
        if est.ci_low is not None
    }
    return ", ".join(sorted(method_label(m) for m in used)) or "none could be made"


def no_data(ax: Axes, x: float, y: float, colour, note: str = "") -> None:
    ax.text(x, y, NO_DATA + note, fontsize=SMALL, style="italic", ha="center", va="center",
            color=colour)


def _estimate(results: Results, target: str, row: str) -> RateEstimate | None:
    rates = results.targets[target]
    return rates.overall if row == OVERALL else rates.by_metric.get(row)


def forest_plot(results: Results, metric_names: Mapping[str, str] | None = None) -> Figure:
    """Pass rate with its interval per metric (and overall), one colour per target, n beside each point."""
    targets = sorted(results.targets)
    rows = [OVERALL] + metric_ids(results)
    labels = [OVERALL] + [plain(metric_label(m, metric_names)) for m in rows[1:]]
    colours, offsets = palette(len(targets)), dodge_offsets(len(targets))
    per_row = max(0.45, 0.2 * len(targets))
    fig = ReportFigure(figsize=(9, 1.4 + per_row * len(rows)), layout="constrained")
    ax = fig.subplots()
    for ti, target in enumerate(targets):
        for ri, row in enumerate(rows):
            y = ri + offsets[ti]
            est = _estimate(results, target, row)
            if est is None or est.rate is None:
                errors = f" ({est.n_error} errors)" if est is not None and est.n_error else ""
                no_data(ax, 0.5, y, colours[ti], errors)
                continue
            interval_point(ax, est.rate, y, est.ci_low, est.ci_high, colours[ti], rate_note(est))
    ax.axhline(0.5, color="0.6", linewidth=0.8)
    ax.set_yticks(range(len(rows)), labels)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(-0.02, 1.12)
    ax.set_xticks(np.linspace(0, 1, 6))
    ax.set_xlabel(f"pass rate ({_level(results)} CI: {interval_methods(results)})\n"
                  f"sc. = base scenarios; {NO_INTERVAL} = too few base scenarios for an interval")
    ax.grid(axis="x", color="0.92")
    ax.set_title(plain(f"{results.benchmark}: pass rate by metric"))
    _legend(ax, targets, colours)
    return fig


def heatmap(results: Results, metric_names: Mapping[str, str] | None = None) -> Figure:
    """Pass rate per metric (rows) and target (columns), annotated with rate and n."""
    targets = sorted(results.targets)
    rows = [OVERALL] + metric_ids(results)
    labels = [OVERALL] + [plain(metric_label(m, metric_names)) for m in rows[1:]]
    values = np.full((len(rows), len(targets)), np.nan)
    notes = np.full(values.shape, "", dtype=object)
    for ri, row in enumerate(rows):
        for ti, target in enumerate(targets):
            est = _estimate(results, target, row)
            if est is not None and est.rate is not None:
                values[ri, ti] = est.rate
                notes[ri, ti] = f"{est.rate:.2f}\nn={est.n}"
    fig = ReportFigure(figsize=(2.5 + 1.3 * len(targets) + 0.04 * max(map(len, labels)),
                          1.5 + 0.5 * len(rows)), layout="constrained")
    ax = fig.subplots()
    ax.set_facecolor("0.9")
    sns.heatmap(
        pd.DataFrame(values, index=labels, columns=targets), mask=np.isnan(values), annot=notes,
        fmt="", vmin=0.0, vmax=1.0, cmap="RdYlGn", linewidths=0.5, linecolor="white",
        annot_kws={"fontsize": SMALL + 1}, cbar_kws={"label": "pass rate"}, ax=ax,
    )
    for ri, ti in zip(*np.nonzero(np.isnan(values))):
        ax.text(ti + 0.5, ri + 0.5, NO_DATA, ha="center", va="center", fontsize=SMALL,
                style="italic", color="0.3")
    ax.set_xlabel("target")
    ax.set_ylabel("")
    ax.tick_params(axis="x", labelrotation=30)
    ax.set_title(plain(f"{results.benchmark}: pass rate"))
    return fig


def differences_panel(ax: Axes, rows: list[str], series: Mapping[str, Mapping[str, Difference]],
                       colours) -> float:
    """Differences with intervals, rows × series, around a zero line; returns the x half-range they need."""
    offsets = dodge_offsets(len(series))
    extent = 0.1
    for si, by_row in enumerate(series.values()):
        for ri, row in enumerate(rows):
            d = by_row.get(row)
            y = ri + offsets[si]
            if d is None or d.difference is None:
                no_data(ax, 0.0, y, colours[si])
                continue
            extent = max(extent, abs(d.ci_low or 0.0), abs(d.ci_high or 0.0), abs(d.difference))
            interval_point(ax, d.difference, y, d.ci_low, d.ci_high, colours[si],
                            difference_note(d))
    ax.axvline(0.0, color="0.3", linewidth=0.8)
    ax.set_yticks(range(len(rows)), rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.grid(axis="x", color="0.92")
    return min(1.0, extent * 1.3)


def demographic_gap_plot(results: Results) -> Figure:
    """Per demographic axis, the pass-rate difference of each value pair, per target, with paired CIs."""
    targets = sorted(results.targets)
    colours = palette(len(targets))
    axes: dict[str, list[str]] = {}
    by_target: dict[str, dict[str, dict[str, Difference]]] = {}
    for target in targets:
        for gap in results.targets[target].demographic_gaps:
            pair = plain(f"{gap.a} − {gap.b}")
            pairs = axes.setdefault(gap.axis, [])
            if pair not in pairs:
                pairs.append(pair)
            by_target.setdefault(gap.axis, {}).setdefault(target, {})[pair] = gap
    if not axes:
        return message(ReportFigure(figsize=(6, 1.5)), "No demographic variants: no gaps to show.")
    heights = [max(len(p), 1) * max(0.45, 0.2 * len(targets)) + 0.6 for p in axes.values()]
    fig = ReportFigure(figsize=(9, 0.8 + sum(heights)), layout="constrained")
    panels = fig.subplots(len(axes), 1, squeeze=False, sharex=True,
                          gridspec_kw={"height_ratios": heights})[:, 0]
    limit = 0.0
    for ax, (axis, pairs) in zip(panels, axes.items()):
        series = {t: by_target[axis].get(t, {}) for t in targets}
        limit = max(limit, differences_panel(ax, pairs, series, colours))
        ax.set_title(plain(axis), loc="left", fontsize=SMALL + 3)
    panels[0].set_xlim(-limit, limit)
    panels[-1].set_xlabel(
        f"difference in pass rate, a − b ({_level(results)} paired cluster-t CI, one per pair); "
        "* = a gap after Holm's correction\nfor the number of pairs of its axis; "
        f"{NO_INTERVAL} = too few base scenarios for an interval"
    )
    _legend(panels[0], targets, colours)
    fig.suptitle(plain(f"{results.benchmark}: demographic gaps"))
    return fig


def error_plot(errors: pd.DataFrame, targets: Sequence[str] = ()) -> Figure:
    """Error rows per target, stacked by stage and cause (`tables.error_breakdown`'s frame).

    Targets listed in `targets` but without errors get an explicit 0.
    """
    counts = errors.groupby(["target", "stage", "category"], sort=True)["count"].sum()
    categories = sorted({(s, c) for _, s, c in counts.index})
    names = list(dict.fromkeys([*targets, *sorted({t for t, _, _ in counts.index})]))
    if not names:
        return message(ReportFigure(figsize=(6, 1.5)), "No targets and no errors.")
    if not categories:
        return message(ReportFigure(figsize=(6, 1.0)),
                       f"No error rows: every row of {', '.join(names)} has a verdict.")
    fig = ReportFigure(figsize=(9, 1.5 + 0.5 * len(names)), layout="constrained")
    ax = fig.subplots()
    colours = palette(len(categories))
    left = np.zeros(len(names))
    for (stage, category), colour in zip(categories, colours):
        widths = np.array([counts.get((t, stage, category), 0) for t in names], dtype=float)
        ax.barh(names, widths, left=left, color=colour, label=f"{stage}: {category}")
        left += widths
    for y, total in enumerate(left):
        ax.text(total, y, f" {int(total)}", va="center", fontsize=SMALL + 1)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlim(0, max(left.max(), 1) * 1.15)
    ax.set_xlabel("error rows (left out of pass rates)")
    ax.set_title("Errors by target, stage and cause")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=SMALL + 1, frameon=False)
    return fig


def comparison_plot(results: Results) -> Figure:
    """Pairwise target differences with paired CIs, and each target's probability of each rank."""
    comparison = results.comparison
    targets = sorted(results.targets)
    if len(targets) < 2:
        return message(ReportFigure(figsize=(6, 1.5)), "One target: nothing to compare.")
    pairs = {f"{d.a} − {d.b}": d for d in comparison.pairwise}
    fig = ReportFigure(figsize=(11, 1.5 + 0.45 * max(len(pairs), len(targets))), layout="constrained")
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    limit = differences_panel(left, list(pairs), {"difference": pairs}, palette(1))
    left.set_xlim(-limit, limit)
    left.set_xlabel(f"difference in pass rate ({_level(results)} paired cluster-t CI)\n"
                    f"sc. = base scenarios; {NO_INTERVAL} = too few base scenarios for an interval")
    left.set_title("pairwise differences", loc="left")
    ranking = comparison.ranking
    ranks = [r for r in ranking.ranks if r.rank_probabilities]
    if ranks:
        ranks.sort(key=lambda r: (r.rank is None, r.rank if r.rank is not None else 0.0, r.target))
        probs = pd.DataFrame([r.rank_probabilities for r in ranks], index=[r.target for r in ranks],
                             columns=[str(i) for i in range(1, len(ranks[0].rank_probabilities) + 1)])
        sns.heatmap(probs, vmin=0.0, vmax=1.0, cmap="Blues", annot=True, fmt=".2f", cbar=False,
                    annot_kws={"fontsize": SMALL + 1}, ax=right)
        right.set_ylabel("")
        right.tick_params(axis="y", labelrotation=0)
        right.set_title(f"share of resamples at each rank\n({ranking.n_scenarios} scenarios "
                        "answered by every target)", loc="left", fontsize=SMALL + 3)
        right.set_xlabel("rank (1 = highest pass rate) in base-scenario resamples:\n"
                         "how often the order holds, not the probability of being best",
                         fontsize=SMALL + 1)
    else:
        right.text(0.5, 0.5, textwrap.fill(plain(ranking.reason or "no ranking"), 48),
                   ha="center", va="center", fontsize=SMALL + 2)
        right.set_axis_off()
    fig.suptitle(plain(f"{results.benchmark}: comparing targets"))
    return fig
