"""Each interval type's method and the coverage the grid measured at the study's design, as
results.json carries them; the package's copy of the grid summary and docs/interval_coverage.md
come from one run of the grid."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pressurebench.stats import methods
from pressurebench.stats.interval_rules import (
    COVERAGE_FILE,
    DIFFERENCE,
    RATE,
    SWEEP_COVERAGE_FILE,
    coverage_table,
    grid_coverage,
)
from pressurebench.stats.results import build_results
from pressurebench.stats.sweeps.grid import STATISTICS, summary_from_markdown
from pressurebench.stats.sweeps.synthetic import synthetic_scores

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "interval_coverage.md"
SETTINGS = {"resamples": 20, "confidence_level": 0.95, "seed": 0, "benchmark": "b"}


def test_the_packaged_summary_and_the_coverage_page_come_from_one_grid_run():
    """Every range of the package's summary is the lowest and highest of the page's cells at
    that design, over the same number of simulated benchmarks: `make coverage` writes both."""
    text = PAGE.read_text(encoding="utf-8")
    packaged = json.loads(
        (ROOT / "src" / "pressurebench" / "stats" / COVERAGE_FILE).read_text(encoding="utf-8")
    )
    assert packaged == coverage_table()
    assert packaged["benchmarks"] == int(re.search(r"--benchmarks (\d+)", text).group(1))
    assert packaged["coverage"] == summary_from_markdown(text)
    assert set(packaged["coverage"]) == set(STATISTICS)


def test_the_grid_design_read_is_the_largest_not_above_the_studys():
    sizes = sorted(int(k) for k in coverage_table()["coverage"]["overall"]["4"])
    assert grid_coverage("overall", 4, sizes[1] + 1).per_metric == sizes[1]
    assert grid_coverage("overall", 19, sizes[-1] + 100).metrics == 4
    assert grid_coverage("overall", 2, sizes[0]).metrics == 4  # fewer metrics than simulated
    assert grid_coverage("overall", 4, sizes[0] - 1) is None


def test_results_carry_each_interval_types_method_and_its_measured_coverage():
    scores = synthetic_scores(target_rates={"a": 0.7, "b": 0.6}, metrics=4,
                              base_per_metric=RATE.single + 1, samples=2, seed=3)
    shown = {i.interval: i for i in build_results(scores, **SETTINGS).intervals}
    metric = shown["rate of a metric"]
    assert metric.method == methods.CLUSTER_T_WILSON and metric.reason is None
    assert (metric.metrics, metric.base_scenarios_per_metric) == (4, RATE.single + 1)
    low = grid_coverage("metric (min)", 4, RATE.single + 1)
    high = grid_coverage("metric (max)", 4, RATE.single + 1)
    assert metric.grid_per_metric == low.per_metric <= RATE.single + 1
    assert (metric.coverage_low, metric.coverage_high) == (low.low, high.high)
    overall = grid_coverage("overall", 4, RATE.single + 1)
    assert (shown["overall rate"].coverage_low, shown["overall rate"].coverage_high) == (
        overall.low, overall.high)
    assert shown["difference between targets"].method == methods.CLUSTER_T_MOVER


def test_below_a_rule_the_results_say_the_interval_type_is_withheld():
    """At the pooled rule of a difference, below its rule on one metric: the difference over
    all metrics is shown, one metric's is withheld with the rule it needs, and so is every rate
    (whose rule is above the design)."""
    scores = synthetic_scores(target_rates={"a": 0.7, "b": 0.6}, metrics=4,
                              base_per_metric=DIFFERENCE.pooled, samples=1, seed=4)
    shown = {i.interval: i for i in build_results(scores, **SETTINGS).intervals}
    assert shown["difference between targets"].reason is None
    metric = shown["difference between targets on a metric"]
    assert metric.coverage_low is None and metric.method == methods.NONE
    assert f"needs {DIFFERENCE.single} base scenarios per metric" in metric.reason
    assert DIFFERENCE.pooled < RATE.pooled
    assert f"needs {RATE.pooled} base scenarios per metric" in shown["overall rate"].reason


def _summary_tables(text: str) -> dict[str, dict[str, dict[str, list[float]]]]:
    """The "lowest and highest coverage" tables of a coverage page, per statistic, number of
    metrics and base scenarios per metric, as the numbers shown."""
    found: dict[str, dict[str, dict[str, list[float]]]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        heading = re.match(r"### (\d+) metrics: lowest and highest coverage", line)
        if not heading:
            continue
        sizes = re.findall(r"(\d+) per metric", lines[i + 2])
        for row in lines[i + 4:]:
            if not row.startswith("|"):
                break
            name, *cells = [cell.strip() for cell in row.strip("|").split("|")]
            for k, cell in zip(sizes, cells):
                shown = re.search(r"(\d\.\d{3})–(\d\.\d{3})", cell)
                if shown:
                    found.setdefault(name, {}).setdefault(heading.group(1), {})[k] = [
                        float(shown.group(1)), float(shown.group(2))]
    return found


def test_the_packaged_sweep_summary_and_the_capitulation_page_come_from_one_run():
    """`make capitulation-coverage` writes docs/capitulation_coverage.md and the package's
    summary of capitulation bands, curve differences and the sensitivity difference, which
    results.json shows beside those intervals: the two agree range for range."""
    text = (ROOT / "docs" / "capitulation_coverage.md").read_text(encoding="utf-8")
    packaged = coverage_table(SWEEP_COVERAGE_FILE)
    assert packaged["benchmarks"] == int(re.search(r"--benchmarks (\d+)", text).group(1))
    assert packaged["coverage"] == _summary_tables(text)
    assert {"band", "metric band", "curve difference", "sensitivity"} <= set(packaged["coverage"])
    assert grid_coverage("band", 4, 3).low == packaged["coverage"]["band"]["4"]["3"][0]
