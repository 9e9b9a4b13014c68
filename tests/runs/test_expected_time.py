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
from pressurebench.params import Params
from pressurebench.run_totals import run_totals, stage_totals
from pressurebench.schemas import Cost


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
