"""Run totals: every cost file summed with its stage's wall time, unknown parts kept unknown,
shown per stage and for the run on the index page and in the results report."""

from __future__ import annotations

import pytest
from run_data import BENCHMARK, manifest, usage, write_run

from pressurebench.io import write_artifact
from pressurebench.paths import Layout
from pressurebench.reports.index import write_index
from pressurebench.run_totals import read_totals, totals_frame
from pressurebench.schemas import Cost, RecordedUsage
from pressurebench.stage_run import cost_summary
from pressurebench.stats.sweeps.synthetic import synthetic_scores


@pytest.fixture
def data_dir(tmp_path):
    frame = synthetic_scores(target_rates={"t1": 0.5, "t2": 0.6}, metrics=2, base_per_metric=2,
                             samples=1, seed=0)
    write_run(tmp_path / "data", frame)
    return tmp_path / "data"


def test_every_stage_is_summed_and_an_unknown_price_makes_the_cost_unknown(data_dir):
    totals = read_totals(data_dir / BENCHMARK)
    stages = {(s.stage, s.target) for s in totals.stages}
    assert stages == {("gen_scenarios", None), ("simulate", "t1"), ("simulate", "t2"),
                      ("evaluate", "t1"), ("evaluate", "t2")}
    n = 2 * 2  # conversations per target
    assert totals.calls == 8 + 2 * (2 * n * 2 + n)
    assert totals.cached_calls == 2 * n
    assert totals.output_tokens == 3000 + 2 * (140 * n + 40 * n)
    assert totals.wall_s == 30 + 2 * (60 + 20)
    assert totals.cost_usd is None
    assert totals.unknown_cost == ["runs/t1/simulate/cost.json", "runs/t2/simulate/cost.json"]


def test_a_known_price_everywhere_gives_the_summed_cost(tmp_path):
    frame = synthetic_scores(target_rates={"t1": 0.5}, metrics=2, base_per_metric=2, samples=1)
    write_run(tmp_path, frame)
    layout = Layout(tmp_path, BENCHMARK)
    write_artifact(layout.cost_file("simulate", "t1"),
                   Cost(by_model={"t1": usage(8, 0, 100, 10, 0.125)}, total_cost_usd=0.125))
    assert read_totals(layout.root).cost_usd == pytest.approx(0.5 + 0.125 + 0.25)


def test_a_new_kind_of_stage_is_counted_and_a_missing_manifest_leaves_time_unknown(data_dir):
    layout = Layout(data_dir, BENCHMARK)
    write_artifact(layout.cost_file("fidelity", "t1"),
                   Cost(by_model={"judge": usage(5, 0, 50, 5, 0.0)}, total_cost_usd=0.0))
    totals = read_totals(layout.root)
    fidelity = next(s for s in totals.stages if s.stage == "fidelity")
    assert fidelity.calls == 5 and fidelity.target == "t1" and fidelity.wall_s is None
    assert totals.wall_s is None and totals.unknown_wall == ["runs/t1/fidelity/cost.json"]
    assert "fidelity" in totals_frame(totals)["stage"].tolist()


def test_validation_arms_and_studies_count_in_the_run_but_not_behind_the_results(data_dir):
    root = Layout(data_dir, BENCHMARK).root
    arm = Layout(data_dir, BENCHMARK, "user/other")
    write_artifact(arm.cost_file("simulate", "t1"),
                   Cost(by_model={"other": usage(7, 0, 70, 7, 0.0)}, total_cost_usd=0.0))
    write_artifact(arm.manifest_file("simulate", "t1"), manifest(
        "simulate", target="t1", params={}, models={}, duration_s=5.0))
    write_artifact(arm.cost_file("user_model_bias"), Cost())
    write_artifact(arm.manifest_file("user_model_bias"), manifest(
        "user_model_bias", target=None, params={}, models={}, duration_s=2.0))
    everything = read_totals(root)
    results = read_totals(root, results_only=True)
    assert everything.calls == results.calls + 7
    assert everything.wall_s == results.wall_s + 5 + 2
    assert {s.stage for s in results.stages} == {"gen_scenarios", "simulate", "evaluate"}


def test_the_table_ends_with_the_run_total(data_dir):
    frame = totals_frame(read_totals(data_dir / BENCHMARK))
    last = frame.iloc[-1]
    assert last["stage"] == "run total" and last["cost paid"] == "unknown"
    assert last["wall time"] == "3 min 10 s"
    assert list(frame["calls"][:-1].astype(int)) and frame["calls"].iloc[-1] == sum(
        frame["calls"][:-1])


def test_the_index_shows_each_benchmarks_totals(data_dir, tmp_path):
    html = write_index(tmp_path / "reports", data_dir=data_dir).read_text()
    assert "Run totals" in html and "run total" in html and "3 min 10 s" in html
    assert html.count('<tr class="total">') == 1


def test_the_index_says_why_totals_are_missing(data_dir, tmp_path):
    Layout(data_dir, BENCHMARK).cost_file("evaluate", "t1").write_text("{")
    html = write_index(tmp_path / "reports", data_dir=data_dir).read_text()
    assert "No run totals" in html and "evaluate/cost.json" in html


def test_a_replayed_run_shows_what_its_calls_cost_when_made_beside_what_it_paid(tmp_path):
    """A run replayed from the cache paid $0; its calls cost $0.31 when they were made. Both
    reach the totals, the report's table and `compare`'s cost rows."""
    from pressurebench.compare.report import totals_side_by_side

    frame = synthetic_scores(target_rates={"t1": 0.5}, metrics=2, base_per_metric=2, samples=1)
    write_run(tmp_path, frame)
    layout = Layout(tmp_path, BENCHMARK)
    for path in layout.root.rglob("cost.json"):
        path.unlink()
    replayed = cost_summary(
        {"t1": usage(8, 8, 100, 10, 0.0)},
        {"t1": RecordedUsage(calls=8, cost_usd=0.31, timed_calls=8, latency_s=16.0)},
    )
    write_artifact(layout.cost_file("simulate", "t1"), replayed)
    totals = read_totals(layout.root)
    assert totals.cost_usd == 0.0 and totals.recorded_cost_usd == pytest.approx(0.31)
    last = totals_frame(totals).iloc[-1]
    assert last["cost paid"] == "$0.0000" and last["cost when made"] == "$0.3100"
    side = totals_side_by_side(totals, totals)
    assert side.loc["cost paid by the last run", "A"] == "$0.0000"
    assert side.loc["cost of its calls when made", "A"] == "$0.3100"
