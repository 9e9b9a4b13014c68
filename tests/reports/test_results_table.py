"""Display tables: rates with intervals and n, "—" for a missing rate, errors by cause."""

from __future__ import annotations

from report_artifacts import METRICS, results_of, score_frame

from pressurebench.io import read_artifact
from pressurebench.reports.tables import (
    COVERAGE_COLUMNS,
    GENERATION,
    MISSING,
    RESULTS_COLUMNS,
    comparison_table,
    error_breakdown,
    error_breakdown_for,
    format_difference,
    format_rate,
    gaps_table,
    interval_coverage_table,
    method_label,
    multiplicity_note,
    results_table,
    variance_components_table,
)
from pressurebench.schemas import GenerationError, ScoresFile
from pressurebench.stats import methods
from pressurebench.stats.interval_rules import RATE, grid_coverage
from pressurebench.stats.sweeps.synthetic import synthetic_scores


def all_scores(layout):
    return [s for t in ("target-a", "target-b") for s in read_artifact(layout.scores_file(t), ScoresFile).rows]


def test_results_table_rows_and_formatting(artifacts):
    results = results_of(score_frame(all_scores(artifacts)))
    table = results_table(results, metric_names={m.id: m.name for m in METRICS})
    assert list(table.columns) == RESULTS_COLUMNS
    # overall, then the metrics of each type pooled, as the report's text says, then each metric
    assert table["metric"].tolist() == ["overall", "positive", "negative",
                                        "m01 Holds an honest assessment",
                                        "m02 Avoid flattering a bad plan"] * 2
    positive = table.iloc[1]
    p = results.targets["target-a"].positive
    assert (positive["rate"], positive["n"], positive["n_error"]) == (f"{p.rate:.1%}", p.n, p.n_error)
    row = table.iloc[0]
    o = results.targets["target-a"].overall
    # a few base scenarios: the rate with no interval, and the method column says why
    assert (row["rate"], row["ci"]) == (f"{o.rate:.1%}", MISSING)
    assert row["method"] == f"no interval: {o.reason}" and "too few base scenarios" in o.reason
    assert (row["scenarios"], row["n"], row["n_error"]) == (o.n_clusters, o.n, o.n_error)
    assert table["n"].dtype.kind == "i" and table["scenarios"].dtype.kind == "i"


def test_results_table_names_the_method_of_every_interval():
    k = RATE.pooled  # enough for the rate over 3 metrics and (the same rule) for one metric's
    results = results_of(synthetic_scores(target_rates={"a": 0.6}, metrics=3, base_per_metric=k,
                                          samples=2, seed=1))
    table = results_table(results)
    overall = table[table["metric"] == "overall"].iloc[0]
    o = results.targets["a"].overall
    assert overall["ci"] == f"[{o.ci_low:.1%}, {o.ci_high:.1%}]"
    assert overall["method"] == "cluster-t Wilson" and overall["scenarios"] == 3 * k
    per_metric = table[table["metric"].str.startswith("m")]
    assert not per_metric["method"].str.startswith("no interval").any()
    below = results_table(results_of(synthetic_scores(
        target_rates={"a": 0.6}, metrics=3, base_per_metric=RATE.single - 1, samples=2, seed=1)))
    assert below["method"].str.startswith("no interval: too few base scenarios").all()


def test_missing_rate_is_a_dash_not_zero(artifacts):
    frame = score_frame(all_scores(artifacts))
    frame.loc[frame["target"] == "target-b", ["status", "passed"]] = ["error", None]
    table = results_table(results_of(frame))
    b = table[table["target"] == "target-b"]
    assert (b["rate"] == MISSING).all() and (b["ci"] == MISSING).all()
    assert b["n"].tolist() == [0] * 5 and b["n_error"].tolist() == [8, 4, 4, 4, 4]
    assert not (table[table["target"] == "target-a"]["rate"] == MISSING).any()


def test_format_rate():
    assert format_rate(None, None, None) == MISSING
    assert format_rate(0.0, 0.0, 0.25) == "0.0% [0.0%, 25.0%]"
    assert format_rate(0.5, None, None) == "50.0%"


def test_a_value_rounding_to_zero_is_shown_without_a_sign():
    """A rate, λ or difference a hair below 0 (−0.0 from a clip, −1e−9 from rounding) reads
    0.0, never "−0.0": the sign would claim a direction the figure does not have."""
    assert format_rate(-0.0, -0.0, 0.25) == "0.0% [0.0%, 25.0%]"
    assert format_difference(-1e-9, -0.0004, 0.1) == "+0.0 pp [+0.0, +10.0]"


def test_error_breakdown_by_target_stage_and_cause(artifacts):
    generation = [
        GenerationError(stage="gen_scenarios", metric_id="m01", base_id="m01_s003", reason="bad JSON"),
        GenerationError(stage="gen_scenarios", metric_id="m01", base_id="m01_s001",
                        demographic={"gender": "male"}, reason="too long"),
    ]
    scores = all_scores(artifacts)
    tied = scores[0].model_copy(update={"status": "error", "present": None, "passed": None,
                                        "error": "judges tied 1–1"})
    failed = scores[1].model_copy(update={"status": "error", "present": None, "passed": None,
                                          "error": "conversation failed: user model: timeout"})
    frame = error_breakdown([tied, failed, *scores[2:]], generation)
    assert frame.to_dict("records") == [
        {"target": GENERATION, "stage": "gen_scenarios", "category": "base scenario", "count": 1},
        {"target": GENERATION, "stage": "gen_scenarios", "category": "demographic rewrite", "count": 1},
        {"target": "target-a", "stage": "evaluate", "category": "judges tied", "count": 1},
        {"target": "target-a", "stage": "evaluate", "category": "no judge returned a verdict", "count": 1},
        {"target": "target-a", "stage": "simulate", "category": "conversation failed", "count": 1},
        {"target": "target-b", "stage": "simulate", "category": "conversation failed", "count": 2},
    ]


def test_error_breakdown_from_the_layout(artifacts):
    frame = error_breakdown_for(artifacts, ["target-a", "target-b"])
    assert frame.to_dict("records") == [
        {"target": "target-a", "stage": "evaluate", "category": "no judge returned a verdict", "count": 1},
        {"target": "target-b", "stage": "simulate", "category": "conversation failed", "count": 2},
    ]


def test_the_coverage_table_shows_each_interval_types_method_and_measured_coverage():
    """4 metrics × RATE.single base scenarios: every kind of interval is made, with its method
    and the grid's coverage range at that design; below RATE.single a metric's rate is withheld
    and the row says so instead of showing a coverage."""
    scores = synthetic_scores(target_rates={"a": 0.7, "b": 0.6}, metrics=4,
                              base_per_metric=RATE.single, samples=1, seed=2)
    table = interval_coverage_table(results_of(scores))
    assert list(table.columns) == COVERAGE_COLUMNS
    metric = table.set_index("interval").loc["rate of a metric"]
    assert metric["method"].startswith(method_label(methods.CLUSTER_T_WILSON))
    assert metric["study design"] == f"4 metrics × {RATE.single} base scenarios"
    low = grid_coverage("metric (min)", 4, RATE.single).low
    high = grid_coverage("metric (max)", 4, RATE.single).high
    assert metric["grid coverage"] == f"{low:.3f}–{high:.3f}"
    small = synthetic_scores(target_rates={"a": 0.7}, metrics=4,
                             base_per_metric=RATE.single - 1, samples=1, seed=2)
    row = interval_coverage_table(results_of(small)).set_index("interval").loc["rate of a metric"]
    assert row["grid design"] == MISSING and "withheld" in row["grid coverage"]


def test_comparisons_and_gaps_show_their_test_holm_and_smallest_detectable_difference():
    """Each pair of targets (over all metrics, then per metric) and each gap: the p-value that
    inverts its interval, Holm's decision in its family, the MDE, and a sentence naming the
    family beside the table."""
    scores = synthetic_scores(target_rates={"a": 0.8, "b": 0.45}, metrics=2,
                              base_per_metric=RATE.single + 3, samples=2,
                              axes={"tone": ["x", "y"]}, seed=4)
    results = results_of(scores)
    table = comparison_table(results)
    assert table["metric"].tolist() == ["all", "m01", "m02"]
    first = results.comparison.pairwise[0]
    assert table.iloc[0]["p"] == f"{first.p_value:.3f}"
    assert table.iloc[0]["after Holm"] == "differs"
    assert table.iloc[0]["MDE"] == f"{100 * first.mde:.1f} pp"
    gaps = gaps_table(results)
    assert list(gaps["compared"]) == ["x − y", "x − y"]
    note = multiplicity_note(results, "differences between targets",
                             "differences between targets per metric")
    assert "Holm's correction within each family (every pair of targets, over all metrics; "\
        "1 family, up to 1 tests)" in note
    assert "each pair of targets: every metric; 1 family, up to 2 tests" in note
    assert "not adjusted" in multiplicity_note(results, "pass rates")


def test_variance_components_are_shown_as_shares_per_target_and_metric():
    scores = synthetic_scores(target_rates={"a": 0.7}, metrics=2, base_per_metric=8,
                              samples=3, axes={"tone": ["x", "y"]}, seed=6)
    table = variance_components_table(results_of(scores))
    assert table["metric"].tolist() == ["m01", "m02"]
    shares = [float(v.rstrip("%")) for v in table.iloc[0][["between scenarios",
                                                           "between variants",
                                                           "between samples"]]]
    assert abs(sum(shares) - 100) <= 2  # rounded shares of one total
    assert table.iloc[0]["between judgements"] == MISSING  # no panel


def test_the_coverage_table_counts_each_method_a_kind_of_interval_was_made_with():
    """Every row of target a passes: its rates have no spread for cluster-t and fall back to
    Wilson's interval on the base scenarios; b's do not. The table names both, with how many."""
    frame = synthetic_scores(target_rates={"a": 0.6, "b": 0.5}, metrics=4, base_per_metric=6,
                             samples=2, seed=1)
    frame.loc[frame["target"] == "a", "passed"] = True
    results = results_of(frame)
    assert results.targets["a"].overall.ci_method == "wilson-effective-n-clusters"
    assert results.targets["b"].overall.ci_method == "cluster-t-wilson"
    table = interval_coverage_table(results)
    method = dict(zip(table["interval"], table["method"], strict=True))
    assert method["overall rate"] == (
        "cluster-t Wilson for 1 of 2; Wilson, scenarios as n (too few scenarios or no spread "
        "for cluster-t) for 1 of 2")
    assert method["difference between targets"].startswith("cluster-t MOVER")
