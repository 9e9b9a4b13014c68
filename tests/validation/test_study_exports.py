"""The studies' figures and tables in `export/`: numbers in CSV, captioned LaTeX that fits the
page at six targets, vector figures, all listed in the export index."""

from __future__ import annotations

import csv
import json
import re
import runpy
from pathlib import Path

import pytest
from arm_data import paired_arms

from latex_support import compile_tables, needs_latex, overfull_boxes
from pressurebench.io import read_artifact, write_artifact
from pressurebench.params import Statistics
from pressurebench.paths import Layout
from pressurebench.reports.export import export_benchmark, save_figure, save_table
from pressurebench.reports.export_studies import export_studies
from pressurebench.schemas import ScoresFile
from pressurebench.stats.results import StatisticsSettings
from pressurebench.stats.sweeps.synthetic import synthetic_scores
from pressurebench.validation.evaluator_bias import evaluator_arm
from pressurebench.validation.generator_bias import compare_generator_arm
from pressurebench.validation.studies import (
    EvaluatorBiasStudy,
    GeneratorBiasStudy,
    UserModelBiasStudy,
)
from pressurebench.validation.user_model_bias import compare_user_arm

STATS = Statistics(resamples=200, confidence_level=0.95, seed=2)
SETTINGS = StatisticsSettings(resamples=200, confidence_level=0.95, seed=2)
SIX = ["gpt-4o-2024-08-06", "claude-sonnet-4-5", "Llama-3.1-70B-Instruct",
       "qwen2.5-72b-instruct", "mistral-large-2411", "gemini-2.0-flash-001"]


def write_studies(layout: Layout, rates: dict[str, float], metrics: int = 2) -> None:
    main, arm = paired_arms(rates, rates, metrics=metrics, base_per_metric=8, seed=3)
    targets = sorted(rates)
    ids = sorted(main["scenario_id"].unique())
    inverted = main.assign(passed=(~main["passed"].astype(bool)).astype(object))
    judged = evaluator_arm(main, inverted, arm_name="evaluator/contrarian",
                           evaluator="contrarian", scenario_ids=ids, targets=targets,
                           statistics=STATS)
    user = compare_user_arm(main, arm, arm_name="user/other", user_model="other",
                            scenario_ids=ids, targets=targets, statistics=STATS)
    gen_main = synthetic_scores(target_rates=rates, metrics=metrics, base_per_metric=8,
                                samples=1, seed=5)
    gen_arm = synthetic_scores(target_rates=rates, metrics=metrics, base_per_metric=8,
                               samples=1, seed=6)
    generated = compare_generator_arm(
        gen_main, gen_arm, arm_name="generator/gen", generator="gen",
        families={"gen": "gpt", **{t: ("gpt" if i % 2 else "claude")
                                   for i, t in enumerate(targets)}},
        main_generator_family="claude", metrics=sorted(gen_main["metric_id"].unique()),
        metrics_handwritten=True, targets=targets, statistics=STATS)
    common = {"benchmark": layout.benchmark, "statistics": SETTINGS, "targets": targets}
    write_artifact(layout.study_file("evaluator_bias"),
                   EvaluatorBiasStudy(main_evaluators=["judge"], arms=[judged], **common))
    write_artifact(layout.study_file("user_model_bias"),
                   UserModelBiasStudy(main_user_model="user", arms=[user], **common))
    write_artifact(layout.study_file("generator_bias"),
                   GeneratorBiasStudy(main_generator="writer", arms=[generated], **common))


def rows(path: Path) -> list[dict]:
    return list(csv.DictReader(path.read_text().splitlines()))


def test_every_arm_gets_its_figures_and_numeric_tables(tmp_path):
    layout = Layout(tmp_path / "data", "tiny")
    write_studies(layout, {"gives": 0.5, "steady": 0.8})
    written = export_studies(layout, tmp_path / "export", save_figure, save_table)
    names = {Path(p).name for kind in written.values() for p in kind}
    for study, arm in (("evaluator_bias", "evaluator-contrarian"), ("user_model_bias", "user-other"),
                       ("generator_bias", "generator-gen")):
        for figure in ("rates", "ranks", "differences"):
            assert {f"{study}-{arm}-{figure}.svg", f"{study}-{arm}-{figure}.pdf"} <= names
        for table in ("rates", "differences", "rank_flips", "rank_correlation",
                      "pairwise_changes"):
            assert {f"{study}-{arm}-{table}.csv", f"{study}-{arm}-{table}.tex"} <= names
    assert "evaluator_bias-evaluator-contrarian-confusion.csv" in names
    assert "evaluator_bias-evaluator-contrarian-gaps.csv" in names
    assert "user_model_bias-user-other-gaps.csv" not in names
    assert "user_model_bias-user-other-confusion.csv" not in names
    assert "user_model_bias-user-other-agreement.csv" in names
    assert "generator_bias-generator-gen-self_preference.csv" in names
    assert "generator_bias-generator-gen-agreement.csv" not in names  # not paired by row

    tables = tmp_path / "export" / "tables"
    agreement = rows(tables / "evaluator_bias-evaluator-contrarian-agreement.csv")
    overall = {r["target"]: r for r in agreement if r["metric"] == "all"}
    assert float(overall["gives"]["share_agreeing"]) == 0.0
    assert float(overall["gives"]["scott_pi"]) == pytest.approx(-1.0)
    assert int(overall["gives"]["main_pass_arm_pass"]) == 0
    confusion = rows(tables / "evaluator_bias-evaluator-contrarian-confusion.csv")
    assert [(r["target"], r["main_verdict"]) for r in confusion] == [
        ("gives", "pass"), ("gives", "fail"), ("steady", "pass"), ("steady", "fail")]
    differences = rows(tables / "evaluator_bias-evaluator-contrarian-differences.csv")
    assert [(r["target"], r["metric"]) for r in differences] == [
        ("gives", "all"), ("steady", "all"), ("gives", "m01"), ("gives", "m02"),
        ("steady", "m01"), ("steady", "m02")]
    for r in differences:
        float(r["difference"])  # a number, not display text
        assert r["family"].startswith("every difference of this arm")
        assert r["p_value"] == "" or float(r["p_holm"]) >= float(r["p_value"])
    # The contrarian judge inverts every verdict: each target's rate becomes 1 − rate, so the
    # difference between the two targets changes sign, a change of −2 × the main difference.
    (pair,) = rows(tables / "evaluator_bias-evaluator-contrarian-pairwise_changes.csv")
    assert (pair["target_1"], pair["target_2"]) == ("gives", "steady")
    assert float(pair["change"]) == pytest.approx(-2 * float(pair["difference_main"]))
    assert float(pair["difference_arm"]) == pytest.approx(-float(pair["difference_main"]))
    assert pair["family"].startswith("every change of a difference between two targets")
    for study in ("user_model_bias-user-other", "generator_bias-generator-gen"):
        correlation = rows(tables / f"{study}-rank_correlation.csv")
        assert [r["statistic"] for r in correlation] == [
            "kendall_tau_b", "kendall_tau_b_noise_ceiling", "spearman_rho"]
        assert "at least 3 targets" in correlation[1]["reason"]  # two targets: no ceiling
    tex = (tables / "evaluator_bias-evaluator-contrarian-differences.tex").read_text()
    assert "\\caption{" in tex and "Holm's correction over the arm's family" in tex
    assert "\\begin{table}" in tex and "\\label{tab:tiny-evaluator-bias-" in tex


def test_the_export_index_lists_the_studies_files(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "reports"))
    from report_artifacts import results_of, score_frame, write_project_artifacts

    layout = write_project_artifacts(tmp_path)
    scores = [s for t in ("target-a", "target-b")
              for s in read_artifact(layout.scores_file(t), ScoresFile).rows]
    write_artifact(layout.results_file, results_of(score_frame(scores)))
    write_studies(layout, {"target-a": 0.5, "target-b": 0.7})
    export_benchmark(layout, tmp_path / "export")
    index = json.loads((tmp_path / "export" / "index.json").read_text())
    assert "tables/evaluator_bias-evaluator-contrarian-agreement.csv" in index["tables"]
    assert "figures/user_model_bias-user-other-differences.svg" in index["figures"]
    assert "tables/pass_rates.csv" in index["tables"]  # the main run's, as before




@pytest.mark.slow
@needs_latex
def test_six_targets_study_tables_compile_and_fit_the_text_width(tmp_path):
    layout = Layout(tmp_path / "data", "core_v2")
    write_studies(layout, dict(zip(SIX, (0.35, 0.45, 0.5, 0.55, 0.6, 0.7))), metrics=3)
    written = export_studies(layout, tmp_path / "export", save_figure, save_table)
    tex = sorted(Path(p) for p in written["tables"] if p.endswith(".tex"))
    build = tmp_path / "build"
    build.mkdir()
    log = compile_tables(build, {p.stem: p.read_text() for p in tex})
    overfull = overfull_boxes(log)
    assert not overfull, overfull


def test_the_documented_example_runs_and_prints_what_the_page_says(tmp_path, capsys):
    page = (Path(__file__).parents[2] / "docs" / "validation-agreement.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", page, re.DOTALL)
    (tmp_path / "example.py").write_text(code)
    runpy.run_path(str(tmp_path / "example.py"), run_name="__main__")
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:2]] == ["gives-in", "steady"]
    for line in lines[:2]:
        _, share, kappa, pi = line.split()
        assert float(share) == 0.0 and float(pi) == -1.0 and -1.0 <= float(kappa) < 0
    assert lines[2].startswith("every difference of this arm")
