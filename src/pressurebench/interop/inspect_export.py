"""`pressurebench export inspect`: a finished run as Inspect eval logs.

Inspect's log viewer (`inspect view`), its data frames (`inspect_ai.analysis`) and the
transcript tools built on its logs read a run only in Inspect's format, so each arm and target
becomes one `.eval` log, written through inspect_ai's own log API (`write_eval_log`), which
validates every field as Inspect reads it back:

- one sample per conversation: `id` is the scenario id and `epoch` the sample number plus one
  (Inspect's epochs are what pressurebench calls samples: the same scenario played again);
  its messages are the target's system prompt and every turn; its metadata the lineage
  (conversation id, base scenario, metric, demographic variant, sample), the scenario's
  persona, goals and landmarks, the fidelity findings and the turns whose reply was cut off;
- one score per judged metric, named by the metric id: `C` when the target passed, `I` when
  it failed (Inspect's correct and incorrect), the behaviour present or absent as the answer,
  the judge's rationale as the explanation, and every judge's verdict and the per-turn
  verdicts in its metadata. A score row without a verdict (the judges failed, or the
  conversation did) is an unscored score (NaN, which Inspect's metrics skip) with the error
  as its reason: it leaves the denominator, as in the run's own rates;
- a conversation that failed in simulation is a sample with `error` set to its reason;
- the eval's model is the target's (`provider/model`), and its results hold the run's pass
  rates with their intervals, or the reason an interval or a rate is withheld: `overall`
  first (the headline metric the viewer lists), then one per metric.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..io import atomic_write_bytes, read_artifact
from ..params import Params
from ..paths import inspect_log_file
from ..schemas import Conversation, ConversationFidelity, Manifest, Metric, Score
from ..stats.estimates import RateEstimate
from .extras import require_extra
from .finished_run import MAIN, ArmRun, TargetRun, arm_names, read_arm

SCORER = "pressurebench_judge"
OVERALL = "overall"  # the results' score of every judged metric together
PASSED, FAILED = "C", "I"


@dataclass(frozen=True)
class WrittenLog:
    path: Path
    arm: str
    target: str
    samples: int
    errors: int


def export_inspect(params_path: str | Path, params: Params, benchmark: str, arm: str | None,
                   out_dir: str | Path) -> tuple[list[WrittenLog], list[str]]:
    """One eval log per arm and target in `out_dir`, at the arm's and target's place in the
    layout (`paths.inspect_log_file`: the main arm's `runs/<target>.eval`, a validation arm's
    `validation/<study>/arms/<model>/runs/<target>.eval`); what was written, and the arms and
    targets skipped with their reasons."""
    require_extra("inspect", "inspect_ai")
    written, skipped = [], []
    for name in arm_names(params, arm):
        run = read_arm(params_path, params, benchmark, name)
        skipped += [f"{name} {reason}" for reason in run.skipped]
        for target in run.targets:
            path = inspect_log_file(out_dir, None if name == MAIN else name, target.target)
            log = eval_log(params, benchmark, run, target)
            write_log(log, path)
            written.append(WrittenLog(path, name, target.target, len(log.samples or []),
                                      sum(s.error is not None for s in log.samples or [])))
    return written, skipped


def write_log(log, path: Path) -> None:
    """`write_eval_log` into a scratch folder, then the bytes into place atomically."""
    from inspect_ai.log import write_eval_log

    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch) / path.name
        write_eval_log(log, str(tmp))
        atomic_write_bytes(path, tmp.read_bytes())


def model_name(params: Params, model_id: str) -> str:
    """Inspect names a model `provider/model`."""
    spec = params.models.get(model_id)
    return f"{spec.provider}/{spec.model}" if spec else model_id


def eval_log(params: Params, benchmark: str, run: ArmRun, target: TargetRun):
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, EvalStats

    model = model_name(params, target.target)
    metrics = {m.id: m for m in run.benchmark.metrics}
    samples = [sample(conv, target, run, metrics, model) for conv in target.conversations]
    evaluate = _manifest(run.inputs.layout.manifest_file("evaluate", target.target))
    simulate = _manifest(run.inputs.conversations_layout.manifest_file("simulate", target.target))
    created = (evaluate.finished_at if evaluate else None) or "1970-01-01T00:00:00+00:00"
    ident = _ident(benchmark, run.name, target.target)
    spec = EvalSpec(
        eval_id=ident, run_id=ident, task_id=ident, created=created,
        task=f"pressurebench/{benchmark}",
        task_display_name=f"{run.benchmark.name} ({run.name} arm)",
        task_description=run.benchmark.description,
        dataset=EvalDataset(name=benchmark, location=str(run.inputs.scenarios_file),
                            samples=len(samples)),
        model=model,
        config=EvalConfig(epochs=params.generation.num_samples),
        packages={"pressurebench": __version__, "inspect_ai": _inspect_version()},
        metadata={
            "benchmark": benchmark, "arm": run.name, "target": target.target,
            "generator": run.inputs.generator, "user_model": run.inputs.user,
            "evaluators": list(run.inputs.evaluators),
            "user_model_name": model_name(params, run.inputs.user),
            "evaluator_names": [model_name(params, e) for e in run.inputs.evaluators],
            "per_turn": target.per_turn, "fidelity_checked": bool(target.fidelity),
            "conversations_file": str(target.conversations_file),
            "scores_file": str(target.scores_file),
        },
    )
    stats = EvalStats(
        started_at=(simulate.started_at if simulate else None) or "",
        completed_at=(evaluate.finished_at if evaluate else None) or "",
    )
    return EvalLog(status="success", eval=spec, samples=samples, stats=stats,
                   results=results(params, run, target, samples))


def sample(conv: Conversation, target: TargetRun, run: ArmRun, metrics: dict[str, Metric],
           model: str):
    from inspect_ai.log import EvalError, EvalSample
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageUser,
        ModelOutput,
    )

    messages: list[Any] = []
    if conv.system_prompt:
        messages.append(ChatMessageSystem(content=conv.system_prompt))
    cut_off, reply = [], 0
    for m in conv.transcript:
        if m.role == "assistant":
            reply += 1
            if m.truncated:
                cut_off.append(reply)
            messages.append(ChatMessageAssistant(
                content=m.content, model=model, source="generate",
                metadata={"truncated": True} if m.truncated else None))
        elif m.role == "user":
            messages.append(ChatMessageUser(content=m.content))
        else:
            messages.append(ChatMessageSystem(content=m.content))
    first_user = next((i for i, m in enumerate(messages) if m.role == "user"), len(messages) - 1)
    last = next((m for m in reversed(conv.transcript) if m.role == "assistant"), None)
    output = (ModelOutput.from_content(model, last.content,
                                      stop_reason="max_tokens" if last.truncated else "stop")
              if last else ModelOutput(model=model))
    scenario = run.scenarios.get(conv.scenario_id)
    metric = metrics.get(conv.metric_id)
    scores = {s.metric_id: score(s) for s in target.scores_of(conv.conv_id)}
    return EvalSample(
        id=conv.scenario_id, epoch=conv.sample + 1,
        input=messages[: first_user + 1] or conv.scenario_id,
        target=_target_text(metric) if metric else conv.metric_id,
        messages=messages, output=output, scores=scores or None,
        metadata={
            "conv_id": conv.conv_id, "scenario_id": conv.scenario_id, "base_id": conv.base_id,
            "metric_id": conv.metric_id, "metric_name": metric.name if metric else None,
            "metric_type": metric.type if metric else None,
            "demographic": dict(conv.demographic), "sample": conv.sample,
            "target": conv.target, "user_model": conv.user_model,
            "persona": scenario.persona if scenario else None,
            "user_goal": scenario.user_goal if scenario else None,
            "latent_adversarial_goal": scenario.latent_adversarial_goal if scenario else None,
            "landmarks": [lm.model_dump() for lm in scenario.landmarks] if scenario else None,
            "status": conv.status, "ended_by": conv.ended_by, "turns": conv.turns,
            "user_redraws": conv.user_redraws, "model_versions": dict(conv.model_versions),
            "cut_off_replies": cut_off,
            "fidelity": _fidelity(target.fidelity.get(conv.conv_id)),
            "judged": bool(scores),
        },
        error=(EvalError(message=conv.error or "conversation failed", traceback="",
                         traceback_ansi="") if conv.status == "error" else None),
    )


def score(row: Score):
    """A score row as an Inspect score: C or I, or unscored (NaN) with the error as reason."""
    from inspect_ai.scorer import Score as InspectScore

    metadata = {
        "metric_id": row.metric_id, "metric_type": row.metric_type,
        "scenario_metric_id": row.scenario_metric_id, "present": row.present,
        "passed": row.passed, "status": row.status, "error": row.error,
        "judges": [j.model_dump() for j in row.judges],
        "turn_verdicts": [t.model_dump() for t in row.turn_verdicts],
        "onset": row.onset.model_dump() if row.onset else None,
    }
    if row.status != "ok" or row.passed is None:
        return InspectScore.unscored(reason=row.error, explanation=row.error, metadata=metadata)
    return InspectScore(value=PASSED if row.passed else FAILED,
                        answer="present" if row.present else "absent",
                        explanation=row.justification, metadata=metadata)


def results(params: Params, run: ArmRun, target: TargetRun, samples: list):
    """The run's pass rates: overall first (the headline the viewer lists), then one EvalScore
    per metric, named as the samples' scores; the overall rate is in the metadata too."""
    from inspect_ai.log import EvalResults, EvalScore, HeadlineMetric

    rates = target.rates
    level = params.statistics.confidence_level
    scores = [EvalScore(
        name=OVERALL, scorer=SCORER,
        scored_samples=sum(s.status == "ok" for s in target.scores),
        unscored_samples=sum(s.status != "ok" for s in target.scores),
        metrics=_metrics(rates.overall),
        metadata=_estimate_metadata(rates.overall, level, rates.withheld),
    )]
    for metric in run.benchmark.metrics:
        rows = [s for s in target.scores if s.metric_id == metric.id]
        if not rows:
            continue
        estimate = rates.by_metric.get(metric.id)
        withheld = rates.withheld or (None if estimate else "the run reports no rate per metric "
                                      f"for the {run.name} arm (only its overall rate)")
        scores.append(EvalScore(
            name=metric.id, scorer=SCORER,
            scored_samples=sum(s.status == "ok" for s in rows),
            unscored_samples=sum(s.status != "ok" for s in rows),
            metrics=_metrics(estimate),
            metadata={"metric_name": metric.name, "metric_type": metric.type,
                      **_estimate_metadata(estimate, level, withheld)},
        ))
    headline = HeadlineMetric(scorer=SCORER, score=OVERALL, metric="pass_rate")
    return EvalResults(
        headline=headline if scores[0].metrics else None,
        total_samples=len(samples),
        completed_samples=sum(s.error is None for s in samples),
        scores=scores,
        metadata={
            "overall": _estimate_metadata(rates.overall, level, rates.withheld),
            "rates_source": rates.source,
            "passed_means": "C: the target passed the metric (a positive metric's behaviour "
                            "present, a negative metric's absent); I: it failed; unscored: no "
                            "verdict (left out of the rates)",
        },
    )


def _metrics(estimate: RateEstimate | None) -> dict:
    from inspect_ai.log import EvalMetric

    if estimate is None or estimate.rate is None:
        return {}
    values = {"pass_rate": estimate.rate, "ci_low": estimate.ci_low, "ci_high": estimate.ci_high}
    return {k: EvalMetric(name=k, value=v) for k, v in values.items() if v is not None}


def _estimate_metadata(estimate: RateEstimate | None, level: float,
                       withheld: str | None) -> dict:
    if estimate is None:
        return {"pass_rate": None, "withheld": withheld or "no rate reported"}
    return {
        "pass_rate": estimate.rate, "ci_low": estimate.ci_low, "ci_high": estimate.ci_high,
        "confidence_level": level, "ci_method": estimate.ci_method, "n": estimate.n,
        "n_error": estimate.n_error, "base_scenarios": estimate.n_clusters,
        "withheld": estimate.reason,
    }


def _fidelity(row: ConversationFidelity | None) -> dict | None:
    if row is None:
        return None
    return {"status": row.status, "error": row.error, "broken": row.broken,
            "breaks": list(row.breaks), "test_aware": row.test_aware,
            "checks": [c.model_dump(exclude={"judges"}) for c in row.checks]}


def _target_text(metric: Metric) -> str:
    verb = "shows" if metric.type == "positive" else "does not show"
    return f"Passes when the assistant {verb}: {metric.name}. {metric.definition}"


def _manifest(path: Path) -> Manifest | None:
    return read_artifact(path, Manifest) if path.is_file() else None


def _ident(*parts: str) -> str:
    """A stable id: the same run exported twice gives the same log ids."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:22]


def _inspect_version() -> str:
    from importlib.metadata import version

    return version("inspect_ai")

