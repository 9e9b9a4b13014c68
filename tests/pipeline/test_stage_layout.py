"""The layout rule of dvc.yaml (its header, `pressurebench.paths` and docs/repository.md):

- a stage writes its data into one folder of its own, named after its step, at
  `data/<benchmark>/[validation/<study>/[arms/<model>/]][runs/<target>/]<step>/`, and its report
  into the same path under `reports/`; those two folders are its outs;
- its name is that folder's path below `data/<benchmark>/` without the matrix values and the
  `arms/` and `runs/` levels, joined with `_`;
- only a data folder is kept across runs (`persist`, for the call records), and only by a stage
  whose code records model calls;
- a stage writing no data writes one report named after it;
- a study's plan is one file, `plan.json`, in the folder the study's comparison depends on.

Checked on dvc.yaml as written (the templates) and as DVC expands it, against `paths.Layout`.
"""

from __future__ import annotations

import re
import shlex

import pytest
import yaml
from dvc.repo import Repo

from pressurebench.paths import ARMS, PLAN_FILE, RUNS, Layout
from pressurebench.pipeline.stage_failure import stage_of
from support import REPO

TEMPLATE_VALUE = re.compile(r"^\$\{[^}]+\}$")
# The stage that computes what code each stage runs: its out is named after it, outside data/.
CODE_STAGE = "code_deps"
# The stages whose code calls models (their kept folder holds calls.jsonl): notebooks by their
# stage, and the modules run as `bin/python -m <module> <step>`, with the code stage of each step.
MODEL_STAGES = {"gen_metrics", "gen_scenarios", "simulate", "evaluate"}
MODEL_MODULES = {"pressurebench.stages.judge_probes": {"edit": "probes_edit",
                                                       "evaluate": "probes_evaluate"}}


def stage_definitions() -> dict[str, dict]:
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    return {name: stage.get("do") or stage for name, stage in stages.items()}


def out_paths(stage: dict) -> list[tuple[str, bool]]:
    """Each out as (path, persisted)."""
    found = []
    for out in stage.get("outs", []):
        if isinstance(out, dict):
            ((path, flags),) = out.items()
            found.append((path, bool((flags or {}).get("persist"))))
        else:
            found.append((out, False))
    return found


def name_of_folder(folder: str) -> str:
    """The stage name the rule gives a data folder `data/<benchmark>/...`."""
    parts = folder.rstrip("/").split("/")
    assert parts[0] == "data" and TEMPLATE_VALUE.match(parts[1]), folder
    return "_".join(p for p in parts[2:] if not TEMPLATE_VALUE.match(p) and p not in (ARMS, RUNS))


def module_step(words: list[str]) -> tuple[str, str] | None:
    """`bin/python -m <module> <step> ...` of a module in MODEL_MODULES: (module, step)."""
    if words[:2] != ["bin/python", "-m"] or words[2] not in MODEL_MODULES:
        return None
    return words[2], words[3]


def test_the_name_of_a_folder_follows_from_its_path():
    assert name_of_folder("data/${item.benchmark}/runs/${item.target}/simulate") == "simulate"
    assert name_of_folder(
        "data/${item.benchmark}/validation/user/arms/${item.user}/runs/${item.target}/evaluate"
    ) == "validation_user_evaluate"
    assert name_of_folder("data/${item}/validation/generator/bias") == "validation_generator_bias"
    assert name_of_folder(
        "data/${item.benchmark}/validation/probes/runs/${item.target}/edit"
    ) == "validation_probes_edit"


@pytest.mark.parametrize("name", sorted(stage_definitions()))
def test_each_stage_writes_one_data_folder_named_as_the_stage_and_its_report_beside(name):
    stage = stage_definitions()[name]
    outs = out_paths(stage)
    data = [path for path, _ in outs if path.startswith("data/")]
    reports = [path for path, _ in outs if path.startswith("reports/")]
    assert len(data) + len(reports) == len(outs) or name == CODE_STAGE, outs
    if name == CODE_STAGE:
        assert outs == [(CODE_STAGE, False)]
        return
    if not data:
        (report,) = reports  # a stage without data: one report, named after the stage
        assert report.rstrip("/").split("/")[-1].removesuffix(".html") == name
        return
    (folder,) = data
    if folder.endswith("/" + PLAN_FILE):  # a study's plan: a file in the study's steps folder
        assert name_of_folder(folder.removesuffix(".json")) == name and reports == []
        assert folder.split("/")[-2] in (ARMS, RUNS)
        return
    assert name_of_folder(folder) == name
    assert reports in ([], ["reports/" + folder.removeprefix("data/")]), reports
    words = shlex.split(" ".join(stage["cmd"].split()))
    notebook = next((w for w in words if w.endswith(".ipynb")), None)
    if notebook is not None:
        # notebook_run's second argument is the report folder.
        assert words[words.index(notebook) + 1] == reports[0]
    persisted = [path for path, persist in outs if persist]
    records_calls = (stage_of(notebook) in MODEL_STAGES if notebook is not None
                     else module_step(words) is not None)
    assert persisted == ([folder] if records_calls else [])


def test_dvc_and_the_stage_code_agree_on_every_folder():
    """Expanded by DVC, each notebook stage's data folder, and each model-calling module
    step's, is the one `paths.Layout` gives the stage's code for its benchmark, arm and target:
    where the stage writes is what DVC keeps."""
    checked = modules = 0
    with Repo(str(REPO)) as repo:
        for stage in repo.index.stages:
            words = shlex.split(stage.cmd) if isinstance(stage.cmd, str) else []
            notebook = next((w for w in words if w.endswith(".ipynb")), None)
            step = module_step(words)
            if notebook is not None:
                given = dict(re.findall(r"-p (\S+) (\S+)", stage.cmd))
                code_stage = stage_of(notebook)
            elif step is not None:
                given = dict(re.findall(r"--(benchmark|target) (\S+)", stage.cmd))
                code_stage = MODEL_MODULES[step[0]][step[1]]
                modules += 1
            else:
                continue
            layout = Layout("data", given["benchmark"], given.get("arm"))
            folder = layout.stage_dir(code_stage, given.get("target"))
            data = [o.def_path for o in stage.outs if not (o.metric or o.plot)
                    and o.def_path.startswith("data/")]
            assert data == [folder.as_posix()], stage.addressing
            # Metrics and plots, which DVC keeps in no output folder, lie beside it.
            beside = {o.def_path for o in stage.outs if o.metric or o.plot}
            assert beside <= {layout.metrics_summary_file.as_posix(),
                              layout.pass_rates_plot_file.as_posix()}, stage.addressing
            checked += 1
    assert checked >= 10 and modules >= 2
