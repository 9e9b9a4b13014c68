"""What a reader sees: figures, tables, the transcript browser, rendered notebooks, the index.

Every page written here is static and self-contained (no server, no network),
and every piece of model text in it is treated as hostile: escaped or
sanitised, never interpreted as markup or script.
"""

from .. import lazy_face

FACE = {
    "write_index": "index",
    "render_notebook": "render",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
