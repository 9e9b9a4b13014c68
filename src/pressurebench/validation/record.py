"""Writing a comparison artifact with the manifest that says what produced it."""

from __future__ import annotations

from ..io import write_artifact
from ..runtime import StageRun
from .models import GeneratorBiasStudy, UserModelBiasStudy


def record_study(stage: StageRun, study: GeneratorBiasStudy | UserModelBiasStudy) -> None:
    """`data/<b>/<stage>.json`, then `<stage>.manifest.json` and `<stage>.cost.json` beside it."""
    params = stage.params
    write_artifact(stage.layout.root / f"{stage.stage}.json", study)
    stage.finish(
        stage.client(),
        counts={"arms": len(study.arms), "targets": len(study.targets)},
        prompts=[],
        params_used={
            "validation": params.validation.model_dump(mode="json"),
            "statistics": params.statistics.model_dump(mode="json"),
            "targets": study.targets,
        },
        seeds={"bootstrap": params.statistics.seed, "subset": params.validation.seed},
    )
