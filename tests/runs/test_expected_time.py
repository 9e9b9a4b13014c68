"""`pressurebench estimate`'s expected time: recorded where the same stage ran with the same
models, assumed for the embedded model, not estimated (never 0) for an API model never run here."""

from __future__ import annotations

import pytest
from run_data import manifest, usage

from pressurebench.commands import cli
from pressurebench.commands.cost_forecast import Line
from pressurebench.commands.time_forecast import (
    ASSUMED_DECODE_TPS,
    ASSUMED_PROMPT_TPS_PER_CORE,
    expected_times,
    total_seconds,
)
from pressurebench.llm.providers.registry import api_for
from pressurebench.params import Params
from pressurebench.run_totals import run_totals, stage_totals
from pressurebench.schemas import Cost, RecordedUsage


def params(**models) -> Params:
    from support import tiny_params

    spec = tiny_params()
    spec["models"].update(models)
    return Params.model_validate(spec)


def history(stage: str, models: dict[str, tuple[int, int]], wall_s: float):
    """One recorded stage: per model (calls, cached calls)."""
    cost = Cost(by_model={m: usage(c, k, 0, 0, 0.0) for m, (c, k) in models.items()},
                total_cost_usd=0.0)
    recorded = manifest(stage, target="t", params={}, models={}, duration_s=wall_s)
    return stage_totals(f"b/runs/t/{stage}.cost.json", cost, recorded)


def line(stage, arm, model, calls, tin=1000, tout=100) -> Line:
    return Line(stage, arm, "role", model, calls, tin * calls, tout * calls, None)


def test_recorded_time_is_wall_time_per_call_not_replayed_from_the_cache():
    recorded = run_totals([
        history("simulate", {"user": (40, 10), "target-a": (40, 10)}, wall_s=120.0),
        history("simulate", {"user": (20, 20), "target-a": (20, 20)}, wall_s=3.0),  # a replay
    ])
    (time,) = expected_times(
        params(), [line("simulate", "b/main/t", "user", 50), line("simulate", "b/main/t",
                                                                   "target-a", 50)],
        recorded,
    )
    assert time.seconds == pytest.approx(100 * 120.0 / 60)
    assert time.basis.startswith("recorded") and "60 calls" in time.basis


def test_a_stage_replayed_from_the_cache_is_estimated_from_its_calls_recorded_times_and_costs():
    """Every call of the last run replayed (no uncached call to time the stage by): the time
    and cost each call had when it was made, kept with its reply, still estimate the stage."""
    recorded = {m: RecordedUsage(calls=20, cost_usd=0.155, timed_calls=20, latency_s=40.0)
                for m in ("user", "target-a")}
    cost = Cost(by_model={m: usage(20, 20, 0, 0, 0.0) for m in recorded}, total_cost_usd=0.0,
                recorded=recorded, recorded_cost_usd=0.31)
    replay = stage_totals("b/runs/t/simulate.cost.json", cost,
                          manifest("simulate", target="t", params={}, models={}, duration_s=3.0))
    lines = [line("simulate", "b/main/t", "user", 50), line("simulate", "b/main/t", "target-a", 50)]
    (time,) = expected_times(params(), lines, run_totals([replay]))
    at_once = min(api_for(params().models[m]).concurrency for m in recorded)
    assert time.seconds is not None and "never ran here" not in time.basis
    assert f"2.00 s per call when the 40 recorded calls were made, {at_once} at once" in time.basis
    assert time.seconds == pytest.approx(100 * 2.0 / at_once)
    assert time.cost_usd == pytest.approx(100 * 0.31 / 40)
    assert "what 40 recorded calls cost when made" in time.cost_basis


def test_the_embedded_model_is_assumed_at_the_stated_speeds():
    local = {"local-m": {"provider": "local", "model": "smollm2-135m-instruct", "n_threads": 2}}
    (time,) = expected_times(params(**local), [line("evaluate", "b/main/t", "local-m", 10)], None)
    # two cores: two contexts of one core each, calls side by side
    per_call = 1000 / ASSUMED_PROMPT_TPS_PER_CORE + 100 / ASSUMED_DECODE_TPS
    assert time.seconds == pytest.approx(10 * per_call / 2)
    assert time.basis.startswith("assumed")


def test_an_api_model_never_run_here_has_no_time_and_neither_has_the_run():
    times = expected_times(params(), [line("evaluate", "b/main/t", "judge", 10)], run_totals([]))
    assert times[0].seconds is None and "judge never ran here" in times[0].basis
    assert total_seconds(times) is None


def test_the_command_prints_the_expected_time(tmp_path, monkeypatch, capsys):
    import yaml

    from support import TINY_BENCHMARK, tiny_params

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "pipeline.yaml").write_text(yaml.safe_dump(tiny_params()))
    (tmp_path / "benchmarks" / "tiny").mkdir(parents=True)
    (tmp_path / "benchmarks" / "tiny" / "benchmark.yaml").write_text(yaml.safe_dump(TINY_BENCHMARK))
    assert cli.main(["estimate"]) == 0
    out = capsys.readouterr().out
    assert "Expected time of the model calls" in out
    assert "a pilot run records its time" in out and "(not estimated for every stage)" in out


def test_the_command_estimates_a_replayed_stage_from_its_recorded_calls(tmp_path, monkeypatch,
                                                                        capsys):
    """The example of docs/cost-and-performance.md: the last run of `simulate` replayed all 24 of
    its calls, which cost $0.186 and took 48 s when they were made."""
    import yaml

    from pressurebench.io import write_artifact
    from pressurebench.paths import Layout
    from pressurebench.stage_run import cost_summary
    from support import TINY_BENCHMARK, tiny_params

    monkeypatch.chdir(tmp_path)
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "pipeline.yaml").write_text(yaml.safe_dump(tiny_params()))
    (tmp_path / "benchmarks" / "tiny").mkdir(parents=True)
    (tmp_path / "benchmarks" / "tiny" / "benchmark.yaml").write_text(yaml.safe_dump(TINY_BENCHMARK))
    layout = Layout(tmp_path / "data", "tiny")
    models = ("user", "target-a")
    write_artifact(layout.cost_file("simulate", "target-a"), cost_summary(
        {m: usage(12, 12, 0, 0, 0.0) for m in models},
        {m: RecordedUsage(calls=12, cost_usd=0.093, timed_calls=12, latency_s=24.0)
         for m in models},
    ))
    write_artifact(layout.manifest_file("simulate", "target-a"),
                   manifest("simulate", target="target-a", params={}, models={}, duration_s=0.4))
    assert cli.main(["estimate"]) == 0
    out = capsys.readouterr().out
    times = out.split("Expected time of the model calls", 1)[1].split("Expected cost", 1)[0]
    (replayed,) = [x for x in times.splitlines() if "simulate" in x and "target-a" in x]
    assert "recorded: 2.00 s per call when the 24 recorded calls were made" in replayed
    costs = out.split("Expected cost from what the recorded calls cost when they were made", 1)[1]
    (cost,) = [x for x in costs.splitlines() if "simulate" in x]
    assert "tiny/main/target-a" in cost and "$0.1860" in cost
    assert "what 24 recorded calls cost when made" in cost
