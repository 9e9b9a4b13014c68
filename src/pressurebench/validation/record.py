"""Writing a comparison artifact with the manifest that says what produced it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from ..arms.inputs import declared_params
from ..errors import ConfigError
from ..io import read_artifact, write_artifact
from ..params import Params, load_params
from ..paths import Layout
from ..stage_run import StageRun
from ..stats.results import StatisticsSettings

Study = TypeVar("Study", bound=BaseModel)


def statistics_settings(params: Params) -> StatisticsSettings:
    """The bootstrap settings a study was computed with, as its file records them."""
    stats = params.statistics
    return StatisticsSettings(
        resamples=stats.resamples, confidence_level=stats.confidence_level, seed=stats.seed
    )


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


def run_study(
    stage_name: str,
    params_path: str | Path,
    benchmark: str,
    build: Callable[[Params, str], Study],
) -> Study:
    """Run a study's stage: `build` it from the files on disk, then record it (`record_study`)."""
    stage = StageRun(stage_name, params_path, benchmark, models_used=[])
    study = build(stage.params, benchmark)
    record_study(stage, study)
    return study


def last_study(stage: str, model: type[Study], params_path: str | Path, benchmark: str) -> Study:
    """The study its stage's last run wrote (for a notebook run by hand: `notebook_session`)."""
    path = Layout(load_params(params_path).data_dir, benchmark).study_file(stage)
    if not path.is_file():
        raise ConfigError(path, "not found: run `dvc repro` first, or set write_outputs = True")
    return read_artifact(path, model)
