"""Writing a comparison artifact with the manifest that says what produced it."""

from __future__ import annotations

from ..arm_inputs import declared_params
from ..io import write_artifact
from ..runtime import StageRun
from .models import GeneratorBiasStudy, UserModelBiasStudy


def record_study(stage: StageRun, study: GeneratorBiasStudy | UserModelBiasStudy) -> None:
    """`data/<b>/<stage>.json`, then `<stage>.manifest.json` and `<stage>.cost.json` beside it."""
    params = stage.params
    stage.replacing_outputs()
    write_artifact(stage.layout.root / f"{stage.stage}.json", study)
    stage.finish(
        stage.client(),
        counts={"arms": len(study.arms), "targets": len(study.targets)},
        prompts=[],
        declared=declared_params(stage.stage),
        provenance={"study_targets": study.targets},
        seeds={"bootstrap": params.statistics.seed, "subset": params.validation.seed},
    )
