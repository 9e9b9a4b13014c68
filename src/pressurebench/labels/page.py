"""The rater's page: one static, self-contained HTML file per batch of items.

Built like the transcript browser (`reports.browser`): the items are embedded
as escaped JSON (`reports.safety`), the page's own script builds every element
with `textContent`, and a Content-Security-Policy allows no network and no
script but its own. A rater opens it from disk; nothing is sent anywhere. Its
template and assets live beside this module, not among the report templates
every pipeline stage depends on: changing the rater's page re-runs no stage.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import jinja2

from .. import __version__
from ..reports.safety import content_security_policy, json_for_script
from ..stage_run import now_iso
from .records import LabelItem

TEMPLATES = Path(__file__).parent / "templates"


def _asset(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def _template() -> jinja2.Template:
    """The page template, autoescaping every value (as `reports.safety.template_env` does)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
    )
    return env.get_template("labelling.html.j2")


def page_data(benchmark: str, batch: int, batches: int, items: Sequence[LabelItem]) -> dict:
    """What the page embeds: the rater's view of each item and nothing kept from them.

    Items are copied field by field: an `ExportedItem` is a `LabelItem`, and dumping it
    whole would embed the fields kept from the rater.
    """
    return {
        "benchmark": benchmark,
        "batch": batch,
        "batches": batches,
        "items": [
            LabelItem(**{name: getattr(i, name) for name in LabelItem.model_fields}).model_dump()
            for i in items
        ],
    }


def render_page(benchmark: str, batch: int, batches: int, items: Sequence[LabelItem]) -> str:
    script = _asset("labelling.js")
    style = _asset("labelling.css")
    if "</script" in script.lower() or "</style" in style.lower():
        raise ValueError("a labelling asset contains a closing tag and cannot be inlined")
    return _template().render(
        title=f"{benchmark}: labelling, batch {batch} of {batches}",
        generated_at=now_iso(),
        version=__version__,
        csp=content_security_policy(script),
        style=style,
        script=script,
        data_json=json_for_script(page_data(benchmark, batch, batches, items)),
        fidelity=any(i.fidelity is not None for i in items),
    )
