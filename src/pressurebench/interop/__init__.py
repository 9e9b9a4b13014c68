"""Conversations and runs exchanged with the field's other tools (Inspect logs, plain JSONL)."""

from .. import lazy_face

FACE = {
    "import_conversations": "importing",
    "imported_conversations": "conversion",
    "is_imported": "conversion",
    "check_imports": "conversion",
    "judged_on_every_metric": "conversion",
    "imported_notes": "notes",
    "import_provenance": "conversion",
    "declaration": "conversion",
    "PROVENANCE_KEY": "conversion",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
