"""A stage process starts cold, so it imports only what its stage uses: the stages that draw
no figure and compute no interval (gen_metrics, gen_scenarios, simulate, evaluate) import
neither matplotlib, seaborn nor SciPy's statistics, each about half a second of a start.

Each check imports, in a fresh interpreter, what the stage's notebook and its process import.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("matplotlib", "seaborn", "scipy.stats")
PROCESS = ("pressurebench.pipeline.notebook_run", "pressurebench.pipeline.notebook_engine",
           "pressurebench.reports.render", "pressurebench.pipeline.stage_failure",
           "pressurebench.reports.models_note", "pressurebench.pipeline.notebook_session",
           "pressurebench.reports.views", "pressurebench.io", "pressurebench.schemas", "papermill")
NOTEBOOK = {
    "gen_metrics": ("pressurebench.stages.gen_metrics",),
    "gen_scenarios": ("pressurebench.stages.gen_scenarios",),
    "simulate": ("pressurebench.stages.simulate",),
    "evaluate": ("pressurebench.stages.evaluate", "pressurebench.stats.score_frames"),
}


@pytest.mark.parametrize("stage", sorted(NOTEBOOK))
def test_a_stage_without_figures_or_intervals_imports_no_plotting_or_statistics(stage):
    modules = [*PROCESS, *NOTEBOOK[stage]]
    code = ("import importlib, json, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
