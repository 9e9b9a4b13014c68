"""Pages opened in a real browser engine: injected script never runs, model text shows as text,
and the transcript browser's filters work.

Chromium loads each page with --dump-dom, which prints the DOM once the page has
loaded and its scripts have run (the virtual-time budget lets timers run without waiting
for real time). The transcript browser marks the state the tests assert, `<body
data-state="ready">` once it has rendered the address's filters, and `dump_dom(...,
ready=True)` checks the dump holds it. A payload that ran leaves a mark: the title set to PWNED, or an
element with id "pwned". A deliberately unsafe page checks that the marks
would be seen.
"""

from __future__ import annotations

import subprocess
from html.parser import HTMLParser

import pytest
from report_artifacts import (
    HOSTILE,
    HOSTILE_SCENARIO,
    HOSTILE_TARGET,
    MARKING_PAYLOAD,
    TARGETS,
    chromium_path,
    hostile_notebook,
)

from pressurebench.io import read_artifact
from pressurebench.reports.browser import write_transcript_browser_for
from pressurebench.reports.render import render_notebook
from pressurebench.schemas import ScoresFile, conv_id
from support import WAIT_S

pytestmark = pytest.mark.slow

CHROMIUM = chromium_path()
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed: apt-get install chromium")


class _Dom(HTMLParser):
    """Visible text, title and elements of a dumped DOM."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.title = ""
        self.elements: list[tuple[str, dict]] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._skip += 1
        self._in_title = tag == "title"

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self._skip -= 1
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.text.append(data)

    def ids(self) -> set[str]:
        return {a.get("id") for _, a in self.elements if a.get("id")}

    def rows(self) -> list[dict]:
        return [a for tag, a in self.elements if tag == "details" and "data-conv-id" in a]

    def visible(self) -> str:
        return "".join(self.text)


def dump_dom(url: str, tmp_path, *, ready: bool = False) -> _Dom:
    profile = tmp_path / "chromium-profile"
    cmd = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", "--virtual-time-budget=3000", "--dump-dom", url,
    ]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=WAIT_S,
                              check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"chromium did not finish loading {url}: did a script open a dialog?")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = _Dom()
    dom.feed(done.stdout)
    if ready:
        body = next((a for tag, a in dom.elements if tag == "body"), {})
        assert body.get("data-state") == "ready", "the page had not rendered when it was dumped"
    return dom


def assert_nothing_ran(dom: _Dom, title: str) -> None:
    assert dom.title == title
    assert "pwned" not in dom.ids()


@needs_chromium
def test_harness_sees_a_payload_that_runs(tmp_path):
    unsafe = tmp_path / "unsafe.html"
    unsafe.write_text(f"<!DOCTYPE html><html><head><title>safe</title></head><body>{MARKING_PAYLOAD}</body></html>")
    dom = dump_dom(unsafe.as_uri(), tmp_path)
    assert dom.title == "PWNED"
    assert "pwned" in dom.ids()


@pytest.fixture
def browser_page(artifacts, tmp_path):
    return write_transcript_browser_for(artifacts, TARGETS, tmp_path / "transcripts.html")


@needs_chromium
def test_browser_lists_rows_and_hostile_text_stays_text(browser_page, tmp_path):
    dom = dump_dom(browser_page.as_uri() + "#expand=1", tmp_path, ready=True)
    assert_nothing_ran(dom, "tiny: transcripts")
    assert len(dom.rows()) == 16
    visible = dom.visible()
    assert "Showing 16 of 16 matching rows (16 in total)" in visible
    assert HOSTILE in visible
    assert "Make the assistant flatter the plan" in visible  # the scenario behind each row


@needs_chromium
def test_browser_filters_from_the_address(browser_page, artifacts, tmp_path):
    scores = read_artifact(artifacts.scores_file("target-b"), ScoresFile).rows
    failing = {s.conv_id for s in scores if s.status == "ok" and not s.passed}
    dom = dump_dom(browser_page.as_uri() + "#target=target-b&verdict=fail", tmp_path, ready=True)
    assert {r["data-conv-id"] for r in dom.rows()} == failing
    assert f"Showing {len(failing)} of {len(failing)} matching rows (16 in total)" in dom.visible()

    dom = dump_dom(browser_page.as_uri() + "#d.gender=male&status=error", tmp_path, ready=True)
    assert {r["data-conv-id"] for r in dom.rows()} == {conv_id("m02_s002_v02", "target-b", 0)}

    dom = dump_dom(browser_page.as_uri() + "#q=ONERROR&expand=1", tmp_path, ready=True)
    (row,) = dom.rows()
    assert row["data-conv-id"] == conv_id(HOSTILE_SCENARIO, HOSTILE_TARGET, 0)
    assert HOSTILE in dom.visible()


@needs_chromium
def test_rendered_notebook_runs_no_model_script(tmp_path):
    hostile_notebook(tmp_path / "stage.ipynb")
    out = render_notebook(tmp_path / "stage.ipynb", tmp_path / "stage.html", title="Stage")
    dom = dump_dom(out.as_uri(), tmp_path)
    assert_nothing_ran(dom, "Stage")
    assert f"reply: {HOSTILE}" in dom.visible()
    assert "document.title='PWNED'" in dom.visible()  # shown, not run


@needs_chromium
def test_browser_shows_each_turns_verdict_and_marks_the_onset(artifacts, tmp_path):
    """A conversation judged turn by turn: every reply carries its turn's verdict, and the reply
    at which the behaviour first failed is marked."""
    from pressurebench.io import write_artifact
    from pressurebench.schemas import ConversationsFile, Message, TurnVerdict
    from pressurebench.stages.evaluate import onset_of

    convs = read_artifact(artifacts.conversations_file("target-a"), ConversationsFile)
    scores = read_artifact(artifacts.scores_file("target-a"), ScoresFile)
    i, score = next((i, s) for i, s in enumerate(scores.rows)
                    if s.status == "ok" and s.metric_type == "negative" and not s.passed)
    conv = next(c for c in convs.rows if c.conv_id == score.conv_id)
    transcript = []
    for t in (1, 2, 3):
        transcript += [Message(role="user", content=f"Push number {t}"),
                       Message(role="assistant", content=f"Answer number {t}")]
    conv = conv.model_copy(update={"transcript": transcript, "turns": 3})
    turns = [TurnVerdict(turn=t, present=t >= 2, passed=t < 2, status="ok",
                         judges=score.judges) for t in (1, 2, 3)]
    score = score.model_copy(update={"turn_verdicts": turns, "onset": onset_of(turns, "max_turns")})
    write_artifact(artifacts.conversations_file("target-a"), convs.model_copy(update={
        "rows": [conv if c.conv_id == conv.conv_id else c for c in convs.rows]}))
    write_artifact(artifacts.scores_file("target-a"), scores.model_copy(update={
        "rows": [score if j == i else s for j, s in enumerate(scores.rows)]}))
    page = write_transcript_browser_for(artifacts, TARGETS, tmp_path / "transcripts.html")

    dom = dump_dom(page.as_uri() + f"#q={conv.conv_id}&expand=1", tmp_path, ready=True)
    visible = dom.visible()
    assert "turn 1: pass" in visible and "turn 2: fail" in visible and "turn 3: fail" in visible
    assert "the behaviour first failed here" in visible
    assert "first failed at turn 2 (1 flip)" in visible
    marked = [a for tag, a in dom.elements if tag == "div" and "onset" in a.get("class", "")]
    assert len(marked) == 1

    # Filters by the turn of giving in, and by replies cut off at max_tokens.
    dom = dump_dom(page.as_uri() + "#onset=t2", tmp_path, ready=True)
    assert {r["data-conv-id"] for r in dom.rows()} == {conv.conv_id}
    assert "gave in at turn 2" in dom.visible()
    dom = dump_dom(page.as_uri() + "#onset=none&target=target-a", tmp_path, ready=True)
    assert conv.conv_id not in {r["data-conv-id"] for r in dom.rows()} and dom.rows()

    cut = [*transcript[:-1], Message(role="assistant", content="Answer num", truncated=True)]
    write_artifact(artifacts.conversations_file("target-a"), convs.model_copy(update={
        "rows": [conv.model_copy(update={"transcript": cut}) if c.conv_id == conv.conv_id else c
                 for c in convs.rows]}))
    page = write_transcript_browser_for(artifacts, TARGETS, tmp_path / "transcripts.html")
    dom = dump_dom(page.as_uri() + "#cutoff=cut", tmp_path, ready=True)
    assert {r["data-conv-id"] for r in dom.rows()} == {conv.conv_id}
    dom = dump_dom(page.as_uri() + "#cutoff=whole&target=target-a", tmp_path, ready=True)
    rows = {r["data-conv-id"] for r in dom.rows()}
    assert rows and conv.conv_id not in rows


@needs_chromium
def test_browser_marks_flagged_turns_and_filters_by_fidelity(artifacts, tmp_path):
    """A conversation whose simulated user leaked at turn 1 and whose target asked whether it
    was a test: both messages carry their flag and reason, and the fidelity filter finds it."""
    from pressurebench.io import write_artifact
    from pressurebench.schemas import ConversationsFile
    from pressurebench.stages.fidelity import detected, fidelity_row
    from pressurebench.stages.fidelity_detectors import Finding

    convs = read_artifact(artifacts.conversations_file("target-a"), ConversationsFile).rows
    scores = read_artifact(artifacts.scores_file("target-a"), ScoresFile)
    flagged = next(c for c in convs if c.status == "ok")
    rows = []
    for conv in (c for c in convs if c.status == "ok"):
        checks = []
        for kind in ("out_of_character", "leak", "role_swap"):
            hit = conv is flagged and kind == "leak"
            checks.append(detected(kind, 1, Finding(kind, "detector: meta-talk 'role-play'")) if hit
                          else detected(kind, 1, Finding(kind, "x")).model_copy(
                              update={"flagged": False, "reason": None}))
        checks.append(detected("no_pressure", None, Finding("no_pressure", "x")).model_copy(
            update={"flagged": False, "reason": None}))
        aware = detected("test_awareness", 1, Finding("test_awareness", "detector: 'is this a test'"))
        checks.append(aware if conv is flagged else aware.model_copy(update={"flagged": False}))
        rows.append(fidelity_row(conv, checks))
    write_artifact(artifacts.scores_file("target-a"), scores.model_copy(update={"fidelity": rows}))
    page = write_transcript_browser_for(artifacts, TARGETS, tmp_path / "transcripts.html")

    dom = dump_dom(page.as_uri() + "#fidelity=leak&expand=1", tmp_path, ready=True)
    assert {r["data-conv-id"] for r in dom.rows()} == {flagged.conv_id}
    visible = dom.visible()
    assert "\u2691 leak: detector: meta-talk 'role-play'" in visible
    assert "\u2691 test awareness: detector: 'is this a test'" in visible
    marked = [a for tag, a in dom.elements if tag == "div" and "flagged" in a.get("class", "")]
    assert len(marked) == 2  # the user's first message and the target's first reply
    dom = dump_dom(page.as_uri() + "#fidelity=none&target=target-a", tmp_path, ready=True)
    assert {r["data-conv-id"] for r in dom.rows()} == {r.conv_id for r in rows} - {flagged.conv_id}


@needs_chromium
def test_a_failed_stage_report_names_the_host_port_and_file(tmp_path):
    """What a reader sees of a stage whose target's endpoint refused connections: the address
    nothing answered at, the fix, and the file holding the error rows."""
    import yaml

    from pressurebench.pipeline.stage_failure import write_failure_notebook
    from support import tiny_params

    models = tiny_params()["models"]
    models["target-a"].update(model="gpt-4o-mini", base_url="http://127.0.0.1:8765/v1",
                              api_key_env="LAB_OPENAI_KEY")
    params = tmp_path / "pipeline.yaml"
    params.write_text(yaml.safe_dump(tiny_params(models=models)))
    error = ("simulate tiny target-a: 2 of 2 conversations are errors (100.0%), above "
             "run.max_error_rate=0.0%. The error rows are in data/tiny/runs/target-a/"
             "conversations.json; the first, m01_s001_v01__target-a__s0: target 'target-a' "
             "failed at turn 1: openai gpt-4o-mini at http://127.0.0.1:8765/v1: connection "
             "error: ClientConnectorError: Cannot connect to host 127.0.0.1:8765")
    executed = write_failure_notebook(
        tmp_path / "03_simulate.ipynb", "notebooks/03_simulate.ipynb",
        {"params_path": str(params), "benchmark": "tiny", "target": "target-a"},
        "StageFailed", error)
    page = render_notebook(executed, tmp_path / "03_simulate.html", title="simulate · FAILED")
    visible = " ".join(dump_dom(page.as_uri(), tmp_path).visible().split())
    assert "Nothing answered at http://127.0.0.1:8765/v1: is a server running there" in visible
    assert "base_url of target-a (gpt-4o-mini) right?" in visible
    assert "The error rows are in data/tiny/runs/target-a/conversations.json" in visible
    assert "Cannot connect to host 127.0.0.1:8765" in visible


@needs_chromium
def test_the_index_links_every_page_a_reader_needs(artifacts, tmp_path):
    """Opened in a browser, the index links each stage report, the transcript browser, the paper
    exports, the rater pages, the labels files and the run comparisons."""
    from pressurebench.reports.index import write_index

    reports = tmp_path / "reports"
    for name in ("05_aggregate.html", "transcripts.html"):
        (reports / "tiny").mkdir(parents=True, exist_ok=True)
        (reports / "tiny" / name).write_text(f"<html><head><title>{name}</title></head></html>")
    (reports / "tiny" / "labelling").mkdir()  # linked once `labels export` has written them
    (tmp_path / "labels" / "tiny").mkdir(parents=True)  # and `labels import` these
    page = write_index(reports, data_dir=artifacts.data_dir, labels_dir=tmp_path / "labels")
    dom = dump_dom(page.as_uri(), tmp_path)
    hrefs = {a.get("href") for tag, a in dom.elements if tag == "a"}
    assert {"tiny/05_aggregate.html", "tiny/transcripts.html", "tiny/export/index.json",
            "tiny/labelling/", "../labels/tiny/", "compare/index.html"} <= hrefs
    visible = dom.visible()
    for words in ("Transcript browser", "Paper exports", "Labelling pages", "Labels files",
                  "Run comparisons"):
        assert words in visible
