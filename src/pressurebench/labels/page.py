"""The rater's page: one static, self-contained HTML file per batch of items.

Built like the transcript browser (`reports.browser`): the items are embedded
as escaped JSON (`reports.safety`), the page's own script builds every element
with `textContent`, and a Content-Security-Policy allows no network and no
script but its own. A rater opens it from disk; nothing is sent anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import __version__
from ..reports.safety import (
    content_security_policy,
    json_for_script,
    read_template_asset,
    template_env,
)
from ..runtime import now_iso
from .models import LabelItem


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
    script = read_template_asset("labelling.js")
    style = read_template_asset("labelling.css")
    if "</script" in script.lower() or "</style" in style.lower():
        raise ValueError("a labelling asset contains a closing tag and cannot be inlined")
    return template_env().get_template("labelling.html.j2").render(
        title=f"{benchmark}: labelling, batch {batch} of {batches}",
        generated_at=now_iso(),
        version=__version__,
        csp=content_security_policy(script),
        style=style,
        script=script,
        data_json=json_for_script(page_data(benchmark, batch, batches, items)),
    )
