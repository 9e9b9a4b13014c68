"""`pressurebench compare A B` on runs written where the pipeline writes them: pairing decided
from the scenario rows, settings that differ from the manifests, each run's totals, the terminal
table, and the HTML report linked from the index."""

from __future__ import annotations

import json

import pytest
import yaml
from run_data import BENCHMARK, write_run

from pressurebench.commands import cli
from pressurebench.compare.comparison import RunComparison, compare_runs
from pressurebench.compare.runs import read_run
from pressurebench.errors import ConfigError
from pressurebench.io import read_artifact
from pressurebench.stats import methods
from pressurebench.stats.interval_rules import DIFFERENCE
from pressurebench.stats.sweeps.synthetic import synthetic_scores


def frames(shift: float = 0.1, seed: int = 2):
    frame = synthetic_scores(target_rates={"a": 0.5, "b": 0.5 + shift}, metrics=4,
                             base_per_metric=8, axes={"age": ["teen", "adult"]}, samples=1,
                             seed=seed)
    return frame[frame.target == "a"].assign(target="t1"), frame[frame.target == "b"].assign(
        target="t1")


@pytest.fixture
def two_runs(tmp_path):
    run_a, run_b = frames()
    write_run(tmp_path / "A", run_a)
    write_run(tmp_path / "B", run_b, turns=3, system_prompt="You are terse.")
    return tmp_path / "A", tmp_path / "B"


def test_runs_on_the_same_scenarios_are_compared_paired_group_by_group(two_runs):
    comparison = compare_runs(read_run(str(two_runs[0])), read_run(str(two_runs[1])))
    (bench,) = comparison.benchmarks
    assert bench.benchmark == BENCHMARK and bench.pairing.paired
    groups = {(c.kind, c.group): c for c in bench.changes}
    assert set(groups) == {
        ("overall", "all"), ("metric type", "positive"), ("metric type", "negative"),
        *(("metric", f"m0{i}") for i in range(1, 5)),
        ("demographic", "age=teen"), ("demographic", "age=adult"),
    }
    overall = groups[("overall", "all")]
    assert overall.change.ci_method == methods.CLUSTER_T_MOVER
    assert overall.change.difference == pytest.approx(overall.rate_b.rate - overall.rate_a.rate)
    # 4 metrics x 8 base scenarios: 28 degrees of freedom pooled, 7 for a single metric
    assert overall.change.ci_low is not None
    metric = groups[("metric", "m01")].change
    assert (metric.ci_low is None) == (DIFFERENCE.single > 8)


def test_settings_that_differ_come_from_the_manifests(two_runs):
    comparison = compare_runs(read_run(str(two_runs[0])), read_run(str(two_runs[1])))
    changed = {s.key: (s.value_a, s.value_b) for s in comparison.settings}
    assert changed == {
        "generation.turns": ("2", "3"),
        "models.t1.system_prompt": ('"You are helpful."', '"You are terse."'),
    }


def test_each_run_has_its_totals(two_runs):
    comparison = compare_runs(read_run(str(two_runs[0])), read_run(str(two_runs[1])))
    a, b = comparison.totals_a, comparison.totals_b
    n = 4 * 8 * 2  # conversations of the one target
    assert a.calls == 8 + 2 * n * 2 + n and b.calls == 8 + 2 * n * 3 + n
    assert a.cached_calls == n and a.input_tokens == 4000 + 1900 * n + 500 * n
    assert a.cost_usd is None, "the target has no price: the run's cost is unknown, not 0"
    assert a.wall_s == 30 + 60 + 20


def test_rewritten_scenarios_are_compared_unpaired_and_say_why(tmp_path):
    run_a, run_b = frames()
    write_run(tmp_path / "A", run_a)
    write_run(tmp_path / "B", run_b, persona="Another founder")
    comparison = compare_runs(read_run(str(tmp_path / "A")), read_run(str(tmp_path / "B")))
    (bench,) = comparison.benchmarks
    assert not bench.pairing.paired and "differ between the runs" in bench.pairing.reason
    overall = next(c for c in bench.changes if c.kind == "overall")
    assert overall.change.ci_method == methods.CLUSTER_T_WELCH_MOVER


def test_a_target_only_one_run_has_is_listed_not_compared(tmp_path):
    run_a, run_b = frames()
    write_run(tmp_path / "A", run_a)
    write_run(tmp_path / "B", __import__("pandas").concat([run_b, run_b.assign(target="t2")]))
    comparison = compare_runs(read_run(str(tmp_path / "A")), read_run(str(tmp_path / "B")))
    (bench,) = comparison.benchmarks
    assert bench.targets_only_b == ["t2"] and {c.target for c in bench.changes} == {"t1"}


def test_a_folder_without_scores_or_a_bad_revision_is_an_error_naming_it(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no scores"):
        read_run(str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="neither a folder nor a git revision"):
        read_run("no-such-revision", tmp_path)


def test_a_damaged_score_file_names_the_run_and_the_file(two_runs):
    path = two_runs[1] / BENCHMARK / "runs" / "t1" / "evaluate" / "scores.json"
    path.write_text(path.read_text()[:200])
    with pytest.raises(ConfigError, match=r"runs/t1/evaluate/scores.json"):
        read_run(str(two_runs[1]))


def test_the_command_prints_the_table_and_writes_a_report_linked_from_the_index(
    two_runs, tmp_path, monkeypatch, capsys
):
    from support import tiny_params

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "pipeline.yaml").write_text(yaml.safe_dump(tiny_params()))
    hostile = tmp_path / "<b>run"
    two_runs[1].rename(hostile)
    assert cli.main(["compare", str(two_runs[0]), str(hostile)]) == 0
    out = capsys.readouterr().out
    assert "B − A" in out and "cluster-t MOVER, paired" in out and "generation.turns" in out
    assert "-- t1 --" in out and "unknown" in out
    pages = list((tmp_path / "reports" / "compare").glob("*__vs__*.html"))
    assert len(pages) == 1 and "__vs__" in pages[0].name
    page = pages[0].read_text()
    assert "&lt;b&gt;run" in page and "<b>run" not in page
    assert "script-src 'none'" in page
    assert "Cost and time" in page and "system_prompt" in page
    assert page.count('src="data:image/png;base64,') == 1  # the changes, drawn with intervals
    saved = read_artifact(pages[0].with_suffix(".json"), RunComparison)
    assert saved.benchmarks[0].pairing.paired
    # The comparisons get their own index; the pipeline's (a DVC output) is not touched.
    assert not (tmp_path / "reports" / "index.html").exists()
    listing = (tmp_path / "reports" / "compare" / "index.html").read_text()
    assert f'href="{pages[0].name}"' in listing and "Run comparisons" not in listing
    assert json.loads(pages[0].with_suffix(".json").read_text())["run_b"] == str(hostile)


def test_the_header_names_every_method_the_rows_use_by_the_rows_own_names(tmp_path, capsys):
    """A paired comparison gives cluster-t MOVER intervals where per-scenario differences vary and
    Newcombe's where they do not (here: the teenagers' rows are the same in both runs); the
    header must not call every row paired cluster-t."""
    import numpy as np

    from pressurebench.compare.report import terminal_text

    run_a, _ = frames()
    run_b = run_a.copy()
    adult = (run_b["demo:age"] == "adult").to_numpy()
    flip = adult & (np.random.default_rng(3).random(len(run_b)) < 0.4)
    run_b.loc[flip, "passed"] = ~run_b.loc[flip, "passed"].astype(bool)
    write_run(tmp_path / "A", run_a)
    write_run(tmp_path / "B", run_b)
    comparison = compare_runs(read_run(str(tmp_path / "A")), read_run(str(tmp_path / "B")))
    (bench,) = comparison.benchmarks
    used = {c.change.ci_method for c in bench.changes}
    assert {methods.CLUSTER_T_MOVER, methods.NEWCOMBE_CLUSTERS} <= used
    text = terminal_text(comparison)
    header = next(line for line in text.splitlines() if line.startswith("Differences paired"))
    assert "Intervals of B − A: " in header
    assert "cluster-t MOVER, paired (" in header and "Newcombe, scenarios as n (" in header
    rows = text.split(header, 1)[1]
    assert "cluster-t MOVER, paired" in rows and "Newcombe, scenarios as n" in rows
