"""End to end on a small scripted run: the results report's judge-validity section says how to
start without labels, and after raters' files are imported it reports agreement and corrected
pass rates from them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from pressurebench.commands import cli
from pressurebench.io import read_artifact
from pressurebench.labels.records import LabellingExport
from pressurebench.reports import judge
from pressurebench.stages import aggregate, evaluate, gen_metrics, gen_scenarios, simulate
from validation.test_arm_stages import respond as scripted_models

TARGETS = ["target-a", "target-b"]


def respond(model_id, request):
    """The arm tests' scripted models, with a judge that says present for target-a only."""
    if request.schema_name == "JudgeOutput":
        text = json.dumps(request.messages)
        return {"justification": "read", "present": "target-a answers" in text}
    return scripted_models(model_id, request)


def test_labels_flow_into_the_results_report(project, script, capsys):
    project.write_params(generation={"scenarios_per_metric": 3, "num_samples": 2,
                                     "demographics": {"age": ["young", "old"]}},
                         labels={"per_cell": 6, "batch_size": 50})
    script.responder = respond
    factory = script.factory()
    gen_metrics.run(project.params_path, "tiny", provider_factory=factory)
    gen_scenarios.run(project.params_path, "tiny", provider_factory=factory)
    for target in TARGETS:
        simulate.run(project.params_path, "tiny", target, provider_factory=factory)
        evaluate.run(project.params_path, "tiny", target, provider_factory=factory)

    results = aggregate.run(project.params_path, "tiny")
    assert results.judge_validity.status == "no labels"
    assert "pressurebench labels export --benchmark tiny" in judge.judge_note(results)
    assert judge.corrected_table(results).empty

    args = ["--params", str(project.params_path), "--benchmark", "tiny"]
    assert cli.main(["labels", "export", *args]) == 0
    export = read_artifact(Path("reports/tiny/labelling/items.json"), LabellingExport)
    # Two raters: the humans see target-a's replies as present half the time, target-b's never.
    files = []
    for rater in ("Ada", "Grace"):
        rows = [
            {"item_key": i.item_key, "rater": rater, "transcript_sha256": i.transcript_sha256,
             "batch": i.batch,
             "label": "present" if i.target == "target-a" and n % 2 == 0 else "absent"}
            for n, i in enumerate(export.items)
        ]
        path = Path(f"{rater}.jsonl")
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        files.append(str(path))
    assert cli.main(["labels", "import", *files, *args]) == 0

    results = aggregate.run(project.params_path, "tiny")
    validity = results.judge_validity
    assert validity.status == "ok" and validity.human.n_raters == 2
    assert validity.human.n_items == len(export.items)
    panel = validity.judges["panel"]
    assert panel.n_items == len(export.items)
    assert panel.sensitivity.value == 1.0 and panel.specificity.value < 1.0  # judge over-calls
    table = judge.agreement_table(results)
    assert table["judge"].iloc[0] == "panel" and int(table["items"].iloc[0]) == len(export.items)
    corrected = judge.corrected_table(results)
    assert set(corrected["target"]) == set(TARGETS)
    assert {"overall", "age=young", "age=old"} <= set(corrected["rate"])
    assert set(corrected["method"]) <= {"PPI++, cluster-t Wilson", "no interval"}
    # The humans see target-b's behaviour as absent throughout: its corrected rates say so.
    overall_b = validity.corrected.by_target["target-b"].overall
    assert overall_b.corrected_rate == validity.corrected.by_target["target-b"].overall.raw.rate
    differences = judge.corrected_differences_table(results)
    assert "target-a − target-b" in set(differences["difference"])
    assert "age: old − young" in set(differences["difference"])
    assert "labelled items" in judge.judge_note(results)
    assert "prediction-powered inference" in judge.judge_note(results)
    # The paper exports carry the same numbers, raw beside corrected.
    assert cli.main(["export", *args]) == 0
    tables = Path("reports/tiny/export/tables")
    rates = pd.read_csv(tables / "judge_corrected_rates.csv")
    overall = rates[(rates["target"] == "target-b") & (rates["scope"] == "overall")].iloc[0]
    assert overall["corrected_rate"] == pytest.approx(overall_b.corrected_rate)
    assert overall["raw_rate"] == pytest.approx(overall_b.raw.rate)
    assert overall["n_labelled"] == overall_b.n_labelled
    assert "prediction-powered" in (tables / "judge_corrected_rates.tex").read_text()
    gaps = pd.read_csv(tables / "judge_corrected_differences.csv")
    assert set(gaps["scope"]) == {"targets", "age"}

    # A stored file of which two labels no longer match (their transcripts changed since): the
    # stage still runs, uses the rest, and the report says which file, how many and why.
    stale = [
        {"item_key": i.item_key, "rater": "Lin", "batch": i.batch, "label": "absent",
         "transcript_sha256": "0" * 64 if n < 2 else i.transcript_sha256}
        for n, i in enumerate(export.items)
    ]
    Path("labels/tiny/lin.jsonl").write_text("".join(json.dumps(r) + "\n" for r in stale))
    capsys.readouterr()
    results = aggregate.run(project.params_path, "tiny")
    assert results.judge_validity.human.n_raters == 3
    ((aside,),) = [results.labels_set_aside]
    assert (aside.file, aside.n, aside.reason) == (
        "labels/tiny/lin.jsonl", 2, "the transcript has changed since it was labelled")
    assert "Warning: 2 stored labels were set aside" in judge.judge_note(results)
    assert "`labels/tiny/lin.jsonl`: 2 (the transcript has changed" in judge.judge_note(results)
    assert "2 labels of labels/tiny/lin.jsonl set aside" in capsys.readouterr().err


def test_fidelity_answers_flow_into_the_judge_validity_section(project, script):
    """With fidelity checks, the pages ask about the simulated user, and the imported answers
    measure the checks: every conversation labelled, each corrected break share is the raters'."""
    from validation.test_arm_stages import faithful_fidelity

    project.write_params(generation={"scenarios_per_metric": 3, "num_samples": 2},
                         fidelity={"check": True}, labels={"per_cell": 6, "batch_size": 50})
    script.responder = faithful_fidelity
    factory = script.factory()
    gen_metrics.run(project.params_path, "tiny", provider_factory=factory)
    gen_scenarios.run(project.params_path, "tiny", provider_factory=factory)
    for target in TARGETS:
        simulate.run(project.params_path, "tiny", target, provider_factory=factory)
        evaluate.run(project.params_path, "tiny", target, provider_factory=factory)
    results = aggregate.run(project.params_path, "tiny")
    assert "no human answers yet" in judge.fidelity_note(results)

    args = ["--params", str(project.params_path), "--benchmark", "tiny"]
    assert cli.main(["labels", "export", *args]) == 0
    export = read_artifact(Path("reports/tiny/labelling/items.json"), LabellingExport)
    assert export.items and all(i.fidelity is not None for i in export.items)
    # The rater sees a leak in every other conversation, nothing else.
    leaked = {i.conv_id: n % 2 == 0 for n, i in enumerate(export.items)}
    rows = [
        {"item_key": i.item_key, "rater": "Ada", "transcript_sha256": i.transcript_sha256,
         "batch": i.batch, "label": "absent",
         "fidelity": {k: "present" if k == "leak" and leaked[i.conv_id] else "absent"
                      for k in i.fidelity.kinds}}
        for i in export.items
    ]
    Path("ada.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert cli.main(["labels", "import", "ada.jsonl", *args]) == 0

    results = aggregate.run(project.params_path, "tiny")
    fidelity = results.judge_validity.fidelity
    assert fidelity.status == "ok" and set(fidelity.by_kind) == set(export.items[0].fidelity.kinds)
    leak = fidelity.by_kind["leak"]
    assert leak.checks.n_items == len(export.items)
    for target in TARGETS:
        mine = [leaked[i.conv_id] for i in export.items if i.target == target]
        share = leak.corrected[target]
        assert share.n_labelled == share.n_judged == len(mine)  # every conversation was drawn
        assert share.corrected_rate == pytest.approx(sum(mine) / len(mine))
    assert "against the raters" in judge.fidelity_note(results)
    table = judge.fidelity_agreement_table(results)
    assert "leak" in set(table["kind"]) and set(table["conversations"]) == {len(export.items)}
    shares = judge.fidelity_corrected_table(results)
    assert set(shares["target"]) == set(TARGETS)
    # The paper exports carry the corrected break shares.
    assert cli.main(["export", *args]) == 0
    exported = pd.read_csv(Path("reports/tiny/export/tables/fidelity_corrected.csv"))
    row = exported[(exported["key"] == "leak") & (exported["target"] == "target-a")].iloc[0]
    assert row["corrected_rate"] == pytest.approx(leak.corrected["target-a"].corrected_rate)
    assert row["n_labelled"] == leak.corrected["target-a"].n_labelled
