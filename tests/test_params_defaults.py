"""Every params key with a default works when a params file leaves it out.

DVC resolves dvc.yaml's `${...}` and `matrix:` from the params file itself and refuses a stage
whose declared param is absent, before any pressurebench code runs
(https://dvc.org/doc/user-guide/project-structure/dvcyaml-files#templating: "vars" values are
read from the params file; https://dvc.org/doc/command-reference/params: a stage's params must
be in the file). `pressurebench check` writes those keys' defaults; a key with no default is
one line naming it and what it holds.
"""

from __future__ import annotations

import shutil

import pytest
import yaml

from pressurebench.commands.cli import main
from pressurebench.commands.preflight import dvc_param_problems
from pressurebench.params import Params, load_params
from pressurebench.params_fill import dvc_read_keys, fill_defaults
from support import REPO

# Keys added to the params model after the first params files were written, each with a default.
LATER_KEYS = [
    ("roles", "fidelity"), ("generation", "fidelity_retries"), ("generation", "allow_early_end"),
    ("generation", "perfunctory"), ("evaluation", "per_turn"), ("validation", "evaluator_bias"),
    ("validation", "targets"), ("run", "truncated_replies"), ("fidelity",), ("labels",),
]


@pytest.fixture
def repo_files(tmp_path, monkeypatch):
    """dvc.yaml, the params and the benchmarks of the repository, in a scratch directory."""
    for rel in ("dvc.yaml", "params", "benchmarks"):
        (shutil.copytree if (REPO / rel).is_dir() else shutil.copy)(REPO / rel, tmp_path / rel)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_params_file_written_before_later_keys_existed_passes_check_and_dvc_parses_it(
    repo_files, capsys
):
    path = repo_files / "params" / "pipeline.yaml"
    text = path.read_text()
    data = yaml.safe_load(text)
    for key in LATER_KEYS:
        node = data
        for part in key[:-1]:
            node = node[part]
        del node[key[-1]]
    old = yaml.safe_dump(data, sort_keys=False)
    path.write_text("# the study's params, with its own comment\n" + old)
    expected = load_params(path)  # the params model reads it, defaults in place

    assert main(["check", "--offline"]) == 0
    captured = capsys.readouterr()
    assert "Could not find" not in captured.err and "missing from the file" not in captured.err
    written = [line for line in captured.out.splitlines() if line.startswith("wrote  ")]
    assert any("roles.fidelity: null" in line for line in written)
    assert any("validation.targets: " in line for line in written)
    filled = path.read_text()
    assert filled.startswith("# the study's params, with its own comment\n")
    assert "default, written by pressurebench" in filled
    got = load_params(path)
    assert got.model_dump(exclude={"validation"}) == expected.model_dump(exclude={"validation"})
    assert got.validation.targets == expected.targets  # None: every target, now spelled out
    assert got.roles.fidelity_judges == expected.roles.evaluators  # the evaluator, by default
    watched, problems, _ = dvc_param_problems("params/pipeline.yaml")
    assert watched > 20 and problems == []


def test_a_key_without_a_default_is_one_line_naming_it_and_its_meaning(repo_files, capsys):
    path = repo_files / "params" / "pipeline.yaml"
    data = yaml.safe_load(path.read_text())
    del data["roles"]["generator"]
    path.write_text(yaml.safe_dump(data))
    assert main(["check", "--offline"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("pressurebench: params/pipeline.yaml: roles.generator: Field required "
                   "(no default): writes the metrics (unless hand-written) and the scenarios")


def test_every_key_dvc_reads_has_a_default_or_is_required_by_the_params_model(tmp_path):
    """The params model and dvc.yaml agree: a file with only the required keys gets a value for
    every key dvc.yaml reads (`models.<id>` aside: every id used must be in `models`)."""
    interpolated, declared = dvc_read_keys(REPO / "dvc.yaml")
    assert "validation.targets" in interpolated and "roles.fidelity" in declared
    minimal = {
        "models": {"m": {"provider": "openai", "model": "x"}},
        "roles": {"generator": "m", "user": "m", "evaluator": "m"},
        "targets": ["m"], "benchmarks": ["b"],
    }
    params = Params.model_validate(minimal)
    required = {"models", "roles.generator", "roles.user", "roles.evaluator", "targets",
                "benchmarks"}
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(minimal))
    filled = fill_defaults(path, params, REPO / "dvc.yaml")
    assert set(filled) & required == set()
    written = yaml.safe_load(path.read_text())
    for key in dict.fromkeys(interpolated + declared):
        node = written
        for part in key.split("."):
            assert isinstance(node, dict) and part in node, key
            node = node[part]
        assert node is not None or key not in interpolated, key
    assert load_params(path).model_dump(exclude={"validation"}) == params.model_dump(
        exclude={"validation"})
