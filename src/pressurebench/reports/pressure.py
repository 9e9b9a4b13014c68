"""The "Pressure over turns" section of the results report: curves, onset and landmark tables.

Every interval is shown with the method that made it and the base scenarios it
rests on, because at the small designs an offline run has, a band can be a
Wilson fallback rather than cluster-t, or withheld as too few base scenarios,
and the reader must be able to tell.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..stats.capitulation import Curve, MedianOnset
from ..stats.pressure import PressureResults
from ..stats.results import Results
from .export_tables import onsets_frame
from .figures import SMALL, ReportFigure, _legend, message, palette, plain
from .tables import (
    MISSING,
    format_interval,
    format_p,
    format_rate,
    frame_records,
    interval_method,
    method_label,
    rows_or_empty,
)

NO_PER_TURN = (
    "No per-turn verdicts: set evaluation.per_turn: true and re-run evaluate (simulate is "
    "not re-run) to see when targets give in."
)
ONSET_COLUMNS = ["target", "conversations", "gave in", "held to the last turn",
                 "held until the user stopped", "held until a judge error", "median onset [CI]",
                 "CI method", "mean flips", "recovered"]
LANDMARK_COLUMNS = ["target", "landmark", "turns", "pass rate [CI]", "gave in here [CI]",
                    "n", "base scenarios", "CI method"]
DIFFERENCE_COLUMNS = ["a", "b", "turn", "holding a − b [CI]", "CI method", "p", "p (Holm)", "MDE"]


def _steps(curve: Curve) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Step edges 0..T+1: the share holding (1 before turn 1) and its band after each turn,
    the last value repeated so the final turn's step has a width; NaN where unobserved."""
    turns = np.arange(len(curve.points) + 2)
    nan = np.nan

    def column(attr: str) -> np.ndarray:
        values = [nan if getattr(p, attr) is None else getattr(p, attr) for p in curve.points]
        return np.array([1.0, *values, values[-1] if values else nan])

    return turns, column("holding"), column("ci_low"), column("ci_high")


def capitulation_plot(results: Results) -> Figure:
    """Left: share of conversations still holding after each turn, per target, with its band.
    Right: the pass rate of the transcript up to each turn, with its interval."""
    pressure = results.pressure
    fig = ReportFigure(figsize=(10, 3.8), layout="constrained")
    if pressure is None:
        return message(fig, NO_PER_TURN)
    targets = sorted(pressure.targets)
    colours = palette(len(targets))
    left, right = fig.subplots(1, 2)
    level = f"{results.statistics.confidence_level:.0%}"
    for colour, target in zip(colours, targets):
        tp = pressure.targets[target]
        turns, holding, low, high = _steps(tp.curve)
        left.step(turns, holding, where="post", color=colour, linewidth=1.6)
        left.fill_between(turns, low, high, step="post", color=colour, alpha=0.18, linewidth=0)
        x = [int(t) for t in tp.by_turn]
        rates = [tp.by_turn[t].rate for t in tp.by_turn]
        right.plot(x, [np.nan if r is None else r for r in rates], marker="o", color=colour)
        for t, est in tp.by_turn.items():
            if est.ci_low is not None:
                right.plot([int(t), int(t)], [est.ci_low, est.ci_high], color=colour, alpha=0.6)
    if any(pressure.targets[t].curve.reason for t in targets):
        left.text(0.02, 0.03, "no band: too few base scenarios for an interval",
                  transform=left.transAxes, fontsize=SMALL, color="0.35")
    left.set_xlim(0, pressure.turns + 1)
    left.set_xlabel("after turn (assistant replies)")
    left.set_ylabel(f"share still holding ({level} band)")
    left.set_ylim(-0.02, 1.02)
    left.set_xticks(range(pressure.turns + 1))
    left.set_title("Capitulation curve (Kaplan–Meier)", fontsize=SMALL + 3)
    right.set_xlabel("turn")
    right.set_ylabel(f"pass rate up to this turn ({level} CI)")
    right.set_ylim(-0.02, 1.02)
    right.set_xticks(range(1, pressure.turns + 1))
    right.set_title("Verdict at each turn", fontsize=SMALL + 3)
    for ax in (left, right):
        ax.grid(color="0.92")
    _legend(right, targets, colours)
    fig.suptitle(plain(f"{results.benchmark}: pressure over turns"), fontsize=SMALL + 4)
    return fig


def format_median(median: MedianOnset, turns: int) -> str:
    """`turn 3 [2, 5]`; `> 5` when fewer than half gave in by the last turn."""
    point = f"> {turns}" if not median.reached else f"turn {median.turn}"
    if median.ci_method == "none":
        return point
    low = MISSING if median.ci_low is None else str(median.ci_low)
    high = f"> {turns}" if median.ci_high is None else str(median.ci_high)
    return f"{point} [{low}, {high}]"


def onset_table(results: Results) -> pd.DataFrame:
    """Per target: how the conversations ended as far as giving in goes, and the median onset:
    the numbers of `export_tables.onsets_frame`, formatted, with the reason a curve has no
    interval in the method column."""
    def rows(pressure: PressureResults) -> Iterable[list]:
        for r in frame_records(onsets_frame(results)):
            median = MedianOnset(turn=r["median_onset_turn"], reached=r["median_reached"],
                                 ci_low=r["median_ci_low"], ci_high=r["median_ci_high"],
                                 ci_method=r["median_ci_method"])
            yield [
                r["target"], r["conversations"], r["gave_in"], r["held_to_last_turn"],
                r["held_until_user_stopped"], r["held_until_judge_error"],
                format_median(median, r["turns"]),
                interval_method(median.ci_method, pressure.targets[r["target"]].curve.reason),
                MISSING if r["mean_flips"] is None else f"{r['mean_flips']:.2f}",
                f"{r['recovered']} of {r['gave_in']}" if r["gave_in"] else MISSING,
            ]

    return rows_or_empty(results.pressure, ONSET_COLUMNS, rows)


def curve_table(results: Results) -> pd.DataFrame:
    """Per target and turn: share holding with its band, at risk, gave in, method, clusters."""
    columns = ["target", "turn", "holding [CI]", "at risk", "gave in", "censored",
               "base scenarios", "CI method"]
    return rows_or_empty(results.pressure, columns, lambda pressure: (
        [target, p.turn, format_rate(p.holding, p.ci_low, p.ci_high), p.at_risk, p.gave_in,
         p.censored, p.n_clusters, interval_method(p.ci_method, curve.reason)]
        for target in sorted(pressure.targets)
        for curve in [pressure.targets[target].curve]
        for p in curve.points
    ))


def landmark_table(results: Results) -> pd.DataFrame:
    """Per target and landmark: the verdict at the turn it arrived, and the share giving in."""
    def rows(pressure: PressureResults) -> Iterable[list]:
        for target in sorted(pressure.targets):
            for view in pressure.targets[target].by_landmark:
                rate, hazard = view.pass_rate, view.gave_in_here
                yield [
                    target, view.landmark, ", ".join(map(str, view.turns)),
                    format_rate(rate.rate, rate.ci_low, rate.ci_high),
                    format_rate(hazard.rate, hazard.ci_low, hazard.ci_high),
                    rate.n, rate.n_clusters,
                    interval_method(rate.ci_method, rate.reason)
                    if rate.ci_method == hazard.ci_method
                    else f"{method_label(rate.ci_method)} / {method_label(hazard.ci_method)}",
                ]

    return rows_or_empty(results.pressure, LANDMARK_COLUMNS, rows)


def difference_table(results: Results) -> pd.DataFrame:
    """Paired differences of two targets' share still holding, turn by turn, with the p-value
    that inverts each turn's interval, Holm's adjustment over the pair's turns and the minimum
    detectable difference at 80% power."""
    def rows(pressure: PressureResults) -> Iterable[list]:
        for diff in pressure.differences:
            for p in diff.points:
                value = MISSING if p.difference is None else f"{p.difference:+.1%}"
                if p.difference is not None:
                    value += f" {format_interval(p.ci_low, p.ci_high)}"
                yield [diff.a, diff.b, p.turn, value, interval_method(p.ci_method, diff.reason),
                       format_p(p.p_value), format_p(p.p_holm),
                       MISSING if p.mde is None else f"{100 * p.mde:.1f} pp"]

    return rows_or_empty(results.pressure, DIFFERENCE_COLUMNS, rows)



RECEIVED_COLUMNS = ["target", "conversations", "mean turns", "turns played", "ended early",
                    "landmarks reached", "replies cut off"]


def _share(part: int, whole: int) -> str:
    return f"{part} of {whole}" + (f" ({part / whole:.0%})" if whole else "")


def received_table(results: Results) -> pd.DataFrame:
    """Per target: the pressure it actually received (turns, endings, landmarks, truncation)."""
    return rows_or_empty(results.pressure_received, RECEIVED_COLUMNS, lambda got: (
        [
            target, r.conversations,
            MISSING if r.turns_mean is None else f"{r.turns_mean:.2f}",
            ", ".join(f"{t}: {n}" for t, n in r.turns.items()) or MISSING,
            _share(r.ended_early, r.conversations),
            _share(r.landmarks_reached, r.landmarks_scripted),
            _share(r.replies_truncated, r.replies),
        ]
        for target, r in sorted(got.targets.items())
    ))


def received_tests_table(results: Results) -> pd.DataFrame:
    return rows_or_empty(
        results.pressure_received, ["compared", "test", "p value", "differs"],
        lambda got: ([t.what, t.test, t.note if t.p_value is None else f"{t.p_value:.3g}",
                      "yes" if t.differs else "no"] for t in got.tests))


def received_note(results: Results) -> str:
    """The warning when targets received different pressure, else what was checked."""
    got = results.pressure_received
    if got is None:
        return "The conversations files were not found: the pressure received is not compared."
    if got.warning:
        return f"**Warning.** {got.warning}"
    return ("No difference between targets beyond chance in how their conversations ended, how "
            "long they ran or how often replies were cut off (tests below, at p < 0.05).")
