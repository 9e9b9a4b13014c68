"""Stage 5: every target's scores in one results file, plus the numbers DVC shows.

`results.json` holds every rate, interval, comparison and agreement statistic
(`pressurebench.results`). Next to it, `metrics.json` is a short summary for
`dvc metrics show` (per target: overall pass rate, interval, n and errors by
cause, plus the generation errors upstream) and `plots/pass_rates.csv` the
per-metric rates for `dvc plots show`. Missing data is null in all three,
never 0; a target without a scores file stops the stage instead of silently
leaving the comparison.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ..arm_inputs import declared_params, resolve
from ..errors import ConfigError
from ..io import atomic_write_text, read_artifact, read_yaml_model, write_artifact
from ..params import load_params
from ..results import Results, build_results
from ..runtime import StageRun
from ..schemas import (
    Benchmark,
    ConversationsFile,
    GenerationError,
    ScenariosFile,
    Score,
    ScoresFile,
)
from ..stats.capitulation import GAVE_IN, ONSET_TIME
from ..stats.frame import CLUSTER_COLUMN, DEMOGRAPHIC_PREFIX, JUDGE_PREFIX, STRATUM_COLUMN
from ..stats.judge_validity import judge_validity
from ..stats.pressure import FLIPS, LANDMARK, ONSET_CENSORED, RECOVERED, TURN
from ..stats.received import received_results
from .evaluate import CONVERSATION_FAILED, ERROR_CATEGORIES, error_category

STAGE = "aggregate"
PLOT_COLUMNS = ["target", "metric_id", "rate", "ci_low", "ci_high", "n"]
OTHER_ERRORS = "other"


def scores_frame(scores: Iterable[Score]) -> pd.DataFrame:
    """One row per Score, in the columns the statistics read (`pressurebench.stats.frame`).

    Columns: target, metric_id, metric_type, base_id, scenario_id, sample, one
    `demo:<axis>` per demographic axis, status, passed (True/False/None), one
    `judge:<model_id>` per panel judge (its `present`, None where it gave no
    verdict) when more than one judge was used, then conv_id,
    scenario_metric_id, present and error for readers of single rows.

    When a conversation is judged against a metric other than its own
    (`evaluation.evaluate_all_metrics`) its row gets the keys
    `<base_id>@<metric_id>` and `<scenario_id>@<metric_id>`, so per-scenario
    breakdowns keep each metric's judgement apart, while `cluster_id` and
    `cluster_metric_id` keep it in the cluster it was drawn in: its own base
    scenario within its own metric. Every judgement of one conversation thus
    lies in one cluster, and intervals pooled over metrics count it once.
    """
    rows = list(scores)
    axes = list(dict.fromkeys(axis for s in rows for axis in s.demographic))
    judges = list(dict.fromkeys(j.model_id for s in rows for j in s.judges))
    panel = judges if len(judges) > 1 else []
    columns = (
        ["target", "metric_id", "metric_type", "base_id", "scenario_id", "sample"]
        + [DEMOGRAPHIC_PREFIX + axis for axis in axes]
        + ["status", "passed"]
        + [JUDGE_PREFIX + m for m in panel]
        + ["conv_id", "scenario_metric_id", "present", "error", CLUSTER_COLUMN, STRATUM_COLUMN]
    )
    records = []
    for s in rows:
        verdicts = {j.model_id: j.present for j in s.judges if j.status == "ok"}
        records.append(
            [s.target, s.metric_id, s.metric_type, *_units(s), s.sample]
            + [s.demographic.get(axis) for axis in axes]
            + [s.status, s.passed]
            + [verdicts.get(m) for m in panel]
            + [s.conv_id, s.scenario_metric_id, s.present, s.error]
            + [s.base_id, s.scenario_metric_id]
        )
    return pd.DataFrame.from_records(records, columns=columns)


def _units(s: Score) -> tuple[str, str]:
    """The row's resampling units (see `scores_frame`)."""
    unit = "" if s.metric_id == s.scenario_metric_id else f"@{s.metric_id}"
    return s.base_id + unit, s.scenario_id + unit


def onsets_frame(scores: Iterable[Score]) -> pd.DataFrame:
    """One row per score row with an onset: the conversation's right-censored time of giving in
    (`stats.pressure`), in the resampling units and demographic columns of `scores_frame`."""
    rows = [s for s in scores if s.onset is not None]
    axes = list(dict.fromkeys(axis for s in rows for axis in s.demographic))
    records = []
    for s in rows:
        base, scenario = _units(s)
        records.append({
            "target": s.target, "metric_id": s.metric_id, "metric_type": s.metric_type,
            "base_id": base, "scenario_id": scenario, "sample": s.sample,
            **{DEMOGRAPHIC_PREFIX + a: s.demographic.get(a) for a in axes},
            "conv_id": s.conv_id, CLUSTER_COLUMN: s.base_id, STRATUM_COLUMN: s.scenario_metric_id,
            ONSET_TIME: s.onset.observed_turns, GAVE_IN: s.onset.turn is not None,
            ONSET_CENSORED: s.onset.censored, FLIPS: s.onset.flips, RECOVERED: s.onset.recovered,
        })
    return pd.DataFrame.from_records(records, columns=[
        "target", "metric_id", "metric_type", "base_id", "scenario_id", "sample",
        *(DEMOGRAPHIC_PREFIX + a for a in axes), "conv_id", CLUSTER_COLUMN, STRATUM_COLUMN,
        ONSET_TIME, GAVE_IN, ONSET_CENSORED, FLIPS, RECOVERED,
    ])


def turns_frame(scores: Iterable[Score], landmarks: dict[str, list[int]]) -> pd.DataFrame:
    """One row per turn verdict, with `landmark`: which of its scenario's landmarks (1st, 2nd,
    ... by turn) was due at that turn, None where none was. `landmarks` maps scenario ids to
    their landmark turns."""
    records = []
    for s in scores:
        base, scenario = _units(s)
        due = sorted(set(landmarks.get(s.scenario_id, [])))
        for v in s.turn_verdicts:
            records.append({
                "target": s.target, "metric_id": s.metric_id, "metric_type": s.metric_type,
                "base_id": base, "scenario_id": scenario, "sample": s.sample,
                "status": v.status, "passed": v.passed, "conv_id": s.conv_id,
                CLUSTER_COLUMN: s.base_id, STRATUM_COLUMN: s.scenario_metric_id, TURN: v.turn,
                LANDMARK: due.index(v.turn) + 1 if v.turn in due else None,
            })
    return pd.DataFrame.from_records(records, columns=[
        "target", "metric_id", "metric_type", "base_id", "scenario_id", "sample",
        "status", "passed", "conv_id", CLUSTER_COLUMN, STRATUM_COLUMN, TURN, LANDMARK,
    ])


def error_counts_by_category(scores: Iterable[Score]) -> dict[str, int]:
    """Score error rows per cause, and how many distinct conversations failed before judging."""
    counts = {category: 0 for category in (*ERROR_CATEGORIES, OTHER_ERRORS)}
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
    return {"targets": targets, "generation_errors": generation_errors}


def pass_rates_table(results: Results) -> pd.DataFrame:
    """Per target and metric: the rate and its interval, for `dvc plots show`."""
    records = [
        [target, metric_id, est.rate, est.ci_low, est.ci_high, est.n]
        for target, tr in results.targets.items()
        for metric_id, est in tr.by_metric.items()
    ]
    return pd.DataFrame.from_records(records, columns=PLOT_COLUMNS)


def load_scores(path: Path, benchmark: str, target: str) -> ScoresFile:
    if not path.exists():
        raise ConfigError(
            path, f"no scores for target '{target}'; run the evaluate stage for it first"
        )
    scores = read_artifact(path, ScoresFile)
    if scores.benchmark != benchmark:
        raise ConfigError(
            path, f"holds benchmark '{scores.benchmark}', expected '{benchmark}'", "benchmark"
        )
    for field, found in [("target", scores.target)] + [
        (f"rows[{i}].target", s.target) for i, s in enumerate(scores.rows)
    ]:
        if found != target:
            raise ConfigError(path, f"holds target '{found}', expected '{target}'", field)
    return scores


def run(
    params_path: str | Path,
    benchmark: str,
    *,
    arm: str | None = None,
) -> Results:
    """Aggregate the scores of the arm's targets (the main arm by default) into results, metrics
    and plots.

    Reads each target's scores file and (for the pressure each received) its
    conversations file, and the arm's metrics and scenarios files (`arm_inputs`)
    for their generation errors and landmarks, and writes `results.json`,
    `metrics.json`, `plots/pass_rates.csv` and the stage manifest.
    """
    params = load_params(params_path)
    inputs = resolve(params_path, params, benchmark, arm)
    stage = StageRun(STAGE, params_path, benchmark, models_used=[], arm=inputs.name, params=params)
    layout = stage.layout
    targets = list(inputs.targets)
    score_files = {t: load_scores(layout.scores_file(t), benchmark, t) for t in targets}
    rows = [s for f in score_files.values() for s in f.rows]
    if not rows:
        raise ConfigError(
            layout.scores_file(targets[0]), f"no score rows for any of {', '.join(targets)}"
        )
    metrics_path = inputs.metrics_file
    scenarios_path = inputs.scenarios_file
    bench = read_yaml_model(metrics_path, Benchmark)
    scenarios = read_artifact(scenarios_path, ScenariosFile)
    generation_errors = generation_error_counts(bench.errors + scenarios.errors)
    per_turn = any(f.per_turn for f in score_files.values())
    landmarks = {sc.id: [lm.turn for lm in sc.landmarks] for sc in scenarios.rows}

    stats = params.statistics
    results = build_results(
        scores_frame(rows),
        resamples=stats.resamples,
        confidence_level=stats.confidence_level,
        seed=stats.seed,
        benchmark=benchmark,
        metric_ids=[m.id for m in bench.metrics],
        onsets=onsets_frame(rows) if per_turn else None,
        turns=turns_frame(rows, landmarks) if per_turn else None,
    )
    # Without every target's conversations (scores imported on their own) no comparison is made.
    if all(layout.conversations_file(t).exists() for t in targets):
        conversations = {
            t: read_artifact(layout.conversations_file(t), ConversationsFile).rows for t in targets
        }
        results.pressure_received = received_results(conversations, scenarios.rows)
    if inputs.name is None:  # labels are of the main arm's conversations
        from ..labels.joined import label_frames  # only this stage reads labels

        frames = label_frames(params, benchmark)
        results.judge_validity = judge_validity(
            scores_frame(rows), frames.labels, frames.judges,
            resamples=stats.resamples, seed=stats.seed, confidence_level=stats.confidence_level,
        )
    stage.replacing_outputs()
    write_artifact(layout.results_file, results)
    summary = metrics_summary(
        results, {t: f.rows for t, f in score_files.items()}, generation_errors
    )
    atomic_write_text(layout.root / "metrics.json", json.dumps(summary, indent=1) + "\n")
    atomic_write_text(
        layout.root / "plots" / "pass_rates.csv", pass_rates_table(results).to_csv(index=False)
    )

    n_error = sum(s.status == "error" for s in rows)
    stage.finish(
        stage.client(record=False),
        counts={
            "targets": len(targets),
            "scores": len(rows),
            "scores_error": n_error,
            **{f"{stage_name}_errors": n for stage_name, n in generation_errors.items()},
        },
        prompts=[],
        declared=declared_params(STAGE, inputs),
        provenance={
            "arm_targets": targets,
            "metrics": str(metrics_path),
            "scenarios": str(scenarios_path),
        },
        seeds={"bootstrap": stats.seed},
    )
    return results


def last_output(params_path: str | Path, benchmark: str, *, arm: str | None = None) -> Results:
    """The results the last run wrote (`notebook_session`)."""
    inputs = resolve(params_path, load_params(params_path), benchmark, arm)
    path = inputs.layout.results_file
    if not path.is_file():
        raise ConfigError(path, "not found: run `dvc repro` first, or set write_outputs = True")
    return read_artifact(path, Results)
