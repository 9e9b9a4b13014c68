"""`croissant.json`: the release described in Croissant, MLCommons' metadata format for ML
datasets (asked for by NeurIPS Datasets and Benchmarks), with its Responsible AI fields.

Built with `mlcroissant`'s own classes (`mlc.Metadata`, `FileObject`, `RecordSet`, `Field`),
which write the JSON-LD context and check each node as it is made; `mlc.Dataset` validates
the written file and reads its records. Each Parquet table is a file object with its SHA-256,
and a record set whose fields are the table's scalar columns (text, integer, float, boolean).
Nested columns (a conversation's messages, a score's per-turn verdicts) are in the Parquet
files and the dataset card; the record sets leave them out.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from .release_tables import Table

PARQUET = "application/x-parquet"


def _data_type(arrow_type):
    import mlcroissant as mlc
    import pyarrow as pa

    if pa.types.is_boolean(arrow_type):
        return mlc.DataType.BOOL
    if pa.types.is_integer(arrow_type):
        return mlc.DataType.INTEGER
    if pa.types.is_floating(arrow_type):
        return mlc.DataType.FLOAT
    if pa.types.is_string(arrow_type):
        return mlc.DataType.TEXT
    return None  # nested: left out of the record set


def croissant_metadata(folder: Path, tables: list[Table], *, name: str, description: str,
                       license_: str, version: str, published: str, rai: dict) -> dict:
    """The Croissant JSON-LD of the release in `folder` (its Parquet files already written)."""
    import mlcroissant as mlc

    files, record_sets = [], []
    for table in tables:
        path = f"data/{table.name}.parquet"
        sha256 = hashlib.sha256((folder / path).read_bytes()).hexdigest()
        files.append(mlc.FileObject(id=f"{table.name}-file", name=f"{table.name}-file",
                                    content_url=path, encoding_formats=[PARQUET],
                                    sha256=sha256, description=table.description))
        fields = []
        for column, (kind, meaning) in table.columns.items():
            data_type = _data_type(kind)
            if data_type is None:
                continue
            fields.append(mlc.Field(
                id=f"{table.name}/{column}", name=column, description=meaning,
                data_types=[data_type],
                source=mlc.Source(file_object=f"{table.name}-file",
                                  extract=mlc.Extract(column=column)),
            ))
        record_sets.append(mlc.RecordSet(id=table.name, name=table.name,
                                         description=table.description, fields=fields))
    from datetime import datetime

    cite = (f"@misc{{{name},\n  title = {{{name}}},\n  note = {{Made with pressurebench "
            f"{version}}},\n  year = {{{published[:4]}}}\n}}")
    metadata = mlc.Metadata(
        name=name, description=description, license=[license_], version=version,
        cite_as=cite, date_published=datetime.fromisoformat(published),
        distribution=files, record_sets=record_sets, **rai,
    )
    return metadata.to_json()
