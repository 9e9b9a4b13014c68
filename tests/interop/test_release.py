"""`pressurebench release`: a folder the Hugging Face `datasets` library and `mlcroissant` read.

The readers are the check: `datasets.load_dataset(folder, name)` reads the card's `configs`
as the Hub does (https://huggingface.co/docs/datasets/repository_structure), and
`mlcroissant.Dataset` validates `croissant.json` against the Croissant specification
(https://docs.mlcommons.org/croissant/docs/croissant-spec.html) and reads its records.
"""

from __future__ import annotations

import json
import logging
import sys

import pytest
import yaml
from interop_support import EVALUATOR_ARM, FAILED_CONVERSATION, JUDGE_ERROR

from pressurebench.commands.cli import main
from pressurebench.io import read_artifact
from pressurebench.paths import Layout
from pressurebench.schemas import ConversationsFile, ScenariosFile, ScoresFile
from pressurebench.stats.results import Results

pytest.importorskip("datasets")
pytest.importorskip("mlcroissant")

TARGETS = ("target-a", "target-b")
LAYOUT = Layout("data", "tiny")
TABLES = ("metrics", "scenarios", "conversations", "scores", "results")
PLANTED_KEY = "sk-planted-0123456789abcdefABCDEF"
RATER = "Gwendolyn Planted-Ratername"


def run_counts(root) -> dict[str, int]:
    """Rows each table must hold, counted from the run's own artifacts: the main arm's, and
    the evaluator arm's verdicts and overall rates (its conversations are the main arm's)."""
    convs = scores = 0
    for target in TARGETS:
        convs += len(read_artifact(root / LAYOUT.conversations_file(target),
                                   ConversationsFile).rows)
        for layout in (LAYOUT, Layout("data", "tiny", EVALUATOR_ARM)):
            scores += len(read_artifact(root / layout.scores_file(target),
                                        ScoresFile).rows)
    results = read_artifact(root / LAYOUT.results_file, Results)
    rates = sum(3 + len(t.by_metric) + sum(len(v) for v in t.by_demographic.values())
                for t in results.targets.values()) + len(TARGETS)
    return {"metrics": 2, "conversations": convs, "scores": scores, "results": rates,
            "scenarios": len(read_artifact(root / LAYOUT.scenarios_file,
                                           ScenariosFile).rows)}


def test_datasets_loads_every_table_with_the_runs_row_counts(run_dir, tmp_path):
    from datasets import load_dataset

    assert main(["release", "--benchmark", "tiny", "--out", "release"]) == 0
    counts = run_counts(run_dir)
    cache = tmp_path / "hf-cache"
    loaded = {name: load_dataset(str(run_dir / "release"), name, cache_dir=str(cache))["test"]
              for name in TABLES}
    assert {name: d.num_rows for name, d in loaded.items()} == counts
    conv = next(r for r in loaded["conversations"] if r["conv_id"] == FAILED_CONVERSATION)
    assert conv["status"] == "error" and conv["messages"][0]["role"] == "system"
    judged = [r for r in loaded["scores"] if r["error"] == JUDGE_ERROR]
    assert len(judged) == 1 and judged[0]["passed"] is None  # null, not False
    assert all(len(r["turn_verdicts"]) >= 1 for r in loaded["scores"] if r["status"] == "ok")
    results = read_artifact(run_dir / LAYOUT.results_file, Results)
    overall = next(r for r in loaded["results"]
                   if (r["target"], r["scope"]) == ("target-a", "overall"))
    expected = results.targets["target-a"].overall
    assert (overall["rate"], overall["ci_low"], overall["ci_high"], overall["n_error"]) == (
        pytest.approx(expected.rate), pytest.approx(expected.ci_low),
        pytest.approx(expected.ci_high), expected.n_error)


def test_the_card_has_the_hubs_header_and_a_body_from_the_run(run_dir):
    assert main(["release", "--benchmark", "tiny", "--out", "release",
                 "--license", "cc-by-4.0"]) == 0
    text = (run_dir / "release" / "README.md").read_text()
    head, body = text.split("---\n", 2)[1:]
    meta = yaml.safe_load(head)
    assert meta["license"] == "cc-by-4.0" and meta["size_categories"] == ["n<1K"]
    assert meta["task_categories"] and meta["pretty_name"] == "pressurebench: tiny"
    assert [c["config_name"] for c in meta["configs"]] == list(TABLES)
    assert all(c["data_files"] == [{"split": "test", "path": f"data/{c['config_name']}.parquet"}]
               for c in meta["configs"])
    assert "## How the numbers were made" in body and "cluster-t-wilson" in body
    assert "anthropic/judge-model" in body and "openai/target-a-model" in body
    assert "SmolLM2-135M" not in body  # no embedded model took part


def test_mlcroissant_validates_the_metadata_and_reads_every_record_set(run_dir, caplog):
    import mlcroissant as mlc

    assert main(["release", "--benchmark", "tiny", "--out", "release"]) == 0
    with caplog.at_level(logging.WARNING):
        dataset = mlc.Dataset(jsonld=str(run_dir / "release" / "croissant.json"))
    assert "warning" not in caplog.text.lower()  # not even a recommended property missing
    counts = run_counts(run_dir)
    for name in TABLES:
        records = list(dataset.records(name))
        assert len(records) == counts[name], name
    meta = json.loads((run_dir / "release" / "croissant.json").read_text())
    for field in ("rai:dataCollection", "rai:dataLimitations", "rai:dataBiases",
                  "rai:personalSensitiveInformation", "rai:machineAnnotationTools"):
        assert meta[field], field
    assert "anthropic/judge-model" in meta["rai:machineAnnotationTools"]


def test_no_key_cache_entry_or_rater_name_reaches_the_release(run_dir, monkeypatch):
    """A key in the environment, in `.env` and (by mistake) in an endpoint's address, a
    cache, and a rater's name: none of it reaches a file; the labels come under pseudonyms."""
    import pyarrow.parquet as pq

    from pressurebench.labels.export import build_export
    from pressurebench.params import load_params

    params_file = run_dir / "params" / "pipeline.yaml"
    params = yaml.safe_load(params_file.read_text())
    for spec in params["models"].values():
        spec["base_url"] = f"{spec['base_url']}?api_key={PLANTED_KEY}"
    params_file.write_text(yaml.safe_dump(params))
    monkeypatch.setenv(params["models"]["judge"]["api_key_env"], PLANTED_KEY)
    (run_dir / ".env").write_text(f"OPENAI_API_KEY={PLANTED_KEY}\n")
    assert any((run_dir / ".pbcache").rglob("*"))
    items = build_export(load_params(params_file), "tiny").items[:3]
    labels = run_dir / "labels" / "tiny" / "gwendolyn.jsonl"
    labels.parent.mkdir(parents=True)
    labels.write_text("".join(json.dumps({
        "item_key": i.item_key, "rater": RATER, "label": "present",
        "transcript_sha256": i.transcript_sha256, "batch": i.batch,
        "fidelity": dict.fromkeys(i.fidelity.kinds if i.fidelity else [], "absent"),
    }) + "\n" for i in items))

    assert main(["release", "--benchmark", "tiny", "--out", "release",
                 "--include-raters"]) == 0
    release = run_dir / "release"
    files = sorted(str(p.relative_to(release)) for p in release.rglob("*") if p.is_file())
    assert files == ["README.md", "croissant.json",
                     *sorted(f"data/{t}.parquet" for t in (*TABLES, "labels",
                                                            "fidelity_labels"))]
    for path in release.rglob("*"):
        if not path.is_file():
            continue
        text = (json.dumps(pq.read_table(path).to_pylist(), default=str)
                if path.suffix == ".parquet" else path.read_text())
        for secret in (PLANTED_KEY, RATER, "Gwendolyn", "api_key", "base_url"):
            assert secret not in text and secret.encode() not in path.read_bytes(), (path, secret)
    rows = pq.read_table(release / "data" / "labels.parquet").to_pylist()
    assert len(rows) == 3 and {r["rater"] for r in rows} == {"rater-01"}
    rows = pq.read_table(release / "data" / "fidelity_labels.parquet").to_pylist()
    assert rows and {r["rater"] for r in rows} == {"rater-01"}


def test_raters_asked_for_without_labels_leave_the_tables_out_and_say_so(run_dir, capsys):
    assert main(["release", "--benchmark", "tiny", "--out", "release", "--include-raters"]) == 0
    assert "skipped labels: no labels of this kind in labels/tiny/" in capsys.readouterr().out
    assert not (run_dir / "release" / "data" / "labels.parquet").exists()


def test_a_folder_that_holds_something_else_is_refused_and_kept(run_dir, capsys):
    (run_dir / "elsewhere").mkdir()
    (run_dir / "elsewhere" / "notes.txt").write_text("mine")
    assert main(["release", "--benchmark", "tiny", "--out", "elsewhere"]) == 2
    assert "holds no release" in capsys.readouterr().err
    assert [p.name for p in (run_dir / "elsewhere").iterdir()] == ["notes.txt"]
    # A release again into its own folder replaces its tables and keeps what else is there.
    assert main(["release", "--benchmark", "tiny", "--out", "release"]) == 0
    (run_dir / "release" / ".gitattributes").write_text("*.parquet filter=lfs\n")
    (run_dir / "release" / "data" / "stale.parquet").write_bytes(b"old")
    assert main(["release", "--benchmark", "tiny", "--out", "release"]) == 0
    assert (run_dir / "release" / ".gitattributes").is_file()
    assert not (run_dir / "release" / "data" / "stale.parquet").exists()
    assert sorted(p.name for p in (run_dir / "release").iterdir()) == [
        ".gitattributes", "README.md", "croissant.json", "data"]


def test_without_the_extra_the_command_says_which_to_install(run_dir, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "mlcroissant", None)  # what an absent package imports as
    assert main(["release", "--benchmark", "tiny", "--out", "release"]) == 2
    assert "needs the 'release' extra" in capsys.readouterr().err
    assert not (run_dir / "release").exists()


def test_the_embedded_models_caveat_is_in_the_card_and_the_limitations(run_dir):
    """Where the 135M embedded model played a role, the card and Croissant's limitations say
    its numbers are noise before anyone reads them as findings."""
    params_file = run_dir / "params" / "pipeline.yaml"
    params = yaml.safe_load(params_file.read_text())
    params["models"]["user"] = {"provider": "local", "model": "smollm2-135m-instruct"}
    params_file.write_text(yaml.safe_dump(params))
    assert main(["release", "--benchmark", "tiny", "--out", "release"]) == 0
    card = (run_dir / "release" / "README.md").read_text()
    assert "> **Caveat.** The embedded SmolLM2-135M model produced some of these results" in card
    meta = json.loads((run_dir / "release" / "croissant.json").read_text())
    assert "SmolLM2-135M" in json.dumps(meta["rai:dataLimitations"])
