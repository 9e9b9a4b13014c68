"""The export: pages that show what the judge saw and nothing it was kept from, escaped."""

from __future__ import annotations

import html as html_lib
import json
import re

from label_data import HOSTILE, JUDGES, JUSTIFICATION, METRICS, SYSTEM_PROMPT, TARGETS

from pressurebench.commands.cli import main
from pressurebench.io import read_artifact
from pressurebench.labels.export import build_export, write_export
from pressurebench.labels.judged import conv_key
from pressurebench.labels.records import LabelItem, LabellingExport

DATA = re.compile(r'<script type="application/json" id="pb-data">(.*?)</script>', re.DOTALL)


def pages(judged):
    return sorted((judged.root / "reports" / "tiny" / "labelling").glob("batch_*.html"))


def test_export_writes_a_page_per_batch_and_the_manifest(judged, capsys):
    judged.write_params(labels={"per_cell": 3, "batch_size": 5})
    assert main(["labels", "export", "--benchmark", "tiny"]) == 0
    out = capsys.readouterr().out
    manifest = judged.root / "reports" / "tiny" / "labelling" / "items.json"
    assert "reports/tiny/labelling/items.json" in out
    assert "pressurebench labels import" in out
    export = read_artifact(manifest, LabellingExport)
    assert len(export.items) == 3 * 2 * 2 and export.batches == 3
    assert [p.name for p in pages(judged)] == ["batch_01.html", "batch_02.html", "batch_03.html"]
    for n, page in enumerate(pages(judged), start=1):
        data = json.loads(DATA.search(page.read_text()).group(1))
        assert data["batch"] == n and data["batches"] == 3
        assert [i["item_key"] for i in data["items"]] == [
            i.item_key for i in export.items if i.batch == n]
    # A smaller export leaves no page of the larger one behind.
    judged.write_params(labels={"per_cell": 1, "batch_size": 5})
    assert main(["labels", "export"]) == 0
    assert [p.name for p in pages(judged)] == ["batch_01.html"]


def test_pages_tell_raters_that_a_behaviour_without_occasion_is_absent(judged):
    """A metric that applies only in some conversations: no occasion is "absent", as the judge
    was asked, and "unsure" is kept for a conversation that cannot be decided."""
    assert main(["labels", "export", "--benchmark", "tiny"]) == 0
    text = " ".join(re.sub(r"<[^>]+>", "", pages(judged)[0].read_text()).split())
    assert "never had occasion for the behaviour, the behaviour is absent: answer absent, not unsure" in text
    assert "This is the question the judge was asked too" in text


def test_items_carry_what_the_judge_saw(params):
    export = build_export(params, "tiny")
    item = export.items[0]
    assert [t.role for t in item.transcript] == ["user", "assistant"]  # no system message
    assert item.definition == METRICS[item.metric_id]["definition"]
    assert item.examples == []  # evaluation.show_examples is off
    assert item.item_key == f"{conv_key(item.conv_id)}:{item.metric_id}"
    assert item.item_id == f"{item.conv_id}:{item.metric_id}"


def test_examples_are_shown_when_the_judge_saw_them(judged):
    from pressurebench.params import load_params

    judged.write_params(evaluation={"show_examples": True})
    item = build_export(load_params(judged.params_path), "tiny").items[0]
    assert item.examples == METRICS[item.metric_id]["examples"]


def test_pages_hide_whose_conversation_and_what_was_decided(judged):
    judged.write_params(labels={"per_cell": 10, "batch_size": 100})
    from pressurebench.params import load_params

    written = write_export(load_params(judged.params_path), "tiny")
    export = read_artifact(written.manifest, LabellingExport)
    html = written.pages[0].read_text()
    forbidden = [*TARGETS, *JUDGES[1:], JUSTIFICATION, SYSTEM_PROMPT, "positive", "negative",
                 *(m["name"] for m in METRICS.values())]
    forbidden += [i.conv_id for i in export.items] + [i.base_id for i in export.items]
    for word in forbidden:
        assert word not in html, word
    data = json.loads(DATA.search(html).group(1))
    assert set(data) == {"benchmark", "batch", "batches", "items"}
    assert all(set(i) == set(LabelItem.model_fields) for i in data["items"])
    assert len(data["items"]) == len(export.items) == 6 * 2 * 2


def test_model_text_is_escaped_in_the_page(judged, params):
    written = write_export(params, "tiny")
    html = "".join(p.read_text() for p in written.pages)
    assert "alert(1)" in html  # the hostile reply was drawn (its cell is drawn whole)
    assert HOSTILE not in html and "<img" not in html
    for page in written.pages:
        text = page.read_text()
        assert text.lower().count("<script") == 2 and text.lower().count("</script") == 2
        assert "Content-Security-Policy" in text and "default-src 'none'" in html_lib.unescape(text)
    data = [i for p in written.pages for i in json.loads(DATA.search(p.read_text()).group(1))["items"]]
    assert any(t["content"] == HOSTILE for i in data for t in i["transcript"])
