"""Two runs side by side: `pressurebench compare A B` (rates, differences with intervals, what changed)."""

from .. import lazy_face

FACE = {
    "compare_runs": "comparison",
    "read_run": "runs",
    "terminal_text": "report",
    "write_report": "report",
}
__getattr__, __dir__ = lazy_face(__name__, FACE)
