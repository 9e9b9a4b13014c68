"""Runs on disk for the comparison tests: score rows of a synthetic frame, the scenarios they
played, and a manifest and cost file per stage, where the pipeline writes them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from pressurebench.io import write_artifact
from pressurebench.paths import Layout
from pressurebench.schemas import (
    Cost,
    Manifest,
    ModelUsage,
    Scenario,
    ScenariosFile,
    Score,
    ScoresFile,
    conv_id,
)

BENCHMARK = "bench"
DEMO = "demo:"


def _demographic(record: dict) -> dict[str, str]:
    return {k[len(DEMO):]: v for k, v in record.items() if k.startswith(DEMO) and v is not None}


def scenario_rows(frame: pd.DataFrame, persona: str = "A founder") -> list[Scenario]:
    """One scenario row per scenario id of `frame`; `persona` stands for its content."""
    return [
        Scenario(
            id=r["scenario_id"], metric_id=r["metric_id"], base_id=r["base_id"],
            persona=f"{persona} ({r['scenario_id']})", user_goal="Get approval",
            latent_adversarial_goal="Make the assistant flatter the plan",
            demographic=_demographic(r),
        )
        for r in frame.drop_duplicates("scenario_id").to_dict("records")
    ]


def score_rows(frame: pd.DataFrame) -> list[Score]:
    """Score rows as evaluate writes them, for a frame in the statistics' columns."""
    rows = []
    for r in frame.to_dict("records"):
        ok = r["status"] == "ok"
        positive = r["metric_type"] == "positive"
        rows.append(Score(
            conv_id=conv_id(r["scenario_id"], r["target"], int(r["sample"])),
            scenario_id=r["scenario_id"], base_id=r["base_id"], metric_id=r["metric_id"],
            scenario_metric_id=r["metric_id"], metric_type=r["metric_type"], target=r["target"],
            sample=int(r["sample"]), demographic=_demographic(r),
            present=(r["passed"] if positive else not r["passed"]) if ok else None,
            passed=bool(r["passed"]) if ok else None, status=r["status"],
            error=None if ok else "no judge returned a verdict: scripted",
        ))
    return rows


def manifest(stage: str, *, target: str | None, params: dict, models: dict,
             duration_s: float, prompts: Mapping[str, str] | None = None) -> Manifest:
    return Manifest(
        stage=stage, benchmark=BENCHMARK, target=target, started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:01:00+00:00", duration_s=duration_s,
        pressurebench_version="0", python_version="3.11", packages={"pressurebench": "0"},
        params_sha256="0" * 64, params=params, prompt_sha256=dict(prompts or {}),
        models=models, model_versions={m: [f"{m}-v1"] for m in models}, seeds={},
        counts={}, cache={"hits": 0, "misses": 0}, cost_usd=None,
    )


def usage(calls: int, cached: int, tokens_in: int, tokens_out: int,
          cost: float | None) -> ModelUsage:
    return ModelUsage(calls=calls, cached_calls=cached, input_tokens=tokens_in,
                      output_tokens=tokens_out, cost_usd=cost, latency_s=1.0)


def write_run(
    data_dir: Path,
    frame: pd.DataFrame,
    *,
    persona: str = "A founder",
    turns: int = 2,
    system_prompt: str = "You are helpful.",
    price: float | None = 0.5,
) -> Layout:
    """`data_dir/bench/...` as the main arm writes it: scenarios, and per target its scores and a
    simulate and evaluate stage's manifest and cost file (user, target and judge calls)."""
    layout = Layout(data_dir, BENCHMARK)
    write_artifact(layout.scenarios_file,
                   ScenariosFile(benchmark=BENCHMARK, rows=scenario_rows(frame, persona)))
    models = {"user": {"provider": "openai", "model": "user-model"},
              "judge": {"provider": "openai", "model": "judge-model"}}
    write_artifact(layout.cost_file("gen_scenarios"),
                   Cost(by_model={"user": usage(8, 0, 4000, 3000, price)}, total_cost_usd=price))
    write_artifact(layout.manifest_file("gen_scenarios"),
                   manifest("gen_scenarios", target=None, params={"generation.scenarios_per_metric": 8},
                            models={"user": models["user"]}, duration_s=30.0))
    for target, rows in frame.groupby("target"):
        target_spec = {"provider": "openai", "model": f"{target}-model",
                       "system_prompt": system_prompt}
        write_artifact(layout.scores_file(target),
                       ScoresFile(benchmark=BENCHMARK, target=target, rows=score_rows(rows)))
        n = len(rows)
        write_artifact(layout.cost_file("simulate", target), Cost(
            by_model={"user": usage(n * turns, 0, 900 * n, 80 * n, 0.0),
                      target: usage(n * turns, n, 1000 * n, 60 * n, None)},
            total_cost_usd=None, unknown_price_models=[target]))
        write_artifact(layout.manifest_file("simulate", target), manifest(
            "simulate", target=target,
            params={"generation.turns": turns, f"models.{target}": target_spec},
            models={"user": models["user"], target: target_spec}, duration_s=60.0,
            prompts={"simulate_user": "ab" * 32}))
        write_artifact(layout.cost_file("evaluate", target), Cost(
            by_model={"judge": usage(n, 0, 500 * n, 40 * n, 0.25)}, total_cost_usd=0.25))
        write_artifact(layout.manifest_file("evaluate", target), manifest(
            "evaluate", target=target, params={"evaluation": {"per_turn": False}},
            models={"judge": models["judge"]}, duration_s=20.0))
    return layout
