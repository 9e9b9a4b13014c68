"""Every dependency of every stage is written by a stage or held by a fresh clone, in every
configuration the params allow.

DVC refuses to run a stage whose dependency does not exist when its turn comes. A dependency
is safe when a stage of the same pipeline writes it (the path is one of its outputs or lies
inside one), when it is a folder that holds such an output (DVC then orders the stage after
the writer), or when git tracks it. Folders under `data/` are not counted as tracked: a
researcher's own benchmark has nothing there in git.

Checked on dvc.yaml as DVC expands it against params a researcher could write: a new
benchmark, alone or beside a second one, with each validation study and the judge probes on
or off, with targets imported into one benchmark only, and with every target imported.
"""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path, PurePosixPath

import pytest
import yaml
from dvc.dependency.param import ParamsDependency
from dvc.repo import Repo
from pipeline_support import mock_params

from support import REPO

NEW = "homework-help"
SECOND = "negotiation-pressure"
STUDIES = ("generator_bias", "user_model_bias", "evaluator_bias")
PROBES = ["identity", "family", "repeat"]
IMPORTED_SHA = "0" * 64


def fresh_clone_files() -> set[str]:
    """What a clone of the repository holds (the working tree's files git would commit), but
    for anything under data/, plus the researcher's own benchmark folders."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                            cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    files = {f for f in listed if f and not f.startswith("data/")}
    return files | {f"benchmarks/{b}/benchmark.yaml" for b in (NEW, SECOND)}


def imported(*benchmarks: str) -> dict:
    """A target whose conversations `pressurebench import` declared for `benchmarks`."""
    return {"provider": "imported", "model": "ext",
            "imported": {b: {"sources": ["chats.jsonl"], "conversations": 2,
                             "sha256": IMPORTED_SHA} for b in benchmarks}}


def params_for(benchmarks: list[str], studies: tuple[bool, bool, bool], probes: bool,
               imports: tuple[str, ...] = (), all_imported: bool = False) -> dict:
    """Complete params (every key DVC reads written, as `pressurebench use` writes them)."""
    params = mock_params("http://127.0.0.1:9/v1")
    params["benchmarks"] = benchmarks
    for key, on in zip(STUDIES, studies, strict=True):
        params["validation"][key] = ["smollm2-hot"] if on else []
    params["validation"]["judge_probes"] = PROBES if probes else []
    if imports:
        params["models"]["ext"] = imported(*imports)
        params["targets"] = [*params["targets"], "ext"]
    if all_imported:
        params["models"] = {k: v for k, v in params["models"].items() if k == "smollm2-hot"}
        params["models"].update(ext=imported(*benchmarks), smollm2=params["models"]["smollm2-hot"])
        params["targets"] = ["ext"]
        params["roles"] = {"generator": "smollm2", "user": "smollm2", "evaluator": "smollm2",
                           "fidelity": "smollm2"}
        params["models"]["smollm2-hot"] = {**params["models"]["smollm2-hot"], "temperature": 0.3}
    if all_imported or imports:
        params["validation"]["targets"] = [t for t in params["targets"] if t != "ext"]
    return params


CONFIGURATIONS = [
    pytest.param([NEW] if n == 1 else [NEW, SECOND], studies, probes,
                 id=f"{n}bench-" + "-".join(f"{k.split('_')[0]}{'On' if on else 'Off'}"
                                           for k, on in zip(STUDIES, studies, strict=True))
                 + f"-probes{'On' if probes else 'Off'}")
    for n in (1, 2)
    for studies in itertools.product((False, True), repeat=3)
    for probes in (False, True)
]


def unproduced_dependencies(root: Path, params: dict) -> list[str]:
    """Each dependency (stage: path) that no stage writes and a fresh clone lacks."""
    (root / ".dvc").mkdir(parents=True)
    # No git repository is needed to expand the stages.
    (root / ".dvc" / "config").write_text("[core]\n    no_scm = true\n")
    (root / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text())
    (root / "params").mkdir()
    (root / "params" / "pipeline.yaml").write_text(yaml.safe_dump(params))
    present = fresh_clone_files()
    with Repo(str(root)) as repo:
        stages = list(repo.index.stages)
    outs = [PurePosixPath(o.def_path) for s in stages for o in s.outs]
    missing = []
    for stage in stages:
        for dep in stage.deps:
            if isinstance(dep, ParamsDependency):
                continue
            path = PurePosixPath(dep.def_path)
            written = any(path == o or o in path.parents or path in o.parents for o in outs)
            tracked = str(path) in present or any(f.startswith(f"{path}/") for f in present)
            if not (written or tracked):
                missing.append(f"{stage.addressing}: {path}")
    assert stages, "DVC expanded no stage"
    return missing


@pytest.mark.parametrize(("benchmarks", "studies", "probes"), CONFIGURATIONS)
def test_every_dependency_is_written_by_a_stage_or_tracked(tmp_path, benchmarks, studies, probes):
    assert unproduced_dependencies(tmp_path, params_for(benchmarks, studies, probes)) == []


@pytest.mark.parametrize("studies", [(False, False, False), (True, True, True)],
                         ids=["studiesOff", "studiesOn"])
def test_a_target_imported_into_one_of_two_benchmarks(tmp_path, studies):
    params = params_for([NEW, SECOND], studies, True, imports=(SECOND,))
    assert unproduced_dependencies(tmp_path, params) == []


@pytest.mark.parametrize("studies", [(False, False, False), (True, True, True)],
                         ids=["studiesOff", "studiesOn"])
def test_every_target_imported(tmp_path, studies):
    """No target is simulated, so the studies and probes have no target to run on: no arm
    simulates or judges, yet every comparison still has its folder."""
    params = params_for([NEW], studies, True, all_imported=True)
    assert params["validation"]["targets"] == []
    assert unproduced_dependencies(tmp_path, params) == []
