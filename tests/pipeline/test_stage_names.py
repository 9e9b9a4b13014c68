"""One naming rule for the stages of dvc.yaml: a stage that runs a pipeline notebook is named
after the notebook's stage (`notebooks/03_simulate.ipynb`: `simulate`), and when it runs it on a
validation arm (`-p arm <study>/<model>`), `validation_<study>_<stage>`."""

from __future__ import annotations

import re

import yaml

from support import REPO

NOTEBOOK = re.compile(r"notebooks/\d\d_(\w+)\.ipynb")
ARM = re.compile(r"-p arm (\w+)/")


def test_each_notebook_stage_is_named_after_its_notebook_and_arm():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    named = {}
    for name, stage in stages.items():
        cmd = " ".join((stage.get("do") or stage)["cmd"].split())
        notebook = NOTEBOOK.search(cmd)
        if notebook is None:
            continue
        arm = ARM.search(cmd)
        named[name] = f"validation_{arm.group(1)}_{notebook.group(1)}" if arm else notebook.group(1)
    assert named, "no notebook stage found"
    assert {name: rule for name, rule in named.items() if name != rule} == {}
