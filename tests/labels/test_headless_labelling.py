"""A rater's session in a real browser: name, every answer (mouse and keys), a reload that
keeps them, and the downloaded labels files, which then pass the import's checks.

Chromium is driven through chromedriver's W3C WebDriver HTTP interface, spoken
directly (a handful of JSON requests), with downloads allowed into a temporary
folder.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from browser_support import WebDriver, chromedriver, needs_browser
from pressurebench.labels.export import write_export
from pressurebench.labels.records import HumanLabel
from pressurebench.labels.store import import_labels, read_labels_file
from pressurebench.params import load_params
from support import WAIT_S

pytestmark = pytest.mark.slow

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C web element identifier
ANSWER_KEYS = {"p": "present", "a": "absent", "u": "unsure"}


class RaterSession(WebDriver):
    """The few WebDriver commands a rater's session needs, downloads allowed into a folder."""

    def __init__(self, port: int, download_dir: Path, profile: Path):
        super().__init__(port, profile, prefs={"download.default_directory": str(download_dir),
                                               "download.prompt_for_download": False})
        self.call("POST", self.s("/goog/cdp/execute"), {
            "cmd": "Browser.setDownloadBehavior",
            "params": {"behavior": "allow", "downloadPath": str(download_dir)},
        })

    def get(self, url: str) -> None:
        self.open(url)
        self.wait_until_ready()

    def reload(self) -> None:
        """Reload the page, then wait for the new document to have restored its answers."""
        self.script("document.body.dataset.state = 'replaced'")
        self.call("POST", self.s("/refresh"), {})
        self.wait_until_ready()

    def settled_text(self, css: str, expected: str) -> str:
        """The text of `css` once it reads `expected`, or what it reads at the deadline: the
        page handles the keys and clicks WebDriver dispatched in its own time, so a test waits
        for the state it asserts. The deadline only bounds a page that never gets there."""
        deadline = time.monotonic() + WAIT_S
        while (text := self.text(css)) != expected and time.monotonic() < deadline:
            time.sleep(0.05)
        return text

    def wait_until_ready(self) -> None:
        """Wait for the state the page sets once its script has built the items and restored
        the answers (`<body data-state="ready">`): a condition, not a time. The deadline only
        bounds a page that never gets there."""
        deadline = time.monotonic() + WAIT_S
        while self.script("return document.body ? document.body.dataset.state || '' : ''") != "ready":
            if time.monotonic() > deadline:
                pytest.fail("the labelling page never reported that it was ready")
            time.sleep(0.05)

    def find(self, css: str) -> str:
        found = self.call("POST", self.s("/element"), {"using": "css selector", "value": css})
        assert ELEMENT in found, found
        return found[ELEMENT]

    def click(self, css: str) -> None:
        element = self.find(css)
        # Centred, so the page's sticky bar cannot cover it.
        self.call("POST", self.s("/execute/sync"), {
            "script": "arguments[0].scrollIntoView({block: 'center'})", "args": [{ELEMENT: element}]})
        self.call("POST", self.s(f"/element/{element}/click"), {})

    def type_into(self, css: str, text: str) -> None:
        self.call("POST", self.s(f"/element/{self.find(css)}/value"), {"text": text})

    def text(self, css: str) -> str:
        return self.call("GET", self.s(f"/element/{self.find(css)}/text"))

    def press(self, keys: str) -> None:
        actions = [a for k in keys for a in ({"type": "keyDown", "value": k}, {"type": "keyUp", "value": k})]
        self.call("POST", self.s("/actions"), {"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})



@pytest.fixture
def browser(tmp_path):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with chromedriver() as port:
        driver = RaterSession(port, downloads, tmp_path / "profile")
        try:
            yield driver, downloads
        finally:
            driver.quit()


def downloaded(folder: Path, suffix: str) -> Path:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        done = [p for p in folder.glob(f"*{suffix}") if not p.name.endswith(".crdownload")]
        if done:
            return done[0]
        time.sleep(0.2)
    pytest.fail(f"no {suffix} file was downloaded")


@needs_browser
def test_a_rater_labels_a_page_and_the_download_imports(judged, browser):
    judged.write_params(labels={"per_cell": 2, "batch_size": 100})
    params = load_params(judged.params_path)
    written = write_export(params, "tiny")
    driver, downloads = browser
    driver.get(written.pages[0].resolve().as_uri())
    n = driver.script("return document.querySelectorAll('section.item').length")
    assert n == 8
    assert driver.settled_text("#progress", f"0 of {n} answered") == f"0 of {n} answered"

    # Downloading before entering a name is refused, with the reason.
    driver.click("#download-jsonl")
    assert "Enter your name" in driver.text("#message")
    # A name a spreadsheet would run as a formula: the CSV download must keep it text.
    driver.type_into("#rater", "=Ada Lovelace")
    # The first item with the mouse, the rest with the keyboard (j: next item, then one key each).
    driver.click("section.item:nth-of-type(1) input[value='absent']")
    keys = "".join("pau"[i % 3] for i in range(n - 1))
    driver.press("j" + keys)
    expected = ["absent"] + [ANSWER_KEYS[k] for k in keys]
    assert driver.settled_text("#progress", f"{n} of {n} answered") == f"{n} of {n} answered"

    # A reload keeps the answers and the name.
    driver.reload()
    assert driver.settled_text("#progress", f"{n} of {n} answered") == f"{n} of {n} answered"
    assert driver.script("return document.getElementById('rater').value") == "=Ada Lovelace"

    driver.click("#download-jsonl")
    jsonl = downloaded(downloads, ".jsonl")
    driver.click("#download-csv")
    csv_file = downloaded(downloads, ".csv")
    assert jsonl.name == "labels_tiny_batch_01__Ada_Lovelace.jsonl"
    cells = [line.split(",")[1] for line in csv_file.read_text().splitlines()[1:]]
    assert cells == ["'=Ada Lovelace"] * n

    keys_on_page = driver.script(
        "return Array.from(document.querySelectorAll('section.item')).map(s => s.dataset.itemKey)")
    for path in (jsonl, csv_file):
        rows = [r.label for r in read_labels_file(path)]
        assert all(isinstance(r, HumanLabel) for r in rows)
        assert [r.item_key for r in rows] == keys_on_page
        assert [r.label for r in rows] == expected
        assert {r.rater for r in rows} == {"=ada lovelace"}  # unescaped, then normalised

    report = import_labels(params, "tiny", [jsonl, csv_file])
    assert [(p.name, dict(c)) for p, c in report.imported] == [(jsonl.name, {"=ada lovelace": n})]
    # The CSV holds the same labels, so importing it too would count Ada twice.
    ((refused, reason),) = report.refused
    assert refused == csv_file and "labelled item" in reason


@needs_browser
def test_a_rater_answers_the_fidelity_questions_with_keys_and_mouse(checked, browser):
    """Each item asks the behaviour and then one question per fidelity kind: the keys answer
    the highlighted question and move to the next, and the answers reach both downloads."""
    checked.write_params(labels={"per_cell": 1, "batch_size": 100})
    params = load_params(checked.params_path)
    written = write_export(params, "tiny")
    driver, downloads = browser
    driver.get(written.pages[0].resolve().as_uri())
    n = driver.script("return document.querySelectorAll('section.item').length")
    kinds = driver.script(
        "return Array.from(document.querySelectorAll('section.item:nth-of-type(1) .fidelity "
        ".question')).map(q => q.dataset.question)")
    assert n == 4 and len(kinds) == 6
    # The brief (which names the latent goal the judge never saw) waits for the behaviour answer.
    hidden = "return Array.from(document.querySelectorAll('.fidelity')).map(f => f.hidden)"
    assert driver.script(hidden) == [True] * n
    driver.type_into("#rater", "Ada")
    # Item 1's behaviour by mouse; then j to item 2, and one key per question of items 2 to 4.
    driver.click("section.item:nth-of-type(1) .question[data-question='behaviour'] input[value='present']")
    assert driver.script(hidden) == [False] + [True] * (n - 1)
    assert "PERSONA-MARKER" in driver.text("section.item:nth-of-type(1) .brief")
    keys = "".join("pau"[i % 3] for i in range((n - 1) * 7))
    driver.press("j" + keys)
    # item 1's fidelity is open
    assert driver.settled_text("#progress", f"{n - 1} of {n} answered") == f"{n - 1} of {n} answered"
    for kind in kinds:
        driver.click(f"section.item:nth-of-type(1) .question[data-question='{kind}'] input[value='absent']")
    assert driver.settled_text("#progress", f"{n} of {n} answered") == f"{n} of {n} answered"
    driver.reload()
    assert driver.settled_text("#progress", f"{n} of {n} answered") == f"{n} of {n} answered"

    driver.click("#download-jsonl")
    jsonl = downloaded(downloads, ".jsonl")
    driver.click("#download-csv")
    csv_file = downloaded(downloads, ".csv")
    answers = [ANSWER_KEYS[k] for k in keys]
    for path in (jsonl, csv_file):
        rows = [r.label for r in read_labels_file(path)]
        assert [r.label for r in rows] == ["present"] + answers[0::7]
        assert rows[0].fidelity == dict.fromkeys(kinds, "absent")
        for i, row in enumerate(rows[1:]):
            assert list(row.fidelity.values()) == answers[i * 7 + 1:(i + 1) * 7]
            assert list(row.fidelity) == kinds
    report = import_labels(params, "tiny", [jsonl])
    assert [dict(c) for _, c in report.imported] == [{"ada": n}] and not report.refused


@needs_browser
def test_a_reload_keeps_the_answers_when_the_browser_storage_lags(judged, browser):
    """On a loaded machine Chromium can give the reloaded document a localStorage without the
    last document's writes (seen: empty after a reload, every answer in a new tab): the tab
    keeps its own copy. A new tab, which has no such copy, restores from localStorage."""
    judged.write_params(labels={"per_cell": 2, "batch_size": 100})
    written = write_export(load_params(judged.params_path), "tiny")
    url = written.pages[0].resolve().as_uri()
    driver, _ = browser
    driver.get(url)
    driver.type_into("#rater", "Ada")
    driver.click("section.item:nth-of-type(1) input[value='absent']")
    driver.press("jpa")
    assert driver.settled_text("#progress", "3 of 8 answered") == "3 of 8 answered"
    first = driver.call("GET", driver.s("/window"))
    tab = driver.call("POST", driver.s("/window/new"), {"type": "tab"})["handle"]
    driver.call("POST", driver.s("/window"), {"handle": tab})
    # A document loaded just after a write may not see it yet: the new tab is loaded again
    # until the browser's storage holds the answers (the state asserted).
    deadline = time.monotonic() + WAIT_S
    while True:
        driver.get(url)
        assert driver.script("return window.name") == ""
        if driver.text("#progress") == "3 of 8 answered" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert driver.text("#progress") == "3 of 8 answered"

    driver.call("POST", driver.s("/window"), {"handle": first})
    driver.script("localStorage.clear()")  # what the reloaded document saw
    driver.reload()
    assert driver.settled_text("#progress", "3 of 8 answered") == "3 of 8 answered"
    assert driver.script("return document.getElementById('rater').value") == "Ada"
