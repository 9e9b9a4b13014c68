"""`pressurebench labels export`: draw the items, write the rater pages and the manifest.

Items are ordered by a seeded hash of their keys before they are cut into
batches, so a page mixes targets and metrics (a rater cannot tell whose
conversation comes next) and an item keeps its place when other cells change.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..io import atomic_write_text, write_artifact
from ..params import Params
from .current import JudgedData, load_judged
from .fidelity import fidelity_brief
from .judged import conversation_sha256, examples_shown, item_id, item_key, judged_turns
from .page import render_page
from .records import ExportedItem, LabellingExport
from .sampling import draw, panel_disagrees

MANIFEST_NAME = "items.json"


def labelling_dir(params: Params, benchmark: str) -> Path:
    return params.reports_dir / benchmark / "labelling"


def page_name(batch: int) -> str:
    return f"batch_{batch:02d}.html"


def build_export(params: Params, benchmark: str, data: JudgedData | None = None) -> LabellingExport:
    """The drawn items with what the rater sees and what is kept from them."""
    data = data or load_judged(params, benchmark)
    cfg = params.labels
    drawn = draw(data.scores.values(), per_cell=cfg.per_cell,
                 disagreement_share=cfg.disagreement_share, seed=cfg.seed)

    def order(key: str) -> str:
        return hashlib.sha256(f"{cfg.seed}\x00{key}".encode()).hexdigest()

    drawn.sort(key=lambda d: order(item_key(d.score.conv_id, d.score.metric_id)))
    items = []
    for n, d in enumerate(drawn):
        s = d.score
        conv = data.conversations.get(s.conv_id)
        metric = data.metrics.get(s.metric_id)
        if conv is None or metric is None:
            missing = f"conversation '{s.conv_id}'" if conv is None else f"metric '{s.metric_id}'"
            raise ConfigError(
                params.data_dir / benchmark, f"a score row refers to {missing}, which the "
                "conversations and metrics files do not hold; re-run the pipeline (dvc repro)",
            )
        items.append(ExportedItem(
            item_key=item_key(s.conv_id, s.metric_id),
            definition=metric.definition,
            examples=examples_shown(metric, params.evaluation.show_examples),
            transcript=judged_turns(conv.transcript),
            transcript_sha256=conversation_sha256(conv),
            batch=n // cfg.batch_size + 1,
            fidelity=fidelity_brief(data, s.conv_id, s.metric_id),
            item_id=item_id(s.conv_id, s.metric_id),
            conv_id=s.conv_id,
            metric_id=s.metric_id,
            target=s.target,
            base_id=s.base_id,
            scenario_metric_id=s.scenario_metric_id,
            metric_type=s.metric_type,
            panel_disagrees=panel_disagrees(s),
            stratum=d.stratum,
            stratum_rows=d.stratum_rows,
        ))
    return LabellingExport(
        benchmark=benchmark, seed=cfg.seed, per_cell=cfg.per_cell,
        disagreement_share=cfg.disagreement_share, batch_size=cfg.batch_size,
        batches=-(-len(items) // cfg.batch_size), items=items,
    )


@dataclass(frozen=True)
class ExportWritten:
    folder: Path
    manifest: Path
    pages: list[Path]
    items: int


def write_export(params: Params, benchmark: str) -> ExportWritten:
    """Write `reports/<b>/labelling/`: one page per batch and `items.json`.

    Pages of an earlier export are removed first: a page left over from a larger
    export would offer items the manifest no longer lists.
    """
    export = build_export(params, benchmark)
    if not export.items:
        raise ConfigError(
            params.data_dir / benchmark,
            "no score row has a verdict to label; run the pipeline first (dvc repro)",
        )
    folder = labelling_dir(params, benchmark)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("batch_*.html"):
        old.unlink()
    pages = []
    for batch in range(1, export.batches + 1):
        items = [i for i in export.items if i.batch == batch]
        path = folder / page_name(batch)
        atomic_write_text(path, render_page(benchmark, batch, export.batches, items))
        pages.append(path)
    manifest = folder / MANIFEST_NAME
    write_artifact(manifest, export)
    return ExportWritten(folder, manifest, pages, len(export.items))
