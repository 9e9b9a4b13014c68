"""The params each stage reads, declared once in code: its manifest records their values, and
its `params:` in dvc.yaml list the same paths (tests/pipeline/test_declared_params.py)."""

from __future__ import annotations

from .inputs import ArmInputs
from .naming import EVALUATOR, USER


def declared_params(stage: str, inputs: ArmInputs | None = None, target: str | None = None) -> list[str]:
    """The param paths `stage` reads in this arm (of `target`), so a change to any of them re-runs
    it and nothing else does. A role the arm swaps is read from the arm's model id, not from
    `roles`."""
    run = ["run.repair_retries", "run.max_error_rate"]
    if stage in ("gen_metrics", "gen_scenarios"):
        role = ["roles.generator"] if inputs.study is None else []
        gen = {
            "gen_metrics": ["generation.metrics_per_benchmark", "generation.max_regenerations"],
            "gen_scenarios": ["generation.scenarios_per_metric", "generation.scenario_turns",
                              "generation.demographics", "generation.max_regenerations"],
        }[stage]
        return [*role, f"models.{inputs.generator}", *gen, *run]
    if stage == "simulate":
        role = [] if inputs.study == USER else ["roles.user"]
        return [*role, f"models.{inputs.user}", f"models.{target}", "generation.turns",
                "generation.num_samples", "generation.landmarks", "generation.allow_early_end",
                "generation.perfunctory",
                "run.truncated_replies", *run]
    if stage == "evaluate":
        # The evaluator may be a panel (a list), so the whole registry is declared.
        role = [] if inputs is not None and inputs.study == EVALUATOR else ["roles.evaluator"]
        return [*role, "models", "evaluation", *run]
    if stage == "aggregate":  # labels.dir: where the human labels of the main arm are read
        return ["targets", "statistics", "labels.dir"]
    if stage == "generator_bias":  # model families, for the self-preference check
        return ["validation", "statistics", "models"]
    if stage in ("user_model_bias", "evaluator_bias"):
        return ["validation", "statistics"]
    raise ValueError(f"no declaration for stage {stage}")
