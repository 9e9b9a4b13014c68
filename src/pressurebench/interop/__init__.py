"""Conversations and runs exchanged with the field's other tools (Inspect logs, plain JSONL)."""

from .. import lazy_face

FACE = {
    "import_conversations": "importing",
    "imported_conversations": "conversion",
    "is_imported": "conversion",
    "imported_notes": "conversion",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
