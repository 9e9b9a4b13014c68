"""The line every report opens with: which models produced it, and the embedded model's caveat.

A reader who opens one report must not mistake numbers from the 135M-parameter
embedded model for research results, nor have to search the params to learn
which models a figure came from.
"""

from __future__ import annotations

from pathlib import Path

from ..arms.naming import configured_arms, study_of_stage
from ..llm.providers.registry import is_embedded
from ..params import Params, load_params

EMBEDDED_CAVEAT = (
    "The embedded SmolLM2-135M model produced some of these results. It proves the pipeline "
    "runs offline; its numbers are noise, not findings. For a paper, run stronger models "
    "(docs/tutorial.md, docs/api-models.md)."
)


def _describe(params: Params, model_id: str) -> str:
    spec = params.models[model_id]
    return f"{model_id} ({spec.provider}: {spec.model})"


def models_used(params: Params, benchmark: str, arm: str | None = None) -> dict[str, list[str]]:
    """Role → model ids of the arm (the main arm by default): who generated, played the user,
    judged, checked the simulated user (with `fidelity.check`, in an arm that simulates) and
    answered."""
    from ..arms.inputs import resolve

    inputs = resolve("params", params, benchmark, arm)
    checked = params.fidelity.check and inputs.simulates
    return {
        "generator": [inputs.generator],
        "simulated user": [inputs.user],
        "evaluator": list(inputs.evaluators),
        **({"fidelity judge": params.roles.fidelity_judges} if checked else {}),
        "targets": list(inputs.targets),
    }


def uses_embedded_model(params: Params, model_ids: list[str]) -> bool:
    return any(is_embedded(params.models[m].provider) for m in model_ids)


def study_arms(params: Params, stage: str) -> list[str]:
    """The arms a validation study compares with the main run (none for other stages)."""
    study = study_of_stage(stage)
    return [] if study is None else [arm.name for arm in configured_arms(params, study)]


def models_note(
    params_path: str | Path, benchmark: str, arm: str | None = None, stage: str | None = None
) -> str:
    """Markdown: the models by role (for a validation study, of the main run and of every arm
    it compares), then the caveat when an embedded model is among them."""
    params = load_params(params_path)
    runs = [arm] if arm else [None, *study_arms(params, stage or "")]
    lines, ids_used = [], []
    for run in runs:
        used = models_used(params, benchmark, run)
        ids_used += [m for ids in used.values() for m in ids]
        lines.append(f"**Models** ({'arm ' + run if run else 'main run'} of {benchmark}): "
                     + "; ".join(f"{role}: {', '.join(_describe(params, m) for m in ids)}"
                                 for role, ids in used.items()) + ".")
    if uses_embedded_model(params, ids_used):
        lines.append(f"**Caveat.** {EMBEDDED_CAVEAT}")
    return "\n\n".join(lines)
