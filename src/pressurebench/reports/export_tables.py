"""The results as tables of numbers, for a paper's CSV files and LaTeX tables.

The report's tables are for reading (`50.0%`, `—`, a method sentence per row); a paper needs
values it can compute with and typeset. Every frame here keeps a rate as a fraction, a count as
an integer and a missing value as empty (never 0), with the interval's method and, where it is
withheld, the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..stats.estimates import Difference, RateEstimate
from ..stats.results import Results

RATE_COLUMNS = ["target", "scope", "key", "label", "rate", "ci_low", "ci_high", "n", "n_error",
                "base_scenarios", "method", "reason"]
DIFFERENCE_COLUMNS = ["a", "b", "rate_a", "rate_b", "difference", "ci_low", "ci_high", "n_a",
                      "n_b", "base_scenarios_a", "base_scenarios_b", "method", "p_value", "mde",
                      "reason"]
PAIR_COLUMNS = [*DIFFERENCE_COLUMNS, "p_holm", "holm_significant"]
METRIC_PAIR_COLUMNS = ["metric", *PAIR_COLUMNS]
GAP_COLUMNS = ["target", "axis", *DIFFERENCE_COLUMNS, "p_holm", "holm_significant",
               "n_comparisons"]
ONSET_COLUMNS = ["target", "conversations", "gave_in", "held_to_last_turn",
                 "held_until_user_stopped", "held_until_judge_error", "median_onset_turn",
                 "median_reached", "median_ci_low", "median_ci_high", "median_ci_method",
                 "mean_flips", "recovered", "turns"]


def _rate_row(target: str, scope: str, key: str, label: str, est: RateEstimate) -> list:
    return [target, scope, key, label, est.rate, est.ci_low, est.ci_high, est.n, est.n_error,
            est.n_clusters, est.ci_method, est.reason]


def rate_estimate(row: Mapping[str, Any]) -> RateEstimate:
    """A row of `rates_frame` (missing cells as None) as the estimate it was written from, for
    the tables that typeset it."""
    return RateEstimate(rate=row["rate"], n=row["n"], n_error=row["n_error"],
                        ci_low=row["ci_low"], ci_high=row["ci_high"], ci_method=row["method"],
                        n_clusters=row["base_scenarios"], reason=row["reason"])


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
    return _typed(rows, RATE_COLUMNS)


def _difference_row(d: Difference) -> list:
    return [d.a, d.b, d.rate_a, d.rate_b, d.difference, d.ci_low, d.ci_high, d.n_a, d.n_b,
            d.n_clusters_a, d.n_clusters_b, d.ci_method, d.p_value, d.mde, d.reason]


def pairwise_frame(results: Results) -> pd.DataFrame:
    """Every pair of targets: the difference of overall pass rates a − b, paired by scenario,
    with its test and Holm's decision over the pairs."""
    rows = [[*_difference_row(d), d.p_holm, d.holm_significant]
            for d in results.comparison.pairwise]
    return _typed(rows, PAIR_COLUMNS)


def metric_pairwise_frame(results: Results) -> pd.DataFrame:
    """Every pair of targets on every metric, with its test and Holm's decision over the
    pair's metrics."""
    rows = [[d.metric_id, *_difference_row(d), d.p_holm, d.holm_significant]
            for d in results.comparison.by_metric]
    return _typed(rows, METRIC_PAIR_COLUMNS)


def gaps_frame(results: Results) -> pd.DataFrame:
    """Every demographic gap with its test and Holm's decision within its axis and target."""
    rows = [
        [target, g.axis, *_difference_row(g), g.p_holm, g.holm_significant, g.n_comparisons]
        for target, tr in results.targets.items() for g in tr.demographic_gaps
    ]
    return _typed(rows, GAP_COLUMNS)


def onsets_frame(results: Results) -> pd.DataFrame:
    """Per target: how conversations ended as far as giving in goes, and the median onset
    (`median_reached` false: later than the last turn; an empty `median_ci_high`: the interval
    runs past it)."""
    pressure = results.pressure
    turns = pressure.turns if pressure else None
    rows = []
    for target, tp in sorted((pressure.targets if pressure else {}).items()):
        o, m = tp.onsets, tp.curve.median_onset
        rows.append([target, o.conversations, o.gave_in, o.censored_end, o.censored_ended_early,
                     o.censored_judge_error, m.turn, m.reached, m.ci_low, m.ci_high, m.ci_method,
                     o.mean_flips, o.recovered, turns])
    return _typed(rows, ONSET_COLUMNS)


CORRECTED_COLUMNS = ["target", "scope", "key", "raw_rate", "raw_ci_low", "raw_ci_high",
                     "raw_method", "corrected_rate", "ci_low", "ci_high", "method",
                     "power_tuning", "n_judged", "n_labelled", "reason"]
CORRECTED_DIFFERENCE_COLUMNS = ["target", "scope", "a", "b", "raw_difference",
                                "corrected_difference", "ci_low", "ci_high", "method",
                                "n_labelled_a", "n_labelled_b", "reason"]


def corrected_rates_frame(results: Results) -> pd.DataFrame:
    """With human labels: every pass rate as judged (raw) beside its judge-corrected value
    (prediction-powered inference), per target overall, per metric type, metric and
    demographic value."""
    corrected = results.judge_validity.corrected if results.judge_validity else None
    rows = []
    for target, c in (corrected.by_target.items() if corrected else []):
        scoped = [("overall", "overall", c.overall), ("metric type", "positive", c.positive),
                  ("metric type", "negative", c.negative)]
        scoped += [("metric", m, r) for m, r in sorted(c.by_metric.items())]
        scoped += [("demographic", f"{axis}={value}", r)
                   for axis, values in sorted(c.by_demographic.items())
                   for value, r in sorted(values.items())]
        rows += [[target, scope, key, r.raw.rate, r.raw.ci_low, r.raw.ci_high, r.raw.ci_method,
                  r.corrected_rate, r.ci_low, r.ci_high, r.ci_method, r.power_tuning, r.n_judged,
                  r.n_labelled, r.reason] for scope, key, r in scoped]
    return _typed(rows, CORRECTED_COLUMNS)


def fidelity_corrected_frame(results: Results) -> pd.DataFrame:
    """With fidelity answers from raters: each target's share of conversations with each kind
    of break as checked (raw) beside its value corrected by the answers (scope "break share",
    key the kind), in the columns of `corrected_rates_frame`."""
    validity = results.judge_validity.fidelity if results.judge_validity else None
    rows = [
        [target, "break share", kind, r.raw.rate, r.raw.ci_low, r.raw.ci_high, r.raw.ci_method,
         r.corrected_rate, r.ci_low, r.ci_high, r.ci_method, r.power_tuning, r.n_judged,
         r.n_labelled, r.reason]
        for kind, v in (validity.by_kind.items() if validity else [])
        for target, r in sorted(v.corrected.items())
    ]
    return _typed(rows, CORRECTED_COLUMNS)


def corrected_differences_frame(results: Results) -> pd.DataFrame:
    """With human labels: the paired differences between targets (scope "targets") and each
    target's demographic gaps (scope: the axis), as judged and corrected."""
    corrected = results.judge_validity.corrected if results.judge_validity else None
    if corrected is None:
        return pd.DataFrame(columns=CORRECTED_DIFFERENCE_COLUMNS)
    named = [("", "targets", d) for d in corrected.differences]
    named += [(target, axis, d) for target, c in corrected.by_target.items()
              for axis, gaps in sorted(c.gaps.items()) for d in gaps]
    rows = [[target, scope, d.a, d.b, d.raw_difference, d.corrected_difference, d.ci_low,
             d.ci_high, d.ci_method, d.n_labelled_a, d.n_labelled_b, d.reason]
            for target, scope, d in named]
    return _typed(rows, CORRECTED_DIFFERENCE_COLUMNS)


SENSITIVITY_COLUMNS = ["target", "rate_on", *DIFFERENCE_COLUMNS, "without_breaks_ci_low",
                       "without_breaks_ci_high", "n_excluded_broken", "n_excluded_undecided"]
FIDELITY_KIND_LABELS = {
    "out_of_character": "out of character", "leak": "leak", "role_swap": "role swap / echo",
    "landmark_skipped": "landmark skipped", "no_pressure": "no pressure",
}


def fidelity_frame(results: Results) -> pd.DataFrame:
    """Per target (its user model in the label of `any`): the share of conversations with any
    break, per kind, per metric and per turn, and with test awareness overall and per turn."""
    rows = []
    for target, tf in (results.fidelity.targets.items() if results.fidelity else []):
        rows.append(_rate_row(target, "any break", "any", f"any break (user {tf.user_model})",
                              tf.any_break))
        for kind, est in tf.by_kind.items():
            rows.append(_rate_row(target, "kind", kind, FIDELITY_KIND_LABELS[kind], est))
        for metric_id, est in tf.by_metric.items():
            rows.append(_rate_row(target, "metric", metric_id, f"any break, {metric_id}", est))
        for turn, est in tf.by_turn.items():
            rows.append(_rate_row(target, "turn", turn, f"user message broke, turn {turn}", est))
        rows.append(_rate_row(target, "test awareness", "any", "test awareness", tf.test_awareness))
        for turn, est in tf.test_awareness_by_turn.items():
            rows.append(_rate_row(target, "test awareness turn", turn,
                                  f"test awareness, turn {turn}", est))
    return _typed(rows, RATE_COLUMNS)


def sensitivity_frame(results: Results) -> pd.DataFrame:
    """Per target and headline rate: without the broken conversations (a) minus all (b)."""
    rows = []
    for target, sens in (results.fidelity.sensitivity.items() if results.fidelity else []):
        for name, entry in sens.compared():
            rows.append([target, name, *_difference_row(entry.difference),
                         entry.without_breaks.ci_low, entry.without_breaks.ci_high,
                         sens.n_excluded_broken, sens.n_excluded_undecided])
    return _typed(rows, SENSITIVITY_COLUMNS)


def _typed(rows: list[list], columns: list[str]) -> pd.DataFrame:
    """`rows` as a frame whose counts are nullable integers, so a missing count stays empty and
    a present one has no decimal point in the CSV. Counts are found in the values as given: the
    inferred frame has already turned a count column holding a None into floats."""
    frame = pd.DataFrame(rows, columns=columns)
    for i, column in enumerate(columns):
        values = [row[i] for row in rows if row[i] is not None]
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            frame[column] = pd.array([row[i] for row in rows], dtype="Int64")
    return frame


AGREEMENT_COLUMNS = ["verdicts_of", "target", "statistic", "value", "ci_low", "ci_high", "items",
                     "base_scenarios", "method", "reason"]


def agreement_frame(results: Results) -> pd.DataFrame:
    """Agreement of repeated samples (per target, and pooled with an empty target) and of the
    panel's judges, one row per statistic: a value not measured is empty, its `items` too, with
    the reason."""
    rows = []

    def add(of: str, target: str | None, statistic: str, est, reason: str | None) -> None:
        measured = est.value is not None
        rows.append([of, target, statistic, est.value, est.ci_low, est.ci_high,
                     est.n_items if measured else None, est.n_clusters if measured else None,
                     est.ci_method, est.reason or reason])

    scopes = [(t, r.sample_agreement) for t, r in sorted(results.targets.items())]
    for target, sa in [*scopes, (None, results.sample_agreement)]:
        add("samples", target, "all agree", sa.all_agree, sa.reason)
        add("samples", target, "fleiss kappa", sa.fleiss_kappa, sa.reason)
        add("samples", target, "krippendorff alpha", sa.krippendorff_alpha, sa.reason)
    ja = results.judge_agreement
    add("judges", None, f"{ja.kappa_method or 'cohen'} kappa", ja.kappa, ja.reason)
    add("judges", None, "krippendorff alpha", ja.krippendorff_alpha, ja.reason)
    return _typed(rows, AGREEMENT_COLUMNS)


def interval_coverage_frame(results: Results) -> pd.DataFrame:
    """Per kind of interval: its method, the study's design, and the coverage range the grid
    measured at the largest design not above it (empty, with the reason, where none)."""
    columns = ["interval", "ci_method", "metrics", "base_scenarios_per_metric", "grid_metrics",
               "grid_per_metric", "coverage_low", "coverage_high", "stress_per_metric",
               "stress_low", "stress_high", "reason"]
    rows = [[i.interval, i.method, i.metrics, i.base_scenarios_per_metric, i.grid_metrics,
             i.grid_per_metric, i.coverage_low, i.coverage_high, i.stress_per_metric,
             i.stress_low, i.stress_high, i.reason]
            for i in results.intervals]
    return _typed(rows, columns)
