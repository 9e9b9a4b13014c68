"""The study notebooks run under papermill on a tiny project whose arm data is synthetic,
write their comparison artifacts and render to HTML, as the DVC stages run them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from arm_data import score_rows

from pressurebench.arms.study_plan import write_plans
from pressurebench.io import read_artifact, write_artifact
from pressurebench.params import load_params
from pressurebench.paths import Layout
from pressurebench.pipeline.notebook_run import run_notebook
from pressurebench.schemas import Scenario, ScenariosFile, ScoresFile
from pressurebench.stats.sweeps.synthetic import synthetic_scores
from pressurebench.validation.studies import (
    EvaluatorBiasStudy,
    GeneratorBiasStudy,
    UserModelBiasStudy,
)
from support import REPO, TINY_BENCHMARK

RATES = {"target-a": 0.4, "target-b": 0.6}


def write_scores(layout: Layout, frame) -> None:
    for target, rows in frame.groupby("target"):
        write_artifact(
            layout.scores_file(target),
            ScoresFile(benchmark="tiny", target=target, rows=score_rows(rows)),
        )


def scenarios_of(frame) -> list[Scenario]:
    rows = frame.drop_duplicates("scenario_id")
    return [
        Scenario(
            id=r.scenario_id,
            metric_id=r.metric_id,
            base_id=r.base_id,
            persona=f"Persona of {r.scenario_id}",
            user_goal="a goal",
            latent_adversarial_goal="a latent goal",
        )
        for r in rows.itertuples()
    ]


@pytest.mark.slow
def test_study_notebooks_run_and_write_their_artifacts(project):
    project.write_params(
        validation={
            "generator_bias": ["gen"],
            "user_model_bias": ["user"],
            "evaluator_bias": ["gen"],
            "fraction": 0.5,
            "seed": 2,
        }
    )
    main = Layout(Path("data"), "tiny")
    frame = synthetic_scores(
        target_rates=RATES,
        metrics=2,
        base_per_metric=4,
        axes={"age": ["young", "old"]},
        samples=1,
        seed=1,
    )
    main.benchmark_file.parent.mkdir(parents=True)
    main.benchmark_file.write_text(yaml.safe_dump(TINY_BENCHMARK))
    write_artifact(main.scenarios_file, ScenariosFile(benchmark="tiny", rows=scenarios_of(frame)))
    write_scores(main, frame)
    plans = write_plans(load_params(project.params_path), "tiny")

    generator = Layout(Path("data"), "tiny", "generator/gen")
    generator.benchmark_file.parent.mkdir(parents=True)
    generator.benchmark_file.write_text(yaml.safe_dump(TINY_BENCHMARK))
    write_scores(
        generator,
        synthetic_scores(
            target_rates={**RATES, "target-b": 0.8},
            metrics=2,
            base_per_metric=2,
            axes={"age": ["young", "old"]},
            samples=1,
            seed=2,
        ),
    )
    replayed = frame[frame["scenario_id"].isin(plans["user"].scenario_ids)]
    flipped = np.random.default_rng(3).uniform(size=len(replayed)) < 0.2
    write_scores(
        Layout(Path("data"), "tiny", "user/user"),
        replayed.assign(
            passed=np.where(flipped, ~replayed["passed"].astype(bool), replayed["passed"]).astype(
                object
            )
        ),
    )

    rejudged = frame[frame["scenario_id"].isin(plans["evaluator"].scenario_ids)]
    stricter = np.random.default_rng(4).uniform(size=len(rejudged)) < 0.3
    write_scores(
        Layout(Path("data"), "tiny", "evaluator/gen"),
        rejudged.assign(passed=np.where(stricter, False, rejudged["passed"]).astype(object)),
    )

    studies = {}
    for name, model in (
        ("generator_bias", GeneratorBiasStudy),
        ("user_model_bias", UserModelBiasStudy),
        ("evaluator_bias", EvaluatorBiasStudy),
    ):
        html = run_notebook(
            REPO / "notebooks" / "validation" / f"{name}.ipynb",
            Path("reports") / main.stage_dir(name).relative_to("data"),
            {"params_path": str(project.params_path), "benchmark": "tiny"},
        )
        folder = Path("reports") / "tiny" / "validation" / name.split("_")[0] / "bias"
        assert html == folder / f"{name}.html" and html.exists()
        assert (folder / f"{name}.ipynb").exists()
        study = studies[name] = read_artifact(main.study_file(name), model)
        assert [a.targets for a in study.arms] == [sorted(RATES)]
        page = html.read_text()
        assert page.count("<img") >= 3 and study.arms[0].arm in page
        assert "How each comparison of two targets moved" in page and "noise ceiling" in page
        (pair,) = study.arms[0].pairwise_changes
        assert (pair.target_1, pair.target_2) == tuple(sorted(RATES))
    (user,) = studies["user_model_bias"].arms
    assert [p.n_paired for p in user.pairing] == [len(replayed) // 2] * 2
    (evaluator,) = studies["evaluator_bias"].arms
    assert [p.n_paired for p in evaluator.pairing] == [len(rejudged) // 2] * 2
    assert all(d.difference <= 0 for d in evaluator.comparison.differences)  # a stricter judge
    # each target's age gap under both judges, and the change between them, on the paired rows
    assert [(g.target, g.axis) for g in evaluator.gaps] == [(t, "age") for t in sorted(RATES)]
    assert all(g.main.n_a + g.main.n_b == len(rejudged) // 2 for g in evaluator.gaps)
    assert "Demographic gaps under each judge" in (
        Path("reports") / "tiny" / "validation" / "evaluator" / "bias" / "evaluator_bias.html"
    ).read_text()
