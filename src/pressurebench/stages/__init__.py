"""Pipeline stages. Each exposes `run(...)`, called by its notebook, writing validated artifacts."""

from .. import lazy_face

FACE = {
    "curated_source": "curated",
    "export_curated": "curated",
    "load_curated": "curated",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
