"""`pressurebench release`: a finished study as a folder ready to push to the Hugging Face Hub.

    DIR/README.md         the dataset card: the YAML header the Hub reads, a body from the run
    DIR/croissant.json    Croissant metadata with its Responsible AI fields
    DIR/data/<table>.parquet

The tables (`release_tables`) are read from the run's artifacts, never from the response
cache, the manifests (which copy the params) or the params beyond each model's provider and
name, so no key, endpoint or cached reply can reach the folder. Human labels come only with
`include_raters`, under pseudonyms. The release is built in a scratch folder inside DIR and
moved into place once every file is written: a failed release leaves DIR as it was.
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..errors import ConfigError
from ..io import atomic_write_bytes, atomic_write_text, read_artifact
from ..params import Params
from . import release_tables as rt
from .croissant import croissant_metadata
from .dataset_card import card_text, rai_fields
from .extras import require_extra
from .finished_run import ArmRun, arm_names, read_arm


@dataclass(frozen=True)
class Release:
    folder: Path
    rows: dict[str, int]  # table -> rows
    skipped: list[str]


def write_release(params_path: str | Path, params: Params, benchmark: str, out: str | Path, *,
                  include_raters: bool = False, license_: str = "other") -> Release:
    require_extra("release", "pyarrow", "mlcroissant")
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not (out / "croissant.json").is_file():
        raise ConfigError(out, "exists and holds no release (no croissant.json): give an empty "
                          "or new folder, or one a previous release wrote")
    arms, skipped = [], []
    for name in arm_names(params, None):
        try:
            run = read_arm(params_path, params, benchmark, name)
        except ConfigError as exc:
            if name == "main":
                raise
            skipped.append(f"{name}: {exc}")
            continue
        skipped += [f"{name} {reason}" for reason in run.skipped]
        if run.targets:
            arms.append(run)
    if not arms or arms[0].name != "main":
        raise ConfigError(Path(params.data_dir) / benchmark, "the main arm has no finished "
                          "scores to release: run `dvc repro` first")
    tables = build_tables(params, benchmark, arms, include_raters, skipped)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out, prefix=".release."))
    try:
        for table in tables:
            atomic_write_bytes(staging / "data" / f"{table.name}.parquet", parquet(table))
        atomic_write_text(staging / "README.md",
                          card_text(params, benchmark, arms, tables, license_))
        metadata = croissant_metadata(
            staging, tables, name=f"pressurebench-{benchmark}",
            description=arms[0].benchmark.description, license_=license_,
            version=__version__, published=finished_at(arms[0]),
            rai=rai_fields(params, benchmark, arms, include_raters))
        atomic_write_text(staging / "croissant.json", json.dumps(metadata, indent=2) + "\n")
        replace_release(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Release(out, {t.name: len(t.rows) for t in tables}, skipped)


def replace_release(staging: Path, out: Path) -> None:
    """The staged release in place of the last one in `out`: its `data/` folder whole (no table
    of an earlier release stays behind), then the card and the metadata. Anything else in
    `out` (a clone's `.git`, a licence file) is left alone."""
    old_data = staging / "old-data"
    if (out / "data").exists():
        (out / "data").rename(old_data)
    (staging / "data").rename(out / "data")
    for name in ("README.md", "croissant.json"):
        (staging / name).replace(out / name)


def finished_at(main: ArmRun) -> str:
    """When the run's results were made (the aggregate stage's manifest), else now."""
    from ..schemas import Manifest
    from ..stage_run import now_iso

    path = main.inputs.layout.manifest_file("aggregate")
    return read_artifact(path, Manifest).finished_at if path.is_file() else now_iso()


def build_tables(params: Params, benchmark: str, arms: list[ArmRun], include_raters: bool,
                 skipped: list[str]) -> list[rt.Table]:
    """Every table of the release; a table left out is added to `skipped` with the reason."""
    from ..stats.results import Results

    axes = rt.demographic_axes(arms)
    results_file = arms[0].inputs.layout.results_file
    results = {"main": read_artifact(results_file, Results)} if results_file.is_file() else {}
    tables = [rt.metrics_table(arms), rt.scenarios_table(arms, axes),
              rt.conversations_table(params, arms, axes), rt.scores_table(arms, axes),
              rt.results_table(params, arms, results)]
    if include_raters:
        from ..labels import labels_folder
        from ..labels.joined import label_frames

        for table in rt.labels_tables(label_frames(params, benchmark)):
            if table.rows:  # an empty Parquet file is not a dataset the Hub's loader reads
                tables.append(table)
            else:
                skipped.append(f"{table.name}: no labels of this kind in "
                               f"{labels_folder(params, benchmark)}/")
    return tables


def parquet(table: rt.Table) -> bytes:
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(table.arrow(), sink)
    return sink.getvalue()
