"""Tables for notebooks and pages: rates with their intervals and n, errors by cause.

A missing rate is shown as "—", never as 0 or an empty cell a reader could
take for zero: a pass rate of 0 is a finding, a missing one is not. A value
that rounds to zero is shown without a sign (format spec `z`, PEP 682): a
"−0.0" would claim a direction the figure does not have.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

import pandas as pd

from ..io import read_artifact, read_yaml_model
from ..paths import Layout
from ..schemas import (
    CONVERSATION_FAILED,
    Benchmark,
    GenerationError,
    ScenariosFile,
    Score,
    ScoresFile,
    error_category,
)
from ..stats import methods
from ..stats.estimates import RateEstimate
from ..stats.multiplicity import HOLM
from ..stats.results import Results
from . import export_tables
from .notebook_display import MISSING as MISSING  # shown as tables.MISSING too

METHOD_LABELS = {
    methods.CLUSTER_T_WILSON: "cluster-t Wilson",
    methods.CLUSTER_T: "cluster-t, paired",
    methods.CLUSTER_T_WELCH: "cluster-t, Welch df",
    methods.CLUSTER_T_MOVER: "cluster-t MOVER, paired",
    methods.CLUSTER_T_WELCH_MOVER: "cluster-t MOVER, Welch df",
    methods.CLUSTER_BOOTSTRAP: "cluster bootstrap",
    methods.INDEPENDENT_CLUSTER_BOOTSTRAP: "independent cluster bootstraps",
    methods.CLUSTER_BOOTSTRAP_EXPANDED: "cluster bootstrap, t-expanded",
    methods.WILSON_CLUSTERS: (
        "Wilson, scenarios as n (too few scenarios or no spread for cluster-t)"
    ),
    methods.WILSON_ROWS_SINGLE_CLUSTER: "Wilson on rows (a single scenario)",
    methods.NEWCOMBE_CLUSTERS: "Newcombe, scenarios as n",
    methods.FIELLER_CLUSTER_T: "Fieller, cluster-t",
    methods.PPI_CLUSTER_T_WILSON: "PPI++, cluster-t Wilson",
    methods.PPI_CLUSTER_T: "PPI++, cluster-t, paired",
    methods.NONE: "no interval",
}
OVERALL = "overall"
METRIC_TYPES = ("positive", "negative")  # the rows pooling the metrics of each type
GENERATION = "(scenario generation)"
RESULTS_COLUMNS = ["target", "metric", "rate", "ci", "method", "scenarios", "n", "n_error"]
ERROR_COLUMNS = ["target", "stage", "category", "count"]


def method_label(method: str) -> str:
    """A reader's name for a `ci_method` id (the id itself where none is known)."""
    return METHOD_LABELS.get(method, method)


def interval_method(method: str, reason: str | None) -> str:
    """The method column of a table: the interval's method, or why there is none."""
    if method == methods.NONE and reason:
        return f"no interval: {reason}"
    return method_label(method)


def format_estimate(est: RateEstimate) -> str:
    """A rate with its interval, or with "(no interval)" where the design cannot support one."""
    return format_rate_or_why(est.rate, est.ci_low, est.ci_high)


def format_rate_or_why(rate: float | None, low: float | None, high: float | None) -> str:
    """`format_rate`, with "(no interval)" after a rate the design gives no interval."""
    text = format_rate(rate, low, high)
    if rate is not None and low is None:
        text += " (no interval)"
    return text


Source = TypeVar("Source")


def rows_or_empty(source: Source | None, columns: Sequence[str],
                  rows: Callable[[Source], Iterable[list]]) -> pd.DataFrame:
    """The table `rows` makes of `source`, or the empty table with its columns where the results
    hold no such section (it was not run), so a notebook shows the headers rather than fails."""
    if source is None:
        return pd.DataFrame(columns=list(columns))
    return pd.DataFrame(list(rows(source)), columns=list(columns))


def format_p(value: float | None) -> str:
    """A p-value to three decimals, "—" where no test was run."""
    return MISSING if value is None else f"{value:.3f}"


def frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A numeric frame's rows as dicts, a missing cell as None (never NaN), so a display table
    formats the numbers its CSV holds with the formatters that take None for "not measured"."""
    cells = frame.astype(object).where(frame.notna(), None)
    return [{str(k): v for k, v in row.items()} for row in cells.to_dict("records")]


def agreement_scopes(frame: pd.DataFrame) -> list[tuple[str, str | None, dict[str, dict]]]:
    """`export_tables.agreement_frame`'s rows by scope, in its order: whose verdicts, the target
    (None: all targets, or the judges), and per statistic ("all agree", "kappa", "alpha") its
    row as a dict, a missing cell None; what the report and the LaTeX table format."""
    short = {"all agree": "all agree", "krippendorff alpha": "alpha"}
    scopes: dict[tuple[str, str | None], dict[str, dict]] = {}
    for row in frame_records(frame):
        statistic = str(row["statistic"])
        name = short.get(statistic, "kappa" if statistic.endswith(" kappa") else statistic)
        scopes.setdefault((row["verdicts_of"], row["target"]), {})[name] = row
    return [(of, target, rows) for (of, target), rows in scopes.items()]


def format_share(value: float | None) -> str:
    return MISSING if value is None else f"{value:z.1%}"


def format_interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return MISSING
    return f"[{low:z.1%}, {high:z.1%}]"


def format_rate(rate: float | None, low: float | None, high: float | None) -> str:
    """`54.8% [30.4%, 81.8%]`; the interval is left out when there is none, "—" without a rate."""
    return _with_interval(rate, low, high, format_share, format_interval)


def format_points(value: float | None) -> str:
    return MISSING if value is None else f"{100 * value:+z.1f} pp"


def format_difference(value: float | None, low: float | None, high: float | None) -> str:
    """`+16.7 pp [+5.6, +28.8]`: a difference of rates in percentage points with its interval."""
    return _with_interval(value, low, high, format_points,
                          lambda lo, hi: f"[{100 * lo:+z.1f}, {100 * hi:+z.1f}]")


def _with_interval(value: float | None, low: float | None, high: float | None,
                   point: Callable[[float], str], interval: Callable[[float, float], str]) -> str:
    """`point(value)` with `interval(low, high)` after it where there is one; "—" without."""
    if value is None:
        return MISSING
    if low is None or high is None:
        return point(value)
    return f"{point(value)} {interval(low, high)}"


def metric_ids(results: Results) -> list[str]:
    """Every metric any target has a rate entry for, in id order."""
    return sorted({m for t in results.targets.values() for m in t.by_metric})


def metric_label(metric_id: str, metric_names: Mapping[str, str] | None) -> str:
    name = (metric_names or {}).get(metric_id)
    return f"{metric_id} {name}" if name else metric_id


def _row(target: str, metric: str, est: dict[str, Any] | None) -> dict:
    """A row of `export_tables.rates_frame` as text (a metric the target has no rate on: "—")."""
    if est is None:
        return {"target": target, "metric": metric, "rate": MISSING, "ci": MISSING,
                "method": MISSING, "scenarios": 0, "n": 0, "n_error": 0}
    return {
        "target": target,
        "metric": metric,
        "rate": format_share(est["rate"]),
        "ci": format_interval(est["ci_low"], est["ci_high"]),
        "method": interval_method(est["method"], est["reason"]),
        "scenarios": est["base_scenarios"],
        "n": est["n"],
        "n_error": est["n_error"],
    }


def results_table(results: Results, metric_names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per target × (overall, positive and negative metrics pooled, each metric):
    rate, interval, how the interval was made (or why there is none), base scenarios, valid
    rows, error rows.

    Rates and intervals are display strings; n and n_error stay integers so the
    table can still be sorted and summed.
    """
    found = {(r["target"], r["scope"], r["key"]): r
             for r in frame_records(export_tables.rates_frame(results))}
    rows = []
    for target in sorted(results.targets):
        rows.append(_row(target, OVERALL, found.get((target, "overall", OVERALL))))
        for kind in METRIC_TYPES:
            rows.append(_row(target, kind, found.get((target, "metric type", kind))))
        for m in metric_ids(results):
            rows.append(_row(target, metric_label(m, metric_names),
                             found.get((target, "metric", m))))
    return pd.DataFrame(rows, columns=RESULTS_COLUMNS)


COVERAGE_COLUMNS = ["interval", "method", "study design", "grid design", "grid coverage",
                    "stress grid coverage"]


def methods_by_kind(results: Results) -> dict[str, list[str]]:
    """The `ci_method` of every interval the results made, by the kind of interval
    (`results.intervals`) it is one of: a rate so close to 0 or 1 that cluster-t says nothing
    falls back to Wilson on the base scenarios (`stats.rates`), and a capitulation band too."""
    rates = list(results.targets.values())
    pressure = list(results.pressure.targets.values()) if results.pressure else []
    found = {
        "overall rate": [t.overall.ci_method for t in rates],
        "rate of a metric type": [e.ci_method for t in rates for e in (t.positive, t.negative)],
        "rate of a metric": [e.ci_method for t in rates for e in t.by_metric.values()],
        "difference between targets": [d.ci_method for d in results.comparison.pairwise],
        "demographic gap": [g.ci_method for t in rates for g in t.demographic_gaps],
        "capitulation band": [p.ci_method for t in pressure for p in t.curve.points],
        "capitulation band of a metric": [p.ci_method for t in pressure
                                          for c in t.by_metric.values() for p in c.points],
    }
    return {kind: [m for m in made if m != methods.NONE] for kind, made in found.items()}


def used_method(kind: str, method: str, used: Mapping[str, list[str]]) -> str:
    """A kind of interval's method as the study used it: its own, or, where some of its
    intervals were made another way, each method with how many of them it made."""
    made = used.get(kind, [])
    if len(set(made)) <= 1:
        return method_label(made[0] if made else method)
    counts = {m: made.count(m) for m in dict.fromkeys([method, *sorted(made)]) if m in made}
    return "; ".join(f"{method_label(m)} for {n} of {len(made)}" for m, n in counts.items())


def interval_coverage_table(results: Results) -> pd.DataFrame:
    """One row per kind of interval: its method (each method the study's intervals of that
    kind used, where not all the same), the study's design, and the coverage the coverage grid
    (docs/interval_coverage.md) and the stress grid (docs/stress_coverage.md) measured at the
    largest design not above it, or why none is shown."""
    rows = []
    used = methods_by_kind(results)
    for shown in results.intervals:
        design = f"{shown.metrics} metrics × {shown.base_scenarios_per_metric} base scenarios"
        if shown.reason is not None:
            rows.append([shown.interval, method_label(shown.method), design, MISSING,
                         shown.reason, MISSING])
            continue
        stress = MISSING if shown.stress_low is None else (
            f"{shown.stress_low:.3f}–{shown.stress_high:.3f}")
        rows.append([
            shown.interval,
            used_method(shown.interval, shown.method, used),
            design,
            f"{shown.grid_metrics} metrics × {shown.grid_per_metric}",
            f"{shown.coverage_low:.3f}–{shown.coverage_high:.3f}",
            stress,
        ])
    return pd.DataFrame(rows, columns=COVERAGE_COLUMNS)


COMPARISON_COLUMNS = ["compared", "metric", "difference [CI]", "method", "p", "p (Holm)",
                      "after Holm", "MDE"]


def _test_columns(d: dict[str, Any]) -> list:
    """A row of `export_tables`' difference frames as text: the difference with its interval,
    its method, its tests and its minimum detectable effect."""
    significant = d["holm_significant"]
    return [
        format_difference(d["difference"], d["ci_low"], d["ci_high"]),
        interval_method(d["method"], d["reason"]),
        format_p(d["p_value"]),
        format_p(d["p_holm"]),
        MISSING if significant is None else ("differs" if significant else "no evidence"),
        MISSING if d["mde"] is None else f"{100 * d['mde']:.1f} pp",
    ]


def comparison_table(results: Results) -> pd.DataFrame:
    """Every pair of targets over all metrics, then on each metric: the difference a − b with
    its interval, the p-value that inverts it, Holm's adjustment within its family and the
    minimum detectable effect at 80% power (a difference the design would find 80% of the
    time; an interval holding 0 says little about differences smaller than it)."""
    rows = [[f"{d['a']} − {d['b']}", "all", *_test_columns(d)]
            for d in frame_records(export_tables.pairwise_frame(results))]
    rows += [[f"{d['a']} − {d['b']}", d["metric"], *_test_columns(d)]
             for d in frame_records(export_tables.metric_pairwise_frame(results))]
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


GAP_COLUMNS = ["target", "axis", "compared", "gap [CI]", "method", "p", "p (Holm)",
               "after Holm", "MDE"]


def gaps_table(results: Results) -> pd.DataFrame:
    """Every demographic gap: value a − value b with its interval, its test, Holm's decision
    within its target and axis, and the minimum detectable gap at 80% power."""
    gaps = sorted(frame_records(export_tables.gaps_frame(results)), key=lambda g: g["target"])
    rows = [[g["target"], g["axis"], f"{g['a']} − {g['b']}", *_test_columns(g)] for g in gaps]
    return pd.DataFrame(rows, columns=GAP_COLUMNS)


def multiplicity_note(results: Results, *tables: str) -> str:
    """How the families of `tables` (names of `stats.multiplicity.FAMILIES`) are adjusted in
    this study, in a sentence each: stated beside the tables they govern."""
    said = []
    for found in results.multiplicity:
        if found.table not in tables:
            continue
        if found.adjustment == HOLM:
            said.append(f"{found.table}: Holm's correction within each family ({found.family}; "
                        f"{found.n_families} famil{'y' if found.n_families == 1 else 'ies'}, "
                        f"up to {found.largest} tests), family-wise error ≤ "
                        f"{1 - results.statistics.confidence_level:g}")
        else:
            said.append(f"{found.table}: not adjusted ({found.family}); each interval is a "
                        "pointwise one")
    return "Multiplicity: " + "; ".join(said) + "." if said else ""


COMPONENT_COLUMNS = ["target", "metric", "rate", "base scenarios", "between scenarios",
                     "between variants", "between samples", "between judgements", "ICC"]


def variance_components_table(results: Results) -> pd.DataFrame:
    """Per target and metric: the variance of its verdicts between base scenarios, variants,
    samples and judgements (`stats.variance_components`), each as a share of the first three's
    sum; "within scenarios" where variants and samples cannot be told apart."""

    def share(value: float | None, total: float | None) -> str:
        if value is None or not total:
            return MISSING
        return f"{value / total:.0%}"

    rows = []
    for target in sorted(results.targets):
        for metric, c in sorted(results.targets[target].variance_components.items()):
            total = None if c.within_scenarios is None or c.between_scenarios is None else (
                c.between_scenarios + c.within_scenarios)
            variants = share(c.between_variants, total)
            samples = share(c.between_samples, total)
            if c.between_variants is None and c.within_scenarios is not None:
                variants = samples = f"{share(c.within_scenarios, total)} (together)"
            rows.append([target, metric, format_share(c.rate), c.n_scenarios,
                         share(c.between_scenarios, total), variants, samples,
                         share(c.between_judgements, total),
                         MISSING if c.scenario_share is None else f"{c.scenario_share:.2f}"])
    return pd.DataFrame(rows, columns=COMPONENT_COLUMNS)


def _generation_category(error: GenerationError) -> str:
    if error.stage == "gen_metrics":
        return "metric"
    return "demographic rewrite" if error.demographic else "base scenario"


def error_breakdown(
    scores: Iterable[Score], generation_errors: Iterable[GenerationError] = ()
) -> pd.DataFrame:
    """Error rows counted per target, stage and cause.

    A score row of a failed conversation is a simulate error; every other
    score error is the evaluator's. Generation errors belong to no target and
    are counted under "(scenario generation)".
    """
    counts: dict[tuple[str, str, str], int] = {}
    for s in scores:
        if s.status != "error":
            continue
        category = error_category(s.error or "")
        stage = "simulate" if category == CONVERSATION_FAILED else "evaluate"
        key = (s.target, stage, category)
        counts[key] = counts.get(key, 0) + 1
    for g in generation_errors:
        key = (GENERATION, g.stage, _generation_category(g))
        counts[key] = counts.get(key, 0) + 1
    rows = [{"target": t, "stage": st, "category": c, "count": n} for (t, st, c), n in counts.items()]
    frame = pd.DataFrame(rows, columns=ERROR_COLUMNS)
    return frame.sort_values(ERROR_COLUMNS[:3], kind="stable").reset_index(drop=True)


def error_breakdown_for(layout: Layout, targets: Sequence[str]) -> pd.DataFrame:
    """`error_breakdown` of a benchmark (or validation arm) from its standard artifact paths."""
    generation = [
        *read_yaml_model(layout.benchmark_file, Benchmark).errors,
        *read_artifact(layout.scenarios_file, ScenariosFile).errors,
    ]
    scores = [s for t in targets for s in read_artifact(layout.scores_file(t), ScoresFile).rows]
    return error_breakdown(scores, generation)
