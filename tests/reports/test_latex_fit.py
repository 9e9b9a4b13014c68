"""Every exported LaTeX table fits the page, whatever shape the study has.

docs/exports.md promises that every table fits a one-column article. The default shapes are
not the only ones a study has: more turns lengthen the simulated user's table, more metrics
every table of rates, more targets widen the grids, and long model, metric and demographic
names do both. Each shape here is built from simulated scores with every part the tables read
(break shares per kind, metric and turn; judge-corrected rates; every kind of interval the
results list), and all its tables are compiled with pdflatex, as a paper would `\\input` them.
No box may be overfull and no float too large for its page.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_latex_tables import with_corrections

from latex_support import compile_tables, needs_latex, overfull_boxes, too_large_floats
from pressurebench.reports.export import paper_tables
from pressurebench.reports.tables import ERROR_COLUMNS
from pressurebench.stats.fidelity import FidelityResults, TargetFidelity
from pressurebench.stats.interval_coverage import (
    CURVE_KINDS,
    FIDELITY_KINDS,
    KINDS,
    interval_coverages,
)
from pressurebench.stats.results import build_results
from pressurebench.stats.sweeps.synthetic import synthetic_scores

pytestmark = pytest.mark.slow

SHORT = ["gpt-4o", "claude-4", "llama-70b", "qwen-72b", "mistral-l", "gemini-2", "grok-3",
         "phi-4", "gemma-27b"]
LONG = ["gpt-4o-2024-08-06", "claude-sonnet-4-5-20250929", "Llama-3.1-70B-Instruct-Turbo",
        "qwen2.5-72b-instruct", "mistral-large-2411", "gemini-2.0-flash-001",
        "deepseek-r1-distill-llama-70b", "phi-4-reasoning-plus", "gemma-3-27b-it"]
KINDS_OF_BREAK = ["out_of_character", "leak", "role_swap", "landmark_skipped", "no_pressure"]
# (targets, their names, metrics, turns): the default shapes, the one reported not to fit
# (4 turns, 2 targets) and the extremes a study reaches.
SHAPES = {
    "one target, two metrics, two turns": (1, SHORT, 2, 2),
    "two targets, four metrics, four turns": (2, SHORT, 4, 4),
    "six ten-character names, six metrics, eight turns": (6, [n.ljust(10, "x") for n in SHORT],
                                                            6, 8),
    "nine long names, twelve metrics, eight turns": (9, LONG, 12, 8),
    "two long names, twelve metrics, twelve turns": (2, LONG, 12, 12),
}
METRIC_NAMES = {f"m{i:02d}": f"Avoid validating the user's plan #{i} because they insist, again "
                             "and again, with 100% certainty & no evidence"
                for i in range(1, 13)}
AXES = {"age": ["teenager", "adult learner returning to study"]}


def study(targets: list[str], metrics: int, turns: int):
    """Results of a study of this shape, with break shares per kind, metric and turn taken from
    its own rates, judge-corrected rates, and every kind of interval a study lists."""
    rates = dict(zip(targets, np.linspace(0.35, 0.7, len(targets)), strict=False))
    scores = synthetic_scores(target_rates=rates, metrics=metrics, base_per_metric=6, samples=1,
                              axes=AXES, seed=4)
    results = build_results(scores, resamples=50, confidence_level=0.95, seed=1,
                            benchmark="homework_help-v2")
    fidelity = {}
    for target, tr in results.targets.items():
        shares = list(tr.by_metric.values())
        fidelity[target] = TargetFidelity(
            user_model="Llama-3.1-8B-Instruct-Turbo", any_break=tr.overall,
            by_kind={k: shares[i % len(shares)] for i, k in enumerate(KINDS_OF_BREAK)},
            by_metric=dict(tr.by_metric),
            by_turn={str(t): shares[t % len(shares)] for t in range(1, turns + 1)},
            test_awareness=tr.negative,
            test_awareness_by_turn={str(t): shares[t % len(shares)] for t in range(1, turns + 1)},
            n_checks=10, n_checks_error=0, n_checks_by_detector=0, n_ended_early=0)
    strata = np.repeat(np.arange(metrics), 6)
    return with_corrections(results.model_copy(update={
        "fidelity": FidelityResults(warn_share=0.1, targets=fidelity, sensitivity={},
                                    warnings=[]),
        "intervals": interval_coverages(strata, KINDS + CURVE_KINDS + FIDELITY_KINDS),
    }))


@needs_latex
def test_every_table_of_every_shape_fits_the_page(tmp_path):
    tables, continued = {}, set()
    for shape, (n, names, metrics, turns) in SHAPES.items():
        targets = names[:n]
        errors = pd.DataFrame([[t, stage, "judge answer unparseable", 2] for t in targets
                               for stage in ("simulate", "evaluate")], columns=ERROR_COLUMNS)
        for name, (_, tex) in paper_tables(study(targets, metrics, turns), METRIC_NAMES,
                                           errors).items():
            key = f"{shape.replace(' ', '-').replace(',', '')}-{name}"
            tables[key] = tex
            assert tex.count("\\caption{") == 1 and tex.count("\\label{") == 1, key
            if "(continued)" in tex:
                continued.add((shape, name))
    log = compile_tables(tmp_path, tables)
    assert not overfull_boxes(log), overfull_boxes(log)
    assert not too_large_floats(log), too_large_floats(log)
    # The long shapes did need more than one page, and the default ones did not.
    assert ("nine long names, twelve metrics, eight turns", "fidelity") in continued
    assert not {name for shape, name in continued if shape.startswith("one target")}
