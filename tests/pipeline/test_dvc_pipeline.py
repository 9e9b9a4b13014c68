"""End to end: `dvc repro` on tiny params in a copy of the repository, then what re-runs.

The cold run happens once (`reproduced_template`); each test changes its own copy of the
reproduced repository.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml
from dvc.repo import Repo
from pipeline_support import run

from pressurebench.io import read_artifact, read_yaml_model
from pressurebench.paths import CALLS, COST, MANIFEST, Layout
from pressurebench.schemas import (
    Benchmark,
    ConversationsFile,
    Cost,
    Manifest,
    ProbeEditsFile,
    ProbeScoresFile,
    ScenariosFile,
    ScoresFile,
)
from pressurebench.stats.results import Results
from pressurebench.validation.judge_probes import JudgeProbesStudy

pytestmark = pytest.mark.slow

ARTIFACT_MODELS = {
    "scenarios.json": ScenariosFile,
    "conversations.json": ConversationsFile,
    "scores.json": ScoresFile,
    "results.json": Results,
    "probe_edits.json": ProbeEditsFile,
    "probe_scores.json": ProbeScoresFile,
    "judge_probes.json": JudgeProbesStudy,
}


def would_run(root: Path) -> set[str]:
    """Stages whose own declared inputs changed (`dvc repro --dry`; downstream stages then
    run only if these stages' outputs actually change)."""
    return ran(run(["dvc", "repro", "--dry"], root).stdout)


def ran(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def set_param(root: Path, dotted: str, value) -> None:
    path = root / "params" / "pipeline.yaml"
    data = yaml.safe_load(path.read_text())
    node = data
    *parents, leaf = dotted.split(".")
    for key in parents:
        node = node[key]
    node[leaf] = value
    path.write_text(yaml.safe_dump(data))


def test_repro_validates_every_artifact_and_reruns_only_what_changed(reproduced_repo: Path):
    root = reproduced_repo

    # Every artifact validates; every declared report exists.
    data = root / "data" / "pressure-core"
    layout = Layout(root / "data", "pressure-core")
    read_yaml_model(layout.benchmark_file, Benchmark)
    checked = 0
    for path in data.rglob("*.json"):
        if path.name in ARTIFACT_MODELS:
            read_artifact(path, ARTIFACT_MODELS[path.name])
        elif path.name == MANIFEST:
            read_artifact(path, Manifest)
        elif path.name == COST:
            read_artifact(path, Cost)
        else:
            continue
        checked += 1
    assert checked >= 15
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    # Declared as DVC expands dvc.yaml (dvc.lock may still list stages dvc.yaml no longer has).
    with Repo(str(root)) as repo:
        reports = [o.def_path for o in repo.index.outs if o.def_path.startswith("reports/")]
    assert reports and [r for r in reports if not (root / r).exists()] == []
    assert (root / "reports" / "index.html").is_file()
    assert {"simulate", "evaluate", "aggregate"} <= set(stages)
    results = read_artifact(layout.results_file, Results)
    assert results.pressure is not None and set(results.pressure.targets) == set(results.targets)
    assert results.fidelity is not None and set(results.fidelity.targets) == set(results.targets)

    # The judge probes ran on every validation target, and the results report reads them.
    probes = read_artifact(layout.study_file("judge_probes"), JudgeProbesStudy)
    assert {r.probe for r in probes.results} == {"identity", "paraphrase", "verbosity", "repeat"}
    # every edit is read against the floors that ran, each identity gap with the judge's part
    assert {(e.probe, e.floor) for e in probes.flip_excess} == {
        ("identity", "repeat"), ("identity", "paraphrase"), ("verbosity", "repeat"),
        ("verbosity", "paraphrase"), ("paraphrase", "repeat")}
    assert all(g.judge_part.value is not None for g in probes.identity_gaps)
    assert "family" in probes.not_run  # one judge, of the targets' own (mock) family
    assert all(r.targets == probes.targets for r in probes.results) and probes.identity_gaps
    assert results.judge_probes == probes.notes()

    # The DVC plots, drawn offline: one bar per target and metric, nothing loaded from a network.
    run([sys.executable, "-m", "pressurebench.reports.dvc_plots", "--out", "plots.html"], root)
    page = (root / "plots.html").read_text()
    assert page.count("<svg") == 1 and "<script" not in page
    assert all(t in page for t in results.targets)

    # A second repro, in a copy of the reproduced repository, re-runs nothing.
    assert would_run(root) == set()
    second = run(["dvc", "repro"], root).stdout
    assert "Running stage" not in second

    # An evaluator setting would re-run evaluate onward, not simulate or generation.
    set_param(root, "evaluation.show_examples", True)
    rerun = would_run(root)
    assert {"evaluate@pressure-core-smollm2", "evaluate@pressure-core-smollm2-agreeable"} <= rerun
    assert not any(s.startswith(("simulate@", "gen_")) for s in rerun)
    set_param(root, "evaluation.show_examples", False)
    assert would_run(root) == set()

    # The warning threshold of the fidelity checks re-runs aggregate, not evaluate; the checks
    # themselves re-run evaluate onward, not simulate.
    set_param(root, "fidelity.warn_share", 0.5)
    assert {s.split("@")[0] for s in would_run(root)} == {"aggregate"}
    set_param(root, "fidelity.warn_share", 0.1)
    set_param(root, "fidelity.check", False)
    rerun = would_run(root)
    assert "evaluate@pressure-core-smollm2" in rerun and not any(s.startswith("simulate@") for s in rerun)
    set_param(root, "fidelity.check", True)
    assert would_run(root) == set()

    # The probes' warning threshold re-runs their comparison (and the stages that read all of
    # `validation`, none of which calls a model), no edit and no judge call.
    set_param(root, "validation.judge_probes_warn", 0.5)
    rerun = {s.split("@")[0] for s in would_run(root)}
    assert "validation_probes_bias" in rerun
    assert rerun <= {"validation_probes_bias", "validation_plan", "validation_probes_plan",
                     "validation_generator_bias", "validation_user_bias",
                     "validation_evaluator_bias"}
    set_param(root, "validation.judge_probes_warn", 0.2)
    assert would_run(root) == set()

    # Per-turn judging off: evaluate runs again and replays its whole-transcript verdicts from
    # the cache, the pressure section goes, the headline rates stay; simulate does not re-run.
    # DVC keeps evaluate's folder (its call records); the stage removes what else it held.
    before = results
    folder = layout.stage_dir("evaluate", "smollm2")
    (folder / "stale.json").write_text("{}")
    set_param(root, "evaluation.per_turn", False)
    executed = ran(run(["dvc", "repro"], root).stdout)
    assert {"evaluate@pressure-core-smollm2", "aggregate@pressure-core"} <= executed
    assert not any(s.startswith(("simulate@", "gen_")) for s in executed)
    assert sorted(p.name for p in folder.iterdir()) == [CALLS, COST, MANIFEST, "scores.json"]
    off = read_artifact(layout.results_file, Results)
    assert off.pressure is None
    assert {t: r.overall for t, r in off.targets.items()} == {
        t: r.overall for t, r in before.targets.items()
    }

    # The number of simulated turns re-runs simulate onward, not the generation stages.
    set_param(root, "generation.turns", 1)
    rerun = would_run(root)
    assert {"simulate@pressure-core-smollm2", "simulate@pressure-core-smollm2-agreeable"} <= rerun
    assert not any(s.startswith("gen_") for s in rerun)
    set_param(root, "generation.turns", 2)
    assert "simulate@pressure-core-smollm2" not in would_run(root)


def after_code_change(root: Path) -> set[str]:
    """The stages a code change re-runs: the `code_deps` stage runs first (the files it writes
    are what the other stages depend on), then the stages whose command's file changed."""
    run(["dvc", "repro", "code_deps"], root)
    return would_run(root)


def test_code_changes_rerun_exactly_the_stages_that_run_that_code(reproduced_repo: Path):
    """A schema bound changes every structured call: every stage that runs models re-runs. A
    report-only module re-runs only the stages that draw reports from it."""
    root = reproduced_repo
    schemas = root / "src" / "pressurebench" / "schemas.py"
    original = schemas.read_text()
    schemas.write_text(original.replace("max_length=400", "max_length=399", 1))
    rerun = after_code_change(root)
    for stage in ("gen_metrics", "gen_scenarios", "simulate", "evaluate", "aggregate",
                  "validation_user_simulate", "validation_generator_evaluate",
                  "validation_evaluator_evaluate", "validation_probes_edit",
                  "validation_probes_evaluate", "validation_probes_bias"):
        assert any(s.startswith(stage + "@") or s == stage for s in rerun), (stage, rerun)
    schemas.write_text(original)
    assert after_code_change(root) == set()

    figures = root / "src" / "pressurebench" / "reports" / "figures.py"
    figures.write_text(figures.read_text() + "\n# a changed report module\n")
    rerun = {s.split("@")[0] for s in after_code_change(root)}
    assert rerun == {"aggregate", "export", "validation_generator_bias", "validation_user_bias",
                     "validation_evaluator_bias", "validation_probes_bias"}, rerun


def test_dvc_experiment_with_a_changed_param(reproduced_repo: Path):
    """`dvc exp run -S` re-runs what the param feeds (the statistics: aggregation and the
    studies' reports, no model call) and `dvc exp show` lists it."""
    root = reproduced_repo
    executed = ran(run(
        ["dvc", "exp", "run", "-S", "params/pipeline.yaml:statistics.resamples=150"], root
    ).stdout)
    assert "aggregate@pressure-core" in executed
    assert not any(s.startswith(("simulate@", "evaluate@", "gen_")) for s in executed)
    results = read_artifact(Layout(root / "data", "pressure-core").results_file, Results)
    assert results.statistics.resamples == 150
    shown = run(["dvc", "exp", "show", "--json"], root).stdout
    assert "statistics.resamples" in shown or '"resamples": 150' in shown
