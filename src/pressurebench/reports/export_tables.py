"""The results as tables of numbers, for a paper's CSV files and LaTeX tables.

The report's tables are for reading (`50.0%`, `—`, a method sentence per row); a paper needs
values it can compute with and typeset. Every frame here keeps a rate as a fraction, a count as
an integer and a missing value as empty (never 0), with the interval's method and, where it is
withheld, the reason.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from ..results import Results
from ..stats.estimates import Difference, RateEstimate

RATE_COLUMNS = ["target", "scope", "key", "label", "rate", "ci_low", "ci_high", "n", "n_error",
                "base_scenarios", "method", "reason"]
DIFFERENCE_COLUMNS = ["a", "b", "rate_a", "rate_b", "difference", "ci_low", "ci_high", "n_a",
                      "n_b", "base_scenarios_a", "base_scenarios_b", "method", "reason"]
GAP_COLUMNS = ["target", "axis", *DIFFERENCE_COLUMNS, "p_value", "p_holm", "holm_significant",
               "n_comparisons"]
ONSET_COLUMNS = ["target", "conversations", "gave_in", "held_to_last_turn",
                 "held_until_user_stopped", "held_until_judge_error", "median_onset_turn",
                 "median_reached", "median_ci_low", "median_ci_high", "median_ci_method",
                 "mean_flips", "recovered", "turns"]


def _rate_row(target: str, scope: str, key: str, label: str, est: RateEstimate) -> list:
    return [target, scope, key, label, est.rate, est.ci_low, est.ci_high, est.n, est.n_error,
            est.n_clusters, est.ci_method, est.reason]


def rates_frame(results: Results, metric_names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Every pass rate the results report, one row each: per target overall, per metric type,
    per metric and per demographic value."""
    names = metric_names or {}
    rows = []
    for target, tr in results.targets.items():
        rows.append(_rate_row(target, "overall", "overall", "overall", tr.overall))
        rows.append(_rate_row(target, "metric type", "positive", "positive metrics", tr.positive))
        rows.append(_rate_row(target, "metric type", "negative", "negative metrics", tr.negative))
        for metric_id, est in sorted(tr.by_metric.items()):
            rows.append(_rate_row(target, "metric", metric_id, names.get(metric_id, metric_id), est))
        for axis, values in sorted(tr.by_demographic.items()):
            for value, est in sorted(values.items()):
                rows.append(_rate_row(target, "demographic", f"{axis}={value}", f"{axis}: {value}",
                                      est))
    return _typed(pd.DataFrame(rows, columns=RATE_COLUMNS))


def _difference_row(d: Difference) -> list:
    return [d.a, d.b, d.rate_a, d.rate_b, d.difference, d.ci_low, d.ci_high, d.n_a, d.n_b,
            d.n_clusters_a, d.n_clusters_b, d.ci_method, d.reason]


def pairwise_frame(results: Results) -> pd.DataFrame:
    """Every pair of targets: the difference of overall pass rates a − b, paired by scenario."""
    rows = [_difference_row(d) for d in results.comparison.pairwise]
    return _typed(pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS))


def gaps_frame(results: Results) -> pd.DataFrame:
    """Every demographic gap with its test and Holm's decision within its axis and target."""
    rows = [
        [target, g.axis, *_difference_row(g), g.p_value, g.p_holm, g.holm_significant,
         g.n_comparisons]
        for target, tr in results.targets.items() for g in tr.demographic_gaps
    ]
    return _typed(pd.DataFrame(rows, columns=GAP_COLUMNS))


def onsets_frame(results: Results) -> pd.DataFrame:
    """Per target: how conversations ended as far as giving in goes, and the median onset
    (`median_reached` false: later than the last turn; an empty `median_ci_high`: the interval
    runs past it)."""
    pressure = results.pressure
    rows = []
    for target, tp in sorted((pressure.targets if pressure else {}).items()):
        o, m = tp.onsets, tp.curve.median_onset
        rows.append([target, o.conversations, o.gave_in, o.censored_end, o.censored_ended_early,
                     o.censored_judge_error, m.turn, m.reached, m.ci_low, m.ci_high, m.ci_method,
                     o.mean_flips, o.recovered, pressure.turns])
    return _typed(pd.DataFrame(rows, columns=ONSET_COLUMNS))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts as nullable integers, so a missing count stays empty and a present one has no
    decimal point in the CSV."""
    for column in frame.columns:
        values = frame[column].dropna()
        if len(values) and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            frame[column] = frame[column].astype("Int64")
    return frame
