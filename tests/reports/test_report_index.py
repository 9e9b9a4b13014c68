"""The index page: every report linked relative to it, grouped, titles escaped, headline rates."""

from __future__ import annotations

import re

import pytest
from report_artifacts import HOSTILE, assert_inert, results_of, score_frame, start_tags

from pressurebench.io import read_artifact, write_artifact
from pressurebench.reports.index import ACROSS_BENCHMARKS, main, write_index
from pressurebench.schemas import ScoresFile

PAGE = "<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>{meta}</head><body>{body}</body></html>"


def page(path, title, meta="", body=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(PAGE.format(title=title, meta=meta, body=body), encoding="utf-8")


@pytest.fixture
def reports(tmp_path):
    root = tmp_path / "reports"
    page(root / "tiny" / "gen_metrics" / "01_gen_metrics.html", "Generate metrics &amp; more",
         meta='<meta name="generated" content="2025-01-02T03:04:05+00:00">')
    page(root / "tiny" / "runs" / "target-a" / "simulate" / "03_simulate.html",
         "Simulate <script>alert(1)</script>")
    page(root / "tiny" / "validation" / "user" / "arms" / "u2" / "runs" / "target-a" / "evaluate"
         / "04_evaluate.html", "Evaluate, user arm u2")
    page(root / "tiny" / "validation" / "generator" / "bias" / "generator_bias.html",
         "Generator bias")
    page(root / "other" / "aggregate" / "05_aggregate.html", "Aggregate other", body=HOSTILE)
    page(root / "overview.html", "")
    page(root / 'we"ird <name>.html', "weird")
    (root / "tiny" / "gen_metrics" / "01_gen_metrics.ipynb").write_text("{}")
    return root


def links(html: str) -> dict[str, str]:
    return {a["href"]: a for tag, a in start_tags(html) if tag == "a"}


FIXED = {f"{b}/{page}" for b in ("tiny", "other")
         for page in ("transcripts.html", "export/index.json")} | {"compare/index.html"}


def test_lists_every_report_relative_to_the_index(reports):
    out = write_index(reports)
    html = out.read_text(encoding="utf-8")
    assert set(links(html)) == {
        "tiny/gen_metrics/01_gen_metrics.html", "tiny/runs/target-a/simulate/03_simulate.html",
        "tiny/validation/user/arms/u2/runs/target-a/evaluate/04_evaluate.html",
        "tiny/validation/generator/bias/generator_bias.html",
        "other/aggregate/05_aggregate.html", "overview.html", "we%22ird%20%3Cname%3E.html",
    } | FIXED
    assert html.index("<h2>other</h2>") < html.index("<h2>tiny</h2>") < html.index(f"<h2>{ACROSS_BENCHMARKS}</h2>")
    # Each report is listed by its arm or study (the section) and its target (the part).
    assert "<h3>validation/generator</h3>" in html and "<h3>validation/user/u2</h3>" in html
    assert "<td>03_simulate</td><td>target-a</td>" in html
    assert "<td>04_evaluate</td><td>target-a</td>" in html
    assert "2025-01-02T03:04:05+00:00" in html
    assert ">overview</a>" in html  # an empty title falls back to the file name
    assert_inert(html)


def test_pages_written_beside_the_stages_are_linked_at_fixed_places(reports, tmp_path):
    """The transcript browser, exports and comparisons (stages of the pipeline, which may run
    after the index) are linked whether they exist yet or not; the rater pages and labels files,
    written by commands a user runs when they choose, once they exist: until then the page says
    which command writes them, rather than linking a folder that is not there."""
    labels = tmp_path / "labels"
    before = write_index(reports, labels_dir=labels).read_text(encoding="utf-8")
    assert {"tiny/transcripts.html", "tiny/export/index.json", "compare/index.html"} <= set(
        links(before))
    assert "tiny/labelling/" not in links(before) and "../labels/tiny/" not in links(before)
    assert ("<li>Labelling pages: none yet when this page was written: `pressurebench labels "
            "export --benchmark tiny` writes them to reports/tiny/labelling/</li>") in before
    assert ("<li>Labels files: none yet when this page was written: `pressurebench labels import "
            "FILE... --benchmark tiny` writes them to labels/tiny/</li>") in before
    page(reports / "tiny" / "transcripts.html", "Transcripts")
    page(reports / "compare" / "HEAD__vs__exp.html", "Run comparison")
    page(reports / "tiny" / "labelling" / "batch_01.html", "Rater page")
    (labels / "tiny").mkdir(parents=True)
    after = write_index(reports, labels_dir=labels).read_text(encoding="utf-8")
    hrefs = links(after)
    assert {"tiny/transcripts.html", "tiny/export/index.json", "tiny/labelling/",
            "../labels/tiny/", "compare/index.html"} <= set(hrefs)
    assert "compare/HEAD__vs__exp.html" not in hrefs and "tiny/labelling/batch_01.html" not in hrefs
    tiny = after[after.index("<h2>tiny</h2>"):after.index("<h2>Across benchmarks</h2>")]
    for title in ("Transcript browser", "Paper exports", "Labelling pages", "Labels files"):
        assert title in tiny
    assert "none yet" not in tiny
    assert after.count("pressurebench compare A B") == 1


def test_rerun_does_not_list_the_index_itself(reports):
    write_index(reports)
    html = write_index(reports).read_text(encoding="utf-8")
    assert "index.html" not in links(html)


def test_titles_are_escaped(reports):
    html = write_index(reports).read_text(encoding="utf-8")
    assert "Simulate &lt;script&gt;alert(1)&lt;/script&gt;</a>" in html
    assert "Generate metrics &amp;amp; more" not in html and "Generate metrics &amp; more</a>" in html
    assert "<script" not in html


def test_index_elsewhere_links_back_into_reports(reports, tmp_path):
    html = write_index(reports, tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "../reports/tiny/gen_metrics/01_gen_metrics.html" in links(html)


def test_summary_from_results(reports, artifacts, tmp_path):
    scores = [s for t in ("target-a", "target-b") for s in read_artifact(artifacts.scores_file(t), ScoresFile).rows]
    results = results_of(score_frame(scores))
    write_artifact(artifacts.results_file, results)
    html = write_index(reports, data_dir=artifacts.data_dir).read_text(encoding="utf-8")
    section = html[html.index("<h2>tiny</h2>"):]
    for target in ("target-a", "target-b"):
        o = results.targets[target].overall
        row = re.search(rf"<tr><td>{target}</td><td>([^<]*)</td>"
                        rf"<td class=\"num\">(\d+)</td><td class=\"num\">(\d+)</td>", section)
        assert row.group(1) == f"{o.rate:.1%} (no interval)"  # a handful of base scenarios
        assert (int(row.group(2)), int(row.group(3))) == (o.n, o.n_error)
    # Where it is seen, a withheld interval says why and which design would give one.
    notes = re.findall(r'<p class="note">([^<]*)</p>', section)
    assert notes and all(n.startswith("No interval: ") for n in notes)
    assert "set generation.scenarios_per_metric: " in notes[0]
    assert "the command pressurebench size sizes a study" in notes[0]


def test_summary_shows_missing_rate_as_dash(reports, artifacts):
    scores = read_artifact(artifacts.scores_file("target-b"), ScoresFile).rows
    frame = score_frame(scores).assign(status="error", passed=None)
    write_artifact(artifacts.results_file, results_of(frame))
    html = write_index(reports, data_dir=artifacts.data_dir).read_text(encoding="utf-8")
    assert '<tr><td>target-b</td><td>—</td><td class="num">0</td><td class="num">8</td></tr>' in html


def test_cli(reports, tmp_path):
    assert main(["--reports", str(reports), "--data", str(tmp_path / "no-data")]) == 0
    assert (reports / "index.html").exists()


def _manifest(models: dict):
    from pressurebench.schemas import Manifest

    return Manifest(stage="simulate", benchmark="b", started_at="t", finished_at="t",
                    duration_s=0.0, pressurebench_version="0", python_version="3.11",
                    packages={}, params_sha256="0", params={}, prompt_sha256={}, models=models,
                    model_versions={}, seeds={}, counts={}, cache={}, cost_usd=0.0)


def test_the_index_names_the_models_and_warns_about_the_embedded_one(tmp_path):
    from pressurebench.io import write_artifact
    from pressurebench.reports.index import write_index
    from pressurebench.reports.models_note import EMBEDDED_CAVEAT

    data = tmp_path / "data"
    api = {"judge": {"provider": "openai", "model": "gpt-x"}}
    write_artifact(data / "b" / "gen_metrics" / "manifest.json", _manifest(api))
    page = write_index(tmp_path / "reports", data_dir=data).read_text()
    assert "judge (openai: gpt-x)" in page and "Caveat." not in page

    local = {"tiny": {"provider": "local", "model": "smollm2-135m-instruct"}}
    write_artifact(data / "b" / "runs" / "t" / "evaluate" / "manifest.json", _manifest(local))
    page = write_index(tmp_path / "reports", data_dir=data).read_text()
    assert "tiny (local: smollm2-135m-instruct)" in page
    assert f"<strong>Caveat.</strong> {EMBEDDED_CAVEAT}".replace('"', "&#34;") in page
