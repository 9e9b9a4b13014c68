"""The transcript browser page: every row present, model text inert, data recoverable exactly."""

from __future__ import annotations

import json
import re

import pytest
from report_artifacts import (
    HOSTILE,
    HOSTILE_SCENARIO,
    HOSTILE_TARGET,
    JUDGE_FAILED,
    JUDGE_FAILED_SCENARIO,
    METRICS,
    TARGETS,
    assert_inert,
)

from pressurebench.errors import ConfigError
from pressurebench.io import read_artifact
from pressurebench.reports.browser import (
    NO_CONVERSATION,
    NOT_SCORED,
    browser_data,
    write_transcript_browser,
    write_transcript_browser_for,
)
from pressurebench.reports.safety import json_for_script, read_template_asset, script_hash
from pressurebench.schemas import ConversationsFile, ScoresFile, conv_id

DATA_OPEN = '<script type="application/json" id="pb-data">'


def embedded(html: str) -> dict:
    start = html.index(DATA_OPEN) + len(DATA_OPEN)
    return json.loads(html[start : html.index("</script>", start)])


@pytest.fixture
def page(artifacts, tmp_path):
    out = write_transcript_browser_for(artifacts, TARGETS, tmp_path / "reports" / "transcripts.html")
    return out.read_text(encoding="utf-8")


def test_every_conversation_is_a_row(artifacts, page):
    data = embedded(page)
    conv_ids = {
        c.conv_id for t in TARGETS for c in read_artifact(artifacts.conversations_file(t), ConversationsFile).rows
    }
    assert len(conv_ids) == 16
    assert {r["conv_id"] for r in data["rows"]} == conv_ids
    for cid in conv_ids:
        assert cid in page


def test_verdicts_and_errors_are_carried_over(page):
    rows = {r["conv_id"]: r for r in embedded(page)["rows"]}
    unscored = rows[conv_id("m02_s002_v02", "target-a", 0)]
    assert (unscored["verdict"], unscored["error"], unscored["status"]) == ("error", NOT_SCORED, "ok")
    failed = rows[conv_id("m02_s002_v01", "target-b", 0)]
    assert failed["status"] == "error" and failed["verdict"] == "error"
    assert failed["error"] == "conversation failed: user model: timeout"
    judge_failed = rows[conv_id(JUDGE_FAILED_SCENARIO, "target-a", 0)]
    assert (judge_failed["status"], judge_failed["verdict"]) == ("ok", "error")
    assert judge_failed["error"] == JUDGE_FAILED
    assert judge_failed["judges"][0]["error"] == "malformed JSON"
    judged = [r for r in rows.values() if r["verdict"] in ("pass", "fail")]
    for r in judged:
        assert r["passed"] == (r["verdict"] == "pass")
        assert r["justification"].startswith("Judged ")


def test_scenario_and_prompt_behind_each_row(page):
    data = embedded(page)
    row = next(r for r in data["rows"] if r["scenario_id"] == HOSTILE_SCENARIO)
    scenario = data["scenarios"][HOSTILE_SCENARIO]
    assert scenario["persona"] == f"A female founder ({HOSTILE_SCENARIO})"
    assert scenario["latent_adversarial_goal"] == "Make the assistant flatter the plan"
    assert [lm["turn"] for lm in scenario["landmarks"]] == [1, 2]
    assert data["conversations"][row["conv"]]["system_prompt"] == "You are helpful."
    assert data["metrics"]["m01"]["name"] == METRICS[0].name


def test_hostile_text_is_escaped_and_recovered_exactly(page):
    assert_inert(page, allowed_scripts=1)
    assert page.count("<script") == 2
    assert page.count("</script>") == 2
    assert "<script>alert" not in page
    assert "<img" not in page
    assert "\u2028" not in page and "\u2029" not in page
    data = embedded(page)
    conv = next(c for c in data["conversations"]
                if c["scenario_id"] == HOSTILE_SCENARIO and c["target"] == HOSTILE_TARGET)
    assert conv["transcript"][1]["content"] == HOSTILE


def test_the_page_allows_only_its_own_script(page):
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', page).group(1)
    script = read_template_asset("browser.js")
    assert f"script-src {script_hash(script)};" in csp.replace("&#39;", "'")
    assert "default-src 'none'" in csp.replace("&#39;", "'")
    assert f"<script>{script}</script>" in page
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script
    assert "<link" not in page and "<script src" not in page and "url(" not in page


def test_title_is_escaped(artifacts, tmp_path):
    out = write_transcript_browser_for(artifacts, TARGETS, tmp_path / "t.html", title="<b>x</b> & y")
    html = out.read_text(encoding="utf-8")
    assert "<title>&lt;b&gt;x&lt;/b&gt; &amp; y</title>" in html
    assert "<b>x</b>" not in html


@pytest.mark.parametrize("text", [
    "</script><script>alert(2)</script>", "<!--", "a\u2028b\u2029c", "&amp; &lt;", "\"'\\", "<\x00>",
])
def test_json_for_script_round_trips(text):
    encoded = json_for_script({"k": text, text: [text]})
    assert not set("<>&\u2028\u2029") & set(encoded)
    assert json.loads(encoded) == {"k": text, text: [text]}


def test_without_scenarios_or_scores_rows_still_appear(artifacts, tmp_path):
    out = write_transcript_browser(
        tmp_path / "t.html", benchmark="tiny", metrics=METRICS, scenarios_file=None,
        conversation_files=[artifacts.conversations_file("target-a")],
    )
    data = embedded(out.read_text(encoding="utf-8"))
    assert data["scenarios"] == {}
    assert len(data["rows"]) == 8
    assert {r["error"] for r in data["rows"]} == {NOT_SCORED}


def test_score_without_conversation_says_so(artifacts):
    scores = read_artifact(artifacts.scores_file("target-a"), ScoresFile).rows
    data = browser_data(benchmark="tiny", metrics=METRICS, scenarios=[], conversations=[], scores=scores[:1])
    (row,) = data["rows"]
    assert row["conv"] is None and row["conv_error"] == NO_CONVERSATION and row["status"] == "missing"


def test_missing_conversations_file_names_it(artifacts, tmp_path):
    missing = artifacts.conversations_file("nobody")
    with pytest.raises(ConfigError, match=re.escape(str(missing))):
        write_transcript_browser(tmp_path / "t.html", benchmark="tiny", metrics=METRICS,
                                 scenarios_file=None, conversation_files=[missing])


def test_notes_above_the_list_are_escaped_text(artifacts, tmp_path):
    from pressurebench.reports.browser import write_transcript_browser_for

    page = write_transcript_browser_for(artifacts, TARGETS, tmp_path / "t.html",
                                        notes=["Models: <b>m</b>", "Caveat. tiny model"])
    html = page.read_text()
    assert '<p class="note">Models: &lt;b&gt;m&lt;/b&gt;</p>' in html
    assert '<p class="note">Caveat. tiny model</p>' in html
