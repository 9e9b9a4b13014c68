"""Stage 5: every target's scores in one results file, plus the numbers DVC shows.

`results.json` holds every rate, interval, comparison and agreement statistic
(`pressurebench.stats.results`). Beside the stage's folder (DVC keeps no metrics file inside
an output folder), `metrics.json` is a short summary for
`dvc metrics show` (per target: overall pass rate, interval, n and errors by
cause, with fidelity checks the share of conversations where the simulated user
broke and where the target showed test awareness, plus the generation errors
upstream) and `plots/pass_rates.csv` the
per-metric rates for `dvc plots show`. Missing data is null in all three,
never 0; a target without a scores file stops the stage instead of silently
leaving the comparison.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..arms.inputs import ArmInputs, declared_params, resolve
from ..errors import ConfigError
from ..interop import imported_notes
from ..io import atomic_write_text, frame_csv, read_artifact, read_yaml_model, write_artifact
from ..params import Params, Statistics, load_params
from ..paths import Layout
from ..reports.export_tables import rates_frame
from ..schemas import (
    CONVERSATION_FAILED,
    ERROR_CATEGORIES,
    Benchmark,
    Conversation,
    ConversationsFile,
    GenerationError,
    ScenariosFile,
    Score,
    ScoresFile,
    error_category,
)
from ..stage_run import StageRun
from ..stats.fidelity import fidelity_results
from ..stats.fidelity_validity import fidelity_validity
from ..stats.interval_rules import planned_design
from ..stats.judge_validity import judge_validity
from ..stats.received import received_results
from ..stats.results import JudgeProbeNotes, LabelsSetAside, Results, build_results
from ..stats.score_frames import load_scores, onsets_frame, scores_frame, turns_frame

if TYPE_CHECKING:
    from ..labels.joined import LabelFrames

STAGE = "aggregate"
PLOT_COLUMNS = ["target", "metric_id", "metric", "rate", "ci_low", "ci_high", "n"]
OTHER_ERRORS = "other"


def error_counts_by_category(scores: Iterable[Score]) -> dict[str, int]:
    """Score error rows per cause, and how many distinct conversations failed before judging."""
    counts = dict.fromkeys((*ERROR_CATEGORIES, OTHER_ERRORS), 0)
    failed_conversations: set[str] = set()
    for s in scores:
        if s.status != "error":
            continue
        category = error_category(s.error or "")
        counts[category] += 1
        if category == CONVERSATION_FAILED:
            failed_conversations.add(s.conv_id)
    out = {f"errors_{category.replace(' ', '_')}": n for category, n in counts.items()}
    out["conversations_failed"] = len(failed_conversations)
    return out


def generation_error_counts(errors: Iterable[GenerationError]) -> dict[str, int]:
    counts = {"gen_metrics": 0, "gen_scenarios": 0}
    for e in errors:
        counts[e.stage] += 1
    return counts


def metrics_summary(
    results: Results, scores: dict[str, list[Score]], generation_errors: dict[str, int]
) -> dict:
    """The `dvc metrics show` summary: one flat block per target, null where there is no data."""
    targets = {}
    for target, rows in scores.items():
        found = results.targets.get(target)
        overall = found.overall if found else None
        targets[target] = {
            "pass_rate": overall.rate if overall else None,
            "ci_low": overall.ci_low if overall else None,
            "ci_high": overall.ci_high if overall else None,
            "n": found.errors.n_ok if found else 0,
            "n_error": found.errors.n_error if found else 0,
            "error_rate": found.errors.error_rate if found else None,
            **error_counts_by_category(rows),
        }
        checked = results.fidelity.targets.get(target) if results.fidelity else None
        if checked is not None:  # the simulated user's breaks, and the target's test awareness
            targets[target]["user_break_share"] = checked.any_break.rate
            targets[target]["test_aware_share"] = checked.test_awareness.rate
    return {"targets": targets, "generation_errors": generation_errors}


def pass_rates_table(results: Results, metric_names: dict[str, str]) -> pd.DataFrame:
    """Per target and metric: the rate and its interval, for `dvc plots show` (metrics labelled
    by id and name, as in the results report): the metric rows of `export_tables.rates_frame`."""
    rates = rates_frame(results)
    rates = rates[rates["scope"] == "metric"]
    named = [f"{m} {metric_names.get(m, '')}".strip() for m in rates["key"]]
    return rates.assign(metric_id=rates["key"], metric=named)[PLOT_COLUMNS].reset_index(drop=True)


@dataclass(frozen=True)
class AggregateInputs:
    """Everything the stage reads: every target's scores, the arm's metrics and scenarios,
    the conversations (when every target has them) and the human labels (main arm only)."""

    targets: list[str]
    score_files: dict[str, ScoresFile]
    bench: Benchmark
    scenarios: ScenariosFile
    conversations: dict[str, list[Conversation]] | None
    labels: LabelFrames | None

    @property
    def rows(self) -> list[Score]:
        return [s for f in self.score_files.values() for s in f.rows]

    @property
    def fidelity_checks(self) -> list:
        return [c for f in self.score_files.values() for c in f.fidelity or []]


def read_inputs(params: Params, inputs: ArmInputs, benchmark: str) -> AggregateInputs:
    """Read and validate what the stage aggregates; a target without score rows stops it."""
    layout = inputs.layout
    targets = list(inputs.targets)
    score_files = {t: load_scores(layout.scores_file(t), benchmark, t) for t in targets}
    if not any(f.rows for f in score_files.values()):
        raise ConfigError(
            layout.scores_file(targets[0]), f"no score rows for any of {', '.join(targets)}"
        )
    bench = read_yaml_model(inputs.metrics_file, Benchmark)
    scenarios = read_artifact(inputs.scenarios_file, ScenariosFile)
    # Without every target's conversations (scores imported on their own) no comparison is made.
    conversations = None
    if all(layout.conversations_file(t).exists() for t in targets):
        conversations = {
            t: read_artifact(layout.conversations_file(t), ConversationsFile).rows for t in targets
        }
    labels = None
    if inputs.reads_human_labels:
        from ..labels.joined import label_frames  # only this stage reads labels

        labels = label_frames(params, benchmark)
    return AggregateInputs(targets=targets, score_files=score_files, bench=bench,
                           scenarios=scenarios, conversations=conversations, labels=labels)


def compute_results(read: AggregateInputs, stats: Statistics, benchmark: str,
                    *, warn_share: float) -> Results:
    """Every statistic of the results file, from one score frame."""
    rows = read.rows
    frame = scores_frame(rows)
    per_turn = any(f.per_turn for f in read.score_files.values())
    fidelity_checked = any(f.fidelity is not None for f in read.score_files.values())
    landmarks = {sc.id: [lm.turn for lm in sc.landmarks] for sc in read.scenarios.rows}
    results = build_results(
        frame,
        resamples=stats.resamples,
        confidence_level=stats.confidence_level,
        seed=stats.seed,
        benchmark=benchmark,
        metric_ids=[m.id for m in read.bench.metrics],
        onsets=onsets_frame(rows) if per_turn else None,
        turns=turns_frame(rows, landmarks) if per_turn else None,
        fidelity_checked=fidelity_checked,
    )
    if read.conversations is not None:
        results.pressure_received = received_results(read.conversations, read.scenarios.rows)
    checks = read.fidelity_checks
    if fidelity_checked:
        results.fidelity = fidelity_results(
            frame, checks, warn_share=warn_share, confidence_level=stats.confidence_level,
        )
    if read.labels is not None:
        results.labels_set_aside = [
            LabelsSetAside(file=str(a.path), n=a.n, reason=a.reason) for a in read.labels.set_aside
        ]
        results.judge_validity = judge_validity(
            frame, read.labels.labels, read.labels.judges,
            resamples=stats.resamples, seed=stats.seed, confidence_level=stats.confidence_level,
        )
        if results.fidelity is not None:
            results.judge_validity.fidelity = fidelity_validity(
                checks, read.labels.fidelity,
                resamples=stats.resamples, seed=stats.seed, confidence_level=stats.confidence_level,
            )
    return results


def skipped_targets(params: Params, inputs: ArmInputs) -> dict[str, str]:
    """The targets the arm does not run, with the reason their scores file gives."""
    if not inputs.is_main:
        return {}
    return {t: read_artifact(inputs.layout.scores_file(t), ScoresFile).skipped or "skipped"
            for t in params.targets if t not in inputs.targets}


def judge_probe_notes(layout: Layout, inputs: ArmInputs) -> JudgeProbeNotes | None:
    """The judge probes' warnings and family notes for the main arm's headline; None without
    the study (it judges the main arm's conversations only)."""
    from ..validation.judge_probes import STAGE, JudgeProbesStudy

    path = layout.study_file(STAGE)
    if not inputs.is_main or not path.is_file():
        return None
    return read_artifact(path, JudgeProbesStudy).notes()


def write_outputs(layout: Layout, read: AggregateInputs, results: Results,
                  generation_errors: dict[str, int]) -> None:
    """`results.json`, the `dvc metrics show` summary and the `dvc plots show` table."""
    write_artifact(layout.results_file, results)
    summary = metrics_summary(
        results, {t: f.rows for t, f in read.score_files.items()}, generation_errors
    )
    atomic_write_text(layout.metrics_summary_file, json.dumps(summary, indent=1) + "\n")
    atomic_write_text(
        layout.pass_rates_plot_file,
        frame_csv(pass_rates_table(results, {m.id: m.name for m in read.bench.metrics})),
    )


def run(
    params_path: str | Path,
    benchmark: str,
    *,
    arm: str | None = None,
) -> Results:
    """Aggregate the scores of the arm's targets (the main arm by default) into results, metrics
    and plots.

    Reads each target's scores file and (for the pressure each received) its
    conversations file, and the arm's metrics and scenarios files (`arms.inputs`)
    for their generation errors and landmarks (`read_inputs`); computes the results
    (`compute_results`); writes `results.json`, `metrics.json`, `plots/pass_rates.csv`
    (`write_outputs`) and the stage manifest.
    """
    params = load_params(params_path)
    inputs = resolve(params_path, params, benchmark, arm)
    stage = StageRun(STAGE, params_path, benchmark, models_used=[], arm=inputs.name, params=params)
    read = read_inputs(params, inputs, benchmark)
    # Withheld intervals' advice reads the planned design (lost scenarios are named as such).
    with planned_design(params.generation.scenarios_per_metric):
        results = compute_results(read, params.statistics, benchmark,
                                  warn_share=params.fidelity.warn_share)
    results.imported = imported_notes(inputs.layout, read.targets)
    results.skipped_targets = skipped_targets(params, inputs)
    results.judge_probes = judge_probe_notes(stage.layout, inputs)
    for aside in results.labels_set_aside:
        print(f"pressurebench: warning: {aside.n} labels of {aside.file} set aside: "
              f"{aside.reason}", file=sys.stderr)
    generation_errors = generation_error_counts(read.bench.errors + read.scenarios.errors)
    stage.replacing_outputs()
    write_outputs(stage.layout, read, results, generation_errors)
    rows = read.rows
    stage.finish(
        None,
        counts={
            "targets": len(read.targets),
            "scores": len(rows),
            "scores_error": sum(s.status == "error" for s in rows),
            **{f"{stage_name}_errors": n for stage_name, n in generation_errors.items()},
        },
        prompts=[],
        declared=declared_params(STAGE, inputs),
        provenance={
            "arm_targets": read.targets,
            "metrics": str(inputs.metrics_file),
            "scenarios": str(inputs.scenarios_file),
        },
        seeds={"bootstrap": params.statistics.seed},
    )
    return results


def last_output(params_path: str | Path, benchmark: str, *, arm: str | None = None) -> Results:
    """The results the last run wrote (`notebook_session`)."""
    inputs = resolve(params_path, load_params(params_path), benchmark, arm)
    path = inputs.layout.results_file
    if not path.is_file():
        raise ConfigError(path, "not found: run `dvc repro` first, or set write_outputs = True")
    return read_artifact(path, Results)
