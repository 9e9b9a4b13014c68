"""Open to the field's tools: a finished run as Inspect eval logs, and as a dataset release.

- `finished_run`: one arm's finished run read back, validated (metrics, scenarios,
  conversations, scores and the pass rates of each target);
- `inspect_export`: `pressurebench export inspect`, one Inspect eval log per arm and target,
  written through inspect_ai's own log API (the `inspect` extra);
- `release`, `release_tables`, `dataset_card`, `croissant`: `pressurebench release`, Parquet
  tables, a Hugging Face dataset card and Croissant metadata (the `release` extra).

The extras are imported inside the functions that need them (`extras` checks them first, with
the extra to install): the pipeline never loads them.
"""

from .. import lazy_face

FACE = {
    "export_inspect": "inspect_export",
    "write_release": "release",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
