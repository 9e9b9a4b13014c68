"""Writing a comparison artifact with the manifest that says what produced it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..arms.inputs import declared_params
from ..errors import ConfigError
from ..io import read_artifact, write_artifact
from ..params import load_params
from ..paths import Layout
from ..stage_run import StageRun


def record_study(stage: StageRun, study: Any) -> None:
    """`<stage>.json` (`paths.Layout.study_file`), then `manifest.json` and `cost.json` beside it;
    a comparison calls no model, so it builds no client. An arm study counts its arms, the
    judge probes their probes. (`study` is any of the studies' models, each of which imports
    this module: none can be named here.)"""
    params = stage.params
    stage.replacing_outputs()
    write_artifact(stage.layout.study_file(stage.stage), study)
    compared = {"arms": len(study.arms)} if hasattr(study, "arms") else {
        "probes": len(study.results)}
    stage.finish(
        None,
        counts={**compared, "targets": len(study.targets)},
        prompts=[],
        declared=declared_params(stage.stage),
        provenance={"study_targets": study.targets},
        seeds={"bootstrap": params.statistics.seed, "subset": params.validation.seed},
    )


def last_study(stage: str, model: type, params_path: str | Path, benchmark: str):
    """The study its stage's last run wrote (for a notebook run by hand: `notebook_session`)."""
    path = Layout(load_params(params_path).data_dir, benchmark).study_file(stage)
    if not path.is_file():
        raise ConfigError(path, "not found: run `dvc repro` first, or set write_outputs = True")
    return read_artifact(path, model)
