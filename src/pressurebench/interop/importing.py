"""`pressurebench import`: validate conversations another tool had, then declare them as a
target's.

Everything is read and checked before anything is written: a bad file (not a log, a sample
without chat messages, a system-only sample, a duplicate id, a file over the size limit) is
refused with its file and sample, and what was imported before stays as it was. Then the
normalized copy is written (atomically) and the target's entry in the params records it, with
the copy's digest.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..io import atomic_rewrite_text, atomic_write_text, read_text, validate_as
from ..llm.providers.registry import importing_provider
from ..params import ModelSpec, Params, load_params
from ..paths import imported_file
from .conversion import cluster_value, is_imported
from .inspect_import import read_inspect_log
from .jsonl_import import read_jsonl
from .records import ImportedConversation, ImportedFile, ImportedSource

# Checked before a file is opened: Inspect reads a whole log into memory.
MAX_IMPORT_BYTES = 2 * 1024**3
READERS = {".eval": ("inspect", read_inspect_log), ".json": ("inspect", read_inspect_log),
           ".jsonl": ("jsonl", read_jsonl)}


@dataclass(frozen=True)
class ImportReport:
    target: str
    benchmark: str
    path: Path
    conversations: int
    sources: list[ImportedSource]
    cluster_by: str | None

    def lines(self) -> list[str]:
        out = [f"{s.path}: {s.conversations} conversations ({s.format})" for s in self.sources]
        clustering = (f"clustered by `{self.cluster_by}`" if self.cluster_by
                      else "each conversation its own cluster")
        out.append(f"wrote {self.conversations} conversations to {self.path} as target "
                   f"'{self.target}' of '{self.benchmark}' ({clustering})")
        return out


def read_source(path: Path) -> tuple[ImportedSource, list[ImportedConversation]]:
    if not path.is_file():
        raise ConfigError(path, "file not found")
    size = path.stat().st_size
    if size > MAX_IMPORT_BYTES:
        raise ConfigError(path, f"file is {size / 1024**3:.1f} GiB; imported files are limited "
                                f"to {MAX_IMPORT_BYTES // 1024**3} GiB (split the log)")
    kind = READERS.get(path.suffix.lower())
    if kind is None:
        raise ConfigError(path, "not a log pressurebench reads: an Inspect log (.eval, .json) "
                                "or plain chat JSONL (.jsonl)")
    fmt, reader = kind
    rows = reader(path)
    if not rows:
        raise ConfigError(path, "holds no conversations")
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return ImportedSource(path=str(path), format=fmt, sha256=digest.hexdigest(),
                          conversations=len(rows)), rows


def check_rows(rows: list[ImportedConversation], cluster_by: str | None) -> None:
    first: dict[tuple[str, int], str] = {}
    for row in rows:
        key = (row.id, row.sample)
        if key in first:
            where = "appears twice" if first[key] == row.source else f"is also in {first[key]}"
            raise ConfigError(row.source, f"duplicate id: the sample {where}", f"sample '{row.key}'")
        first[key] = row.source
        if cluster_by is not None and cluster_value(row, cluster_by) is None:
            raise ConfigError(row.source, f"--cluster-by {cluster_by}: the sample has no such "
                              "field (or it is not a text, number or boolean)", f"sample '{row.key}'")


def import_conversations(
    params_path: str | Path, benchmark: str, target: str, files: list[str | Path],
    *, cluster_by: str | None = None,
) -> ImportReport:
    params = load_params(params_path)
    if benchmark not in params.benchmarks:
        raise ConfigError(params_path, f"'{benchmark}' is not one of the benchmarks "
                                       f"({', '.join(params.benchmarks)})", "benchmarks")
    existing = params.models.get(target)
    if existing is not None and not is_imported(params, target):
        raise ConfigError(params_path, f"'{target}' is a {existing.provider} model: import "
                          "under a new target id", f"models.{target}")
    sources, rows = [], []
    for file in files:
        source, found = read_source(Path(file))
        sources.append(source)
        rows += found
    check_rows(rows, cluster_by)
    imported = ImportedFile(benchmark=benchmark, target=target, cluster_by=cluster_by,
                            sources=sources, rows=rows)
    payload = imported.model_dump_json(indent=1) + "\n"
    models = sorted({r.model for r in rows if r.model})
    entry = {
        "provider": importing_provider(),
        "model": ", ".join(models) or (existing.model if existing else target),
        "imported": {
            **({b: d.model_dump(mode="json") for b, d in (existing.imported or {}).items()}
               if existing else {}),
            benchmark: {"sources": [s.path for s in sources], "conversations": len(rows),
                        "sha256": hashlib.sha256(payload.encode()).hexdigest(),
                        "cluster_by": cluster_by},
        },
    }
    validate_as(params_path, ModelSpec, entry)  # before anything is written
    path = imported_file(benchmark, target)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, payload)
    declare(params_path, params, target, entry)
    return ImportReport(target=target, benchmark=benchmark, path=path, conversations=len(rows),
                        sources=sources, cluster_by=cluster_by)


def declare(params_path: str | Path, params: Params, target: str, entry: dict) -> None:
    """Write the target's entry (and add it to `targets`), keeping the file's comments."""
    from ruamel.yaml import YAML

    rt = YAML()
    rt.preserve_quotes = True
    rt.width = 100
    doc = rt.load(read_text(params_path))
    doc["models"][target] = entry
    if target not in params.targets:
        doc["targets"].append(target)
    out = io.StringIO()
    rt.dump(doc, out)
    validate_as(params_path, Params, YAML(typ="safe").load(out.getvalue()))
    atomic_rewrite_text(params_path, out.getvalue())
