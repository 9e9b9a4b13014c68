"""Params declared once: for every stage that runs through `pressurebench.stage_run.StageRun`, the
params DVC watches (its `params:` in dvc.yaml, expanded by DVC itself) are exactly the ones the
stage's code declares and records in its manifest (`arms.inputs.declared_params`)."""

from __future__ import annotations

import re
import shlex

import pytest
from dvc.dependency.param import ParamsDependency
from dvc.repo import Repo

from pressurebench.arms.inputs import declared_params, resolve
from pressurebench.params import load_params
from support import REPO

KINDS = {
    "notebooks/01_gen_metrics.ipynb": "gen_metrics",
    "notebooks/02_gen_scenarios.ipynb": "gen_scenarios",
    "notebooks/03_simulate.ipynb": "simulate",
    "notebooks/04_evaluate.ipynb": "evaluate",
    "notebooks/05_aggregate.ipynb": "aggregate",
    "notebooks/validation/generator_bias.ipynb": "generator_bias",
    "notebooks/validation/user_model_bias.ipynb": "user_model_bias",
    "notebooks/validation/evaluator_bias.ipynb": "evaluator_bias",
    "notebooks/validation/judge_probes.ipynb": "judge_probes",
}
# Stages that run a module of the package: the module, its step, and the stage it records.
MODULES = {("pressurebench.stages.judge_probes", "edit"): "probes_edit",
           ("pressurebench.stages.judge_probes", "evaluate"): "probes_evaluate"}


@pytest.fixture(scope="module")
def dvc_stages():
    with Repo(str(REPO)) as repo:
        return [(s.addressing, s.cmd, [p for d in s.deps if isinstance(d, ParamsDependency) for p in d.params])
                for s in repo.index.stages]


def test_every_model_stage_watches_exactly_the_params_its_code_declares(dvc_stages, monkeypatch):
    monkeypatch.chdir(REPO)
    params_path = "params/pipeline.yaml"
    params = load_params(params_path)
    checked = 0
    for address, cmd, watched in dvc_stages:
        words = shlex.split(cmd)
        notebook = next((w for w in words if w in KINDS), None)
        if notebook is None:
            continue
        given = dict(re.findall(r"-p (\S+) (\S+)", cmd))
        inputs = resolve(params_path, params, given["benchmark"], given.get("arm"))
        declared = declared_params(KINDS[notebook], inputs, given.get("target"))
        assert set(watched) == set(declared), address
        checked += 1
    assert checked >= 10


def test_the_judge_probes_stages_watch_exactly_the_params_their_code_declares(dvc_stages,
                                                                               monkeypatch):
    monkeypatch.chdir(REPO)
    params_path = "params/pipeline.yaml"
    params = load_params(params_path)
    checked = 0
    for address, cmd, watched in dvc_stages:
        words = shlex.split(cmd)
        kind = next((MODULES[key] for key in MODULES if key[0] in words and key[1] in words), None)
        if kind is None:
            continue
        given = dict(re.findall(r"--(\S+) (\S+)", cmd))
        inputs = resolve(params_path, params, given["benchmark"], None)
        assert set(watched) == set(declared_params(kind, inputs, given["target"])), address
        checked += 1
    assert checked >= 2
