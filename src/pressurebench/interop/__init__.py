"""Open to the field's tools: a finished run as Inspect eval logs and as a dataset release;
transcripts made elsewhere (Inspect logs, plain chat JSONL) imported as a target's conversations.

- `finished_run`: one arm's finished run read back, validated (metrics, scenarios,
  conversations, scores and the pass rates of each target);
- `inspect_export`: `pressurebench export inspect`, one Inspect eval log per arm and target,
  written through inspect_ai's own log API (the `inspect` extra);
- `importing`, `conversion`, `notes`: `pressurebench import`, the normalized copy it writes,
  the conversations simulate reads from it, and what the reports say of an imported target;
- `release`, `release_tables`, `dataset_card`, `croissant`: `pressurebench release`, Parquet
  tables, a Hugging Face dataset card and Croissant metadata (the `release` extra);
- `impactbench`: `pressurebench import-impactbench`, an impactbench benchmark folder (its
  metrics, scenarios, conversations and scores) as a benchmark's data.

The extras are imported inside the functions that need them (`extras` checks them first, with
the extra to install): the pipeline never loads them.
"""

from .. import lazy_face

FACE = {
    "export_inspect": "inspect_export",
    "write_release": "release",
    "import_conversations": "importing",
    "import_impactbench": "impactbench",
    "imported_conversations": "conversion",
    "is_imported": "conversion",
    "check_imports": "conversion",
    "judged_on_every_metric": "conversion",
    "imported_notes": "notes",
    "import_provenance": "conversion",
    "declaration": "conversion",
    "skip_reason": "conversion",
    "PROVENANCE_KEY": "conversion",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
