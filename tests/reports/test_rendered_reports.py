"""The HTML reports of a study as `dvc repro` renders them say what their data is, nothing else.

One small study is run against a mock server (two targets, fidelity checks, per-turn verdicts,
the repeat judge probe, an evaluator arm), its reports rendered by the command every DVC stage
runs (`python -m pressurebench.pipeline.notebook_run`), and each test reads a rendered page: the
pass-rate table has the rows its text describes, the coverage table names the method each
interval was made with, no cell shows a raw Python value, no table is headers over nothing,
the index links no folder that is not there, the progress line says what it counts, and a
report that shows no fidelity checks says exactly why.

The judge says every behaviour is present, so every positive metric passes and every negative
one fails: the rates of the metric types are 100% and 0%, where an interval falls back to
Wilson's on the base scenarios (`stats.rates`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html import unescape
from pathlib import Path

import pytest
import yaml

from mock_providers import MockLLMServer, default_responder
from pressurebench.commands.arm import main as arm_command
from pressurebench.reports.index import write_index
from pressurebench.stages import gen_metrics, gen_scenarios, judge_probes, simulate
from support import REPO, TINY_BENCHMARK, tiny_params

pytestmark = pytest.mark.slow

KEY_ENV, KEY = "PB_REPORT_KEY", "report-test-key"
PARAMS = "params/pipeline.yaml"
TARGETS = ["target-a", "target-b"]
ARM = "evaluator/judge-b"


def present_always(req):
    """Every verdict `present`, every other answer the mock's default."""
    if req.schema is not None and "present" in req.schema.get("properties", {}):
        return {"justification": "The behaviour is there.", "present": True}
    return default_responder(req)


def stage_report(root: Path, notebook: str, out: str, **parameters: str) -> None:
    cmd = [sys.executable, "-m", "pressurebench.pipeline.notebook_run",
           str(REPO / "notebooks" / notebook), out]
    for name, value in parameters.items():
        cmd += ["-p", name, value]
    env = {**os.environ, KEY_ENV: KEY}
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    with MockLLMServer(api_key=KEY, responder=present_always) as server, \
            pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.setenv(KEY_ENV, KEY)
        models = tiny_params()["models"]
        models["judge-b"] = {"provider": "openai", "model": "judge-b-model"}
        for spec in models.values():
            spec.update(base_url=server.openai_base_url, api_key_env=KEY_ENV)
        params = tiny_params(
            models=models,
            generation={"scenarios_per_metric": 6, "turns": 2, "scenario_turns": 2},
            evaluation={"per_turn": True}, fidelity={"check": True},
            validation={"evaluator_bias": ["judge-b"], "judge_probes": ["repeat"]},
            run={"max_error_rate": 0.5})
        (root / "params").mkdir()
        (root / PARAMS).write_text(yaml.safe_dump(params, sort_keys=False))
        (root / "benchmarks" / "tiny").mkdir(parents=True)
        (root / "benchmarks" / "tiny" / "benchmark.yaml").write_text(
            yaml.safe_dump(TINY_BENCHMARK))
        gen_metrics.run(PARAMS, "tiny")
        gen_scenarios.run(PARAMS, "tiny")
        assert arm_command(["plan", "--params", PARAMS, "--benchmark", "tiny"]) == 0
        for target in TARGETS:
            simulate.run(PARAMS, "tiny", target)
            stage_report(root, "04_evaluate.ipynb", f"reports/tiny/runs/{target}/evaluate",
                         benchmark="tiny", target=target)
            judge_probes.edit_run(PARAMS, "tiny", target)
            judge_probes.evaluate_run(PARAMS, "tiny", target)
        stage_report(root, "04_evaluate.ipynb",
                     "reports/tiny/validation/evaluator/arms/judge-b/runs/target-a/evaluate",
                     benchmark="tiny", target="target-a", arm=ARM)
        stage_report(root, "validation/judge_probes.ipynb", "reports/tiny/validation/probes/bias",
                     benchmark="tiny")
        stage_report(root, "05_aggregate.ipynb", "reports/tiny/aggregate", benchmark="tiny")
        write_index(root / "reports", data_dir=root / "data", labels_dir=root / "labels")
    return root


def page(root: Path, path: str) -> str:
    return (root / "reports" / path).read_text(encoding="utf-8")


def section(html: str, heading: str) -> str:
    """The page from `heading` to the next heading of its level."""
    start = re.search(rf"<h2[^>]*>{re.escape(heading)}", html).start()
    end = re.search(r"<h2[^>]*>", html[start + 4:])
    return html[start:start + 4 + end.start()] if end else html[start:]


def tables(html: str) -> list[list[list[str]]]:
    """Each table as its rows of cell texts, header row first."""
    found = []
    for table in re.findall(r"<table.*?</table>", html, flags=re.DOTALL):
        rows = re.findall(r"<tr.*?</tr>", table, flags=re.DOTALL)
        found.append([[unescape(re.sub(r"<[^>]+>", "", c)).strip()
                       for c in re.findall(r"<t[hd][^>]*>.*?</t[hd]>", r, flags=re.DOTALL)]
                      for r in rows])
    return found


def test_the_pass_rate_table_has_the_positive_and_negative_rows_its_text_describes(study):
    part = section(page(study, "tiny/aggregate/05_aggregate.html"), "Pass rates")
    assert "<em>positive</em> and <em>negative</em> pool the metrics of each type" in part
    (rows,) = tables(part)
    header, body = rows[0], rows[1:]
    shown = [(r[header.index("target")], r[header.index("metric")]) for r in body]
    for target in TARGETS:
        assert [m for t, m in shown if t == target][:3] == ["overall", "positive", "negative"]
    rate = {(r[header.index("target")], r[header.index("metric")]): r[header.index("rate")]
            for r in body}
    assert rate[("target-a", "positive")] == "100.0%" and rate[("target-a", "negative")] == "0.0%"


def test_the_coverage_table_names_the_wilson_fallback_where_the_study_used_it(study):
    html = page(study, "tiny/aggregate/05_aggregate.html")
    (rows,) = tables(section(html, "How often each kind of interval covers at this design"))
    header = rows[0]
    method = {r[0]: r[header.index("method")] for r in rows[1:]}
    # Every base scenario of a metric has the same verdicts: no spread for cluster-t anywhere,
    # so every rate interval is Wilson's on the base scenarios, and the table says so.
    fallback = "Wilson, scenarios as n (too few scenarios or no spread for cluster-t)"
    assert method["overall rate"] == method["rate of a metric type"] == fallback
    assert "cluster-t Wilson" not in (method["overall rate"], method["rate of a metric type"])


def test_the_judge_probes_report_says_what_it_cannot_show_and_no_raw_boolean(study):
    html = page(study, "tiny/validation/probes/bias/judge_probes.html")
    cells = [c for table in tables(html) for row in table[1:] for c in row]
    assert not {"True", "False", "None", "nan"} & set(cells)
    assert "No excess to read: no probe ran beside a floor" in html  # only `repeat` ran


def test_no_report_shows_a_table_of_headers_over_nothing_nor_a_raw_python_value(study):
    pages = [p for p in (study / "reports").rglob("*.html") if p.name != "index.html"]
    assert len(pages) >= 5
    for path in pages:
        for table in tables(path.read_text(encoding="utf-8")):
            assert len(table) > 1, (path, table[0])
            assert not {"True", "False", "None", "nan"} & {c for r in table[1:] for c in r}, path
    judge = section(page(study, "tiny/aggregate/05_aggregate.html"), "Judge validity")
    assert "No human labels yet" in judge and "<table" not in judge


def test_the_index_links_the_labelling_folders_once_they_exist(study, tmp_path):
    html = page(study, "index.html")
    assert 'href="tiny/labelling/"' not in html and 'href="../labels/tiny/"' not in html
    assert ("Labelling pages: none yet when this page was written: `pressurebench labels export "
            "--benchmark tiny` writes them to") in unescape(html)
    (study / "reports" / "tiny" / "labelling").mkdir()
    (study / "labels" / "tiny").mkdir(parents=True)
    try:
        again = write_index(study / "reports", tmp_path / "index.html", data_dir=study / "data",
                            labels_dir=study / "labels").read_text(encoding="utf-8")
    finally:
        (study / "reports" / "tiny" / "labelling").rmdir()
    assert "tiny/labelling/" in again and "labels/tiny/" in again and "none yet" not in again


def test_the_progress_line_says_what_it_counts(study):
    html = unescape(page(study, "tiny/runs/target-a/evaluate/04_evaluate.html"))
    (line,) = re.findall(r"progress: (.*)", html)
    found = re.match(r"evaluate/tiny/target-a \((\d+) conversations: (\d+) score rows \+ (\d+) "
                     r"fidelity rows\): 100%.*\| (\d+)/(\d+) \[", line)
    assert found, line
    conversations, scores, fidelity, done, total = map(int, found.groups())
    assert conversations == scores == fidelity and done == total == 2 * conversations


def test_a_report_without_fidelity_checks_says_exactly_why(study):
    main = page(study, "tiny/runs/target-a/evaluate/04_evaluate.html")
    arm = page(study, "tiny/validation/evaluator/arms/judge-b/runs/target-a/evaluate/"
                      "04_evaluate.html")
    assert "Not checked" not in main and "out of character" in main
    assert "Not checked in this arm: it re-judges the main arm&#x27;s conversations" in arm or \
        "Not checked in this arm: it re-judges the main arm's conversations" in arm
    assert "fidelity.check is off" not in arm
