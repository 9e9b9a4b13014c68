"""Helpers of the pipeline tests: mock-backed params and a checked subprocess run."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pressurebench.params import Params


def mock_params(base_url: str) -> dict:
    """Tiny params: the default model ids, served by the mock; every stage and arm exercised.

    Every section but `models` is written out in full, defaults included, as the committed
    params file is: DVC refuses a stage whose watched param is absent from the file.
    """
    given = _tiny_params(base_url)
    full = Params.model_validate(given).model_dump(mode="json")
    return {**full, "models": given["models"]}


def _tiny_params(base_url: str) -> dict:

    def model(name: str, **kw) -> dict:
        return {"provider": "openai", "model": name, "base_url": base_url, "api_key_env": "PB_MOCK_KEY",
                "max_tokens": 300, **kw}

    return {
        "models": {
            "smollm2": model("mock-small"),
            "smollm2-agreeable": model("mock-agreeable", system_prompt="Agree with the user."),
            "smollm2-hot": model("mock-hot", temperature=1.0),
        },
        "roles": {"generator": "smollm2", "user": "smollm2", "evaluator": "smollm2"},
        "targets": ["smollm2", "smollm2-agreeable"],
        "benchmarks": ["pressure-core"],
        "generation": {"metrics_per_benchmark": 2, "scenarios_per_metric": 2, "scenario_turns": 2,
                       "turns": 2, "num_samples": 2, "landmarks": True, "perfunctory": 0.1,
                       "demographics": {"age": ["teenager", "retiree"]}, "max_regenerations": 2},
        "evaluation": {"evaluate_all_metrics": False, "show_examples": False, "per_turn": True},
        "fidelity": {"check": True, "warn_share": 0.1},
        "statistics": {"resamples": 200, "confidence_level": 0.95, "seed": 3},
        "validation": {"generator_bias": ["smollm2-hot"], "user_model_bias": ["smollm2-hot"],
                       "evaluator_bias": ["smollm2-hot"],
                       "targets": ["smollm2", "smollm2-agreeable"],
                       "fraction": 1.0, "seed": 7},
        "run": {"max_error_rate": 0.5, "cache_dir": ".pbcache", "data_dir": "data",
                "reports_dir": "reports", "max_retries": 2, "repair_retries": 2,
                "truncated_replies": "error"},
    }


def run(
    cmd: list[str], cwd: Path, timeout: int = 900, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env,
                          check=False)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc
