"""Figures of the validation studies: does an arm with another generator or user agree with main?

One figure per question a reader asks of an arm:

- `rates_plot`: each target's pass rate in the main arm and in the arm, with
  intervals and n: do the levels hold?
- `rank_bump_chart`: each target's rank in both arms, joined by a line: does
  the ranking hold? Crossing lines are order flips.
- `difference_forest_plot`: arm − main per target and per metric with
  intervals around a zero line: which differences are more than noise?

They take a `GeneratorArmResult` or a `PairedArmResult` (a user-model or evaluator arm;
`pressurebench.validation.studies`).
Like `figures`, they draw "no data" where a number does not exist, never a point at 0.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from scipy.stats import rankdata

from ..stats.estimates import Difference
from ..validation.studies import MAIN, GeneratorArmResult, PairedArmResult
from .figures import (
    SMALL,
    ReportFigure,
    differences_panel,
    dodge_offsets,
    interval_point,
    message,
    no_data,
    palette,
    plain,
)

ArmResult = GeneratorArmResult | PairedArmResult


def _level(confidence_level: float) -> str:
    return f"{confidence_level:.0%}"


def _series_legend(ax, names: list[str], colours) -> None:
    handles = [
        Line2D([], [], marker="o", linestyle="", color=c, label=plain(n))
        for n, c in zip(names, colours)
    ]
    ax.legend(
        handles=handles,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=SMALL + 1,
        frameon=False,
    )


def rates_plot(result: ArmResult, confidence_level: float) -> Figure:
    """Per target, the pass rate in the main arm and in the arm, each with its interval and n."""
    targets = result.targets
    if not targets:
        return message(ReportFigure(figsize=(6, 1.5)), "No validation targets.")
    names = [MAIN, result.arm]
    colours, offsets = palette(2), dodge_offsets(2)
    fig = ReportFigure(figsize=(9, 1.4 + 0.5 * len(targets)), layout="constrained")
    ax = fig.subplots()
    for si, rates in enumerate((result.rates_main, result.rates_arm)):
        for ri, target in enumerate(targets):
            est, y = rates[target], ri + offsets[si]
            if est.rate is None:
                no_data(ax, 0.5, y, colours[si], f" ({est.n_error} errors)" if est.n_error else "")
                continue
            interval_point(ax, est.rate, y, est.ci_low, est.ci_high, colours[si], f"n={est.n}")
    ax.set_yticks(range(len(targets)), [plain(t) for t in targets])
    ax.set_ylim(len(targets) - 0.5, -0.5)
    ax.set_xlim(-0.02, 1.12)
    ax.set_xticks(np.linspace(0, 1, 6))
    ax.set_xlabel(f"pass rate ({_level(confidence_level)} CI)")
    ax.grid(axis="x", color="0.92")
    ax.set_title(plain(f"{result.arm}: pass rate per target, main arm and arm"))
    _series_legend(ax, names, colours)
    return fig


def ranks(rates: dict[str, float | None]) -> dict[str, float | None]:
    """Rank of each target by pass rate, 1 = highest, ties averaged; None without a rate."""
    rated = {t: r for t, r in rates.items() if r is not None}
    if not rated:
        return dict.fromkeys(rates)
    order = rankdata([-r for r in rated.values()], method="average")
    found = dict(zip(rated, (float(r) for r in order)))
    return {t: found.get(t) for t in rates}


def rank_bump_chart(result: ArmResult) -> Figure:
    """Each target's rank in the main arm (left) and in the arm (right), joined by a line."""
    targets = result.targets
    left = ranks({t: result.rates_main[t].rate for t in targets})
    right = ranks({t: result.rates_arm[t].rate for t in targets})
    if all(left[t] is None and right[t] is None for t in targets):
        return message(ReportFigure(figsize=(6, 1.5)), "No target has a pass rate in either arm.")
    n = len(targets)
    missing_y = n + 1
    colours = palette(n)
    fig = ReportFigure(figsize=(6.5, 1.6 + 0.45 * (n + 1)), layout="constrained")
    ax = fig.subplots()
    colour_of = dict(zip(targets, colours))
    for target in targets:
        a, b = left[target], right[target]
        if a is not None and b is not None:
            ax.plot([0, 1], [a, b], color=colour_of[target], linewidth=1.5)
    for x, side, align, shift in ((0, left, "right", -0.06), (1, right, "left", 0.06)):
        by_rank: dict[float | None, list[str]] = {}
        for target in targets:
            by_rank.setdefault(side[target], []).append(target)
        for rank, tied in by_rank.items():
            if rank is None:
                ax.text(
                    x + shift,
                    missing_y,
                    plain(f"no data: {', '.join(tied)}"),
                    ha=align,
                    va="center",
                    fontsize=SMALL + 1,
                    style="italic",
                    color="0.3",
                )
                continue
            for target in tied:
                ax.plot([x], [rank], marker="o", color=colour_of[target], markersize=6)
            colour = colour_of[tied[0]] if len(tied) == 1 else "0.2"
            ax.text(
                x + shift,
                rank,
                plain(", ".join(tied)),
                ha=align,
                va="center",
                fontsize=SMALL + 2,
                color=colour,
            )
    ax.set_xticks([0, 1], [MAIN, plain(result.arm)])
    ax.set_xlim(-0.9, 1.9)
    ax.set_yticks(range(1, n + 1))
    ax.set_ylim(missing_y + 0.5, 0.5)
    ax.set_ylabel("rank (1 = highest pass rate)")
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    ax.set_title(plain(f"{result.arm}: ranks in each arm"))
    return fig


def difference_forest_plot(result: ArmResult, confidence_level: float) -> Figure:
    """Arm − main per target, then per target × metric, with intervals, around 0."""
    rows: dict[str, Difference] = {f"target {d.target}": d for d in result.comparison.differences}
    rows.update({f"{d.target} × {d.metric_id}": d for d in result.metric_differences})
    labels = [f"target {t}" for t in result.targets] + [
        f"{d.target} × {d.metric_id}" for d in result.metric_differences
    ]
    if not labels:
        return message(ReportFigure(figsize=(6, 1.5)), "Nothing to compare.")
    fig = ReportFigure(figsize=(9, 1.4 + 0.45 * len(labels)), layout="constrained")
    ax = fig.subplots()
    limit = differences_panel(ax, labels, {"arm − main": rows}, palette(1))
    ax.set_yticks(range(len(labels)), [plain(label) for label in labels])
    if result.metric_differences and result.targets:
        ax.axhline(len(result.targets) - 0.5, color="0.6", linewidth=0.8)
    ax.set_xlim(-limit, limit)
    ax.set_xlabel(f"difference in pass rate, arm − main ({_level(confidence_level)} CI)")
    ax.set_title(plain(f"{result.arm}: differences from the main arm"))
    return fig
