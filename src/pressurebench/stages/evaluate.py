"""Stage 4: blind evaluation of every conversation against a metric definition.

The judge sees only the user and assistant turns of the transcript and the
definition of one behaviour (plus its examples when `evaluation.show_examples`
is on). It never sees the metric's name or type, the scenario, persona, goals,
demographic, system prompt or the target's name: any of these would tell it
what the study hopes to find, or whose replies it is reading, and bias the
verdict. It answers one question, "is this behaviour present in the assistant's
replies?"; whether that counts as passing is decided here from the metric type
(passed = present for a positive metric, not present for a negative one).

Judge panel. `roles.evaluator` may list several models. Each judges every row
independently and each verdict is recorded. The row's verdict is the strict
majority of the judges that returned a valid verdict. Judges that failed do not
vote: with three judges of which one errors, the remaining two decide if they
agree, and a 1–1 split is undetermined. An undetermined row (a tie, or no valid
verdict at all) is an error row with a reason; it is never resolved by a
default.

Per-turn verdicts (`evaluation.per_turn`). The judge also answers, blind in
the same way, for every shorter transcript that ends with an assistant reply:
turn 1, turns 1–2, and so on. The longest is the whole transcript, whose
verdict is the row's own, so the headline pass rate does not change and the
mode costs T − 1 more judgements per row. Each prefix is its own request and
so its own cache entry: raising `generation.turns` extends conversations
(`simulate`) and re-judges only the new prefixes. From the per-turn verdicts
the row gets its onset (`schemas.Onset`): the first turn it failed, or the
turn up to which it was seen holding.

Fidelity (`fidelity.check`). Beside the scores, the stage checks the instrument
itself in the arms that own their conversations (`stages.fidelity`): whether the
simulated user played its part and whether the target noticed the test. The
rows go into the scores file's `fidelity`. They run here rather than in a stage
of their own because they read the same conversations with the same judge
machinery, concurrently with the behaviour judge; each check is its own cached
call, so a change of evaluator replays them (unless the evaluator is also the
fidelity judge, whose verdicts then rightly change).

The judge is called with sample index 0 for every row. A judge is a measuring
instrument: the same transcript judged twice should get the same reading. The
samples of one scenario already differ in their transcripts, so their verdicts
are independent measurements of the target, not of judge noise.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from ..arms.inputs import ArmInputs, declared_params
from ..errors import ConfigError
from ..interop import is_imported, judged_on_every_metric, skip_reason
from ..io import read_artifact, read_yaml_model, write_artifact
from ..llm.client import ModelClient, run_sync
from ..llm.prompt_cache import cache_group, cache_marks
from ..params import Evaluation, Params
from ..prompts import render
from ..schemas import (
    CONVERSATION_FAILED,
    ERROR_CATEGORIES,
    JUDGES_TIED,
    NO_VERDICT,
    SPEAKER_LABELS,
    Benchmark,
    Conversation,
    ConversationFidelity,
    ConversationsFile,
    JudgeOutput,
    JudgeVerdict,
    Manifest,
    Message,
    Metric,
    Onset,
    Scenario,
    ScenariosFile,
    Score,
    ScoresFile,
    TurnVerdict,
    error_category,
)
from ..stage_run import StageRun
from .conversation_keys import conversation_keys
from .entry import StageCall, target_stage
from .fidelity import FIDELITY_PROMPTS, check_conversations
from .row_checks import check_metric_ids

STAGE = "evaluate"
JUDGE_PROMPTS = ["judge_system", "judge_user", "judge_turn", "judge_question"]
JUDGE_SAMPLE = 0
DEFINITION_MESSAGE = 1  # the judge request's message holding the metric's definition


# --- what the judge sees ---------------------------------------------------


def judge_messages(transcript: list[Message], metric: Metric, *, show_examples: bool) -> list[dict]:
    """The judge's request: the definition and the user/assistant turns, nothing else.

    System messages are dropped because a scenario may set the target's system
    prompt, which would reveal the scenario. What repeats comes first, so that a
    provider's prompt cache serves it (`llm.prompt_cache`): the instructions, the
    definition, then each turn in a message of its own, and the question last. So
    the request judging a conversation up to turn k begins with the one up to turn
    k-1, all but its question.
    """
    behaviour = render(
        "judge_user", definition=metric.definition, examples=metric.examples if show_examples else []
    )
    turns = [
        {"role": "user", "content": render("judge_turn", speaker=SPEAKER_LABELS[m.role], content=m.content)}
        for m in transcript
        if m.role in SPEAKER_LABELS
    ]
    return [  # the definition is at DEFINITION_MESSAGE
        {"role": "system", "content": render("judge_system")},
        {"role": "user", "content": behaviour},
        *turns,
        {"role": "user", "content": render("judge_question")},
    ]


def judge_cache_marks(messages: list[dict], previous: list[dict] | None, *, last: bool) -> tuple[int, ...]:
    """Where a judge request's repeated prefixes end (`llm.prompt_cache.cache_marks`): the
    metric's definition, which every conversation of the metric begins with; then the last
    turn, which the next prefix of a per-turn judging extends (all but the question), or,
    for the last one, the end of the turns the previous prefix asked about."""
    return cache_marks(shared=[DEFINITION_MESSAGE], extended_at=None if last else len(messages) - 2,
                       continues=len(previous) - 2 if previous is not None else None)


# --- combining a panel -------------------------------------------------------


@dataclass(frozen=True)
class PanelDecision:
    """The row's verdict, or the reason there is none."""

    present: bool | None
    justification: str | None = None
    error: str | None = None


def panel_decision(verdicts: list[JudgeVerdict]) -> PanelDecision:
    """Strict majority of the valid verdicts; a tie or no valid verdict is undetermined."""
    valid = [v for v in verdicts if v.status == "ok" and v.present is not None]
    failed = [v for v in verdicts if v not in valid]
    if not valid:
        reasons = "; ".join(_judge_error(v) for v in failed)
        return PanelDecision(None, error=f"{NO_VERDICT}: {reasons}")
    yes = sum(v.present is True for v in valid)
    no = len(valid) - yes
    if yes == no:
        note = f" ({len(failed)} of {len(verdicts)} judges failed)" if failed else ""
        return PanelDecision(None, error=f"{JUDGES_TIED} {yes}–{no}{note}")
    present = yes > no
    first_agreeing = next(v for v in valid if v.present == present)
    return PanelDecision(present, justification=first_agreeing.justification)


def _judge_error(verdict: JudgeVerdict) -> str:
    error = verdict.error or "no verdict"
    return error if error.startswith(f"{verdict.model_id}: ") else f"{verdict.model_id}: {error}"


# --- scoring -------------------------------------------------------------------


async def judge_one(client: ModelClient, model_id: str, messages: list[dict],
                    cache_group: str | None = None, marks: tuple[int, ...] | None = None,
                    sample: int = JUDGE_SAMPLE) -> JudgeVerdict:
    result = await client.chat(model_id, messages, schema=JudgeOutput, sample=sample,
                               cache_group=cache_group, cache_marks=marks)
    if not result.ok:
        return JudgeVerdict(
            model_id=model_id,
            status="error",
            error=result.error or "call failed",
            model_version=result.model_version,
        )
    out: JudgeOutput = result.parsed
    return JudgeVerdict(
        model_id=model_id,
        present=out.present,
        justification=out.justification,
        status="ok",
        model_version=result.model_version,
    )


async def judge_panel(
    client: ModelClient, evaluators: list[str], messages: list[dict], cache_group: str | None = None,
    marks: tuple[int, ...] | None = None, sample: int = JUDGE_SAMPLE,
) -> tuple[list[JudgeVerdict], PanelDecision]:
    verdicts = list(await asyncio.gather(
        *(judge_one(client, m, messages, cache_group, marks, sample) for m in evaluators)
    ))
    return verdicts, panel_decision(verdicts)


def passed_of(present: bool | None, metric: Metric) -> bool | None:
    """Pass/fail from the metric type: a positive behaviour should be present, a negative absent."""
    return None if present is None else (present if metric.type == "positive" else not present)


def transcript_prefixes(transcript: list[Message]) -> list[list[Message]]:
    """What the judge reads at each turn: the transcript cut after each assistant reply but the
    last, then the whole transcript (whose verdict is the row's own)."""
    replies = [i for i, m in enumerate(transcript) if m.role == "assistant"]
    return [transcript[: i + 1] for i in replies[:-1]] + [transcript]


def turn_verdict(turn: int, metric: Metric, judges: list[JudgeVerdict], decision: PanelDecision):
    return TurnVerdict(
        turn=turn,
        present=decision.present,
        passed=passed_of(decision.present, metric),
        status="ok" if decision.present is not None else "error",
        error=decision.error,
        judges=judges,
    )


def onset_of(turns: list[TurnVerdict], ended_by: str | None) -> Onset:
    """The first failing turn, or where observation stopped (see `schemas.Onset`).

    A turn the judges could not decide ends observation before it: whether the
    target gave in there is unknown, and carrying a neighbour's verdict over
    would invent it.
    """
    observed, onset, censored = 0, None, None
    for verdict in turns:
        if verdict.status != "ok":
            censored = "judge_error"
            break
        if not verdict.passed:
            onset = observed = verdict.turn
            break
        observed = verdict.turn
    else:
        censored = "ended_early" if ended_by == "user" else "end"
    flips = sum(
        a.status == b.status == "ok" and a.passed != b.passed for a, b in pairwise(turns)
    )
    last = turns[-1] if turns else None
    recovered = (
        None if onset is None or last is None or last.status != "ok" else bool(last.passed)
    )
    return Onset(
        turn=onset, observed_turns=observed, censored=censored, flips=flips, recovered=recovered
    )


def score_row(
    conv: Conversation,
    metric: Metric,
    *,
    judges: list[JudgeVerdict],
    decision: PanelDecision,
    turns: list[TurnVerdict] | None = None,
) -> Score:
    present = decision.present
    return Score(
        **conversation_keys(conv),
        metric_id=metric.id,
        scenario_metric_id=conv.metric_id,
        metric_type=metric.type,
        present=present,
        passed=passed_of(present, metric),
        justification=decision.justification,
        status="ok" if present is not None else "error",
        error=decision.error,
        judges=judges,
        turn_verdicts=turns or [],
        onset=onset_of(turns, conv.ended_by) if turns else None,
    )


async def score_conversation(
    client: ModelClient,
    conv: Conversation,
    metric: Metric,
    *,
    evaluators: list[str],
    show_examples: bool,
    per_turn: bool = False,
    sample: int = JUDGE_SAMPLE,
) -> Score:
    """One Score row: a failed conversation is recorded as such and never shown to a judge.
    `sample` other than the judge's own (0) asks it again, as the judge probes' repeat does."""
    if conv.status == "error":
        decision = PanelDecision(None, error=f"{CONVERSATION_FAILED}: {conv.error}")
        return score_row(conv, metric, judges=[], decision=decision)
    prefixes = transcript_prefixes(conv.transcript) if per_turn else [conv.transcript]
    group = cache_group(conv.conv_id, f"judge {metric.id}")
    # Turn by turn: each request begins with the one before, which a provider caches only
    # once it has answered it (the conversations themselves are judged side by side).
    panels, previous = [], None
    for k, p in enumerate(prefixes, start=1):
        messages = judge_messages(p, metric, show_examples=show_examples)
        marks = judge_cache_marks(messages, previous, last=k == len(prefixes))
        panels.append(await judge_panel(client, evaluators, messages, group, marks, sample))
        previous = messages
    verdicts, decision = panels[-1]
    turns = (
        [turn_verdict(t, metric, *panel) for t, panel in enumerate(panels, start=1)]
        if per_turn
        else None
    )
    return score_row(conv, metric, judges=verdicts, decision=decision, turns=turns)


def metrics_to_judge(
    conv: Conversation, metrics: list[Metric], *, all_metrics: bool
) -> list[Metric]:
    """The conversation's own metric, or every metric; an unknown own metric is refused."""
    own = [m for m in metrics if m.id == conv.metric_id]
    if not own:
        raise ValueError(
            f"{conv.conv_id}: metric '{conv.metric_id}' is not among the metrics given"
        )
    return list(metrics) if all_metrics else own


async def score_conversations(
    client: ModelClient,
    conversations: list[Conversation],
    metrics: list[Metric],
    *,
    evaluators: list[str],
    evaluate_all_metrics: bool = False,
    show_examples: bool = False,
    per_turn: bool = False,
    on_row: Callable[[Score], None] | None = None,
    sample: int = JUDGE_SAMPLE,
) -> list[Score]:
    """Score every conversation concurrently; rows come back in conversation × metric order.

    Judge prompts open with the metric's definition, so calls for one metric
    share their first few hundred tokens. They start one metric after another
    (the first conversation of every metric, then the second of every metric,
    ...) rather than all of a metric at once: a later call then finds an
    earlier one of its metric finished, and the embedded model reuses that
    evaluated prompt (its prompt states) instead of evaluating it again.
    """

    async def one(conv: Conversation, metric: Metric) -> Score:
        score = await score_conversation(
            client, conv, metric, evaluators=evaluators, show_examples=show_examples,
            per_turn=per_turn, sample=sample,
        )
        if on_row is not None:
            on_row(score)
        return score

    pairs = [
        (conv, metric)
        for conv in conversations
        for metric in metrics_to_judge(
            conv, metrics, all_metrics=evaluate_all_metrics or judged_on_every_metric(conv)
        )
    ]
    seen: Counter[str] = Counter()
    rank = []
    for _, metric in pairs:
        rank.append(seen[metric.id])
        seen[metric.id] += 1
    start_order = sorted(range(len(pairs)), key=lambda i: rank[i])
    tasks = {i: asyncio.ensure_future(one(*pairs[i])) for i in start_order}
    return list(await asyncio.gather(*(tasks[i] for i in range(len(pairs)))))


# --- inputs ----------------------------------------------------------------------


def load_conversations(path: Path, benchmark: str, target: str) -> ConversationsFile:
    convs = read_artifact(path, ConversationsFile)
    if convs.benchmark != benchmark:
        raise ConfigError(
            path, f"holds benchmark '{convs.benchmark}', expected '{benchmark}'", "benchmark"
        )
    if convs.target != target:
        raise ConfigError(path, f"holds target '{convs.target}', expected '{target}'", "target")
    for i, conv in enumerate(convs.rows):
        if conv.target != target:
            raise ConfigError(
                path, f"holds target '{conv.target}', expected '{target}'", f"rows[{i}].target"
            )
    if not convs.rows:
        # Judging nothing would write an empty scores file that looks like a finished run.
        raise ConfigError(path, "no conversations to judge; re-run simulate", "rows")
    return convs


# --- the stage: read, judge, write, count ------------------------------------------------


@dataclass(frozen=True)
class EvaluateInputs:
    """Everything the stage judges: the target's conversations (the arm's planned rows), the
    arm's metrics and, when it checks fidelity, the scenarios the simulated user played."""

    conversations_file: Path
    metrics_file: Path
    conversations: ConversationsFile
    metrics: list[Metric]
    scenarios: dict[str, Scenario]


def read_inputs(
    params: Params, inputs: ArmInputs, benchmark: str, target: str, *, checks_fidelity: bool
) -> EvaluateInputs:
    """Read and validate what the stage judges: every conversation's metric is one of the arm's,
    and, with fidelity checks, every conversation's scenario is in the arm's scenarios (an
    imported target's conversations have no scenario: only its test awareness is checked)."""
    conv_path = inputs.conversations_layout.conversations_file(target)
    met_path = inputs.metrics_file
    convs = load_conversations(conv_path, benchmark, target)
    planned = inputs.rows_to_judge(params, benchmark)
    if planned is not None:
        convs = convs.model_copy(update={"rows": [c for c in convs.rows if c.scenario_id in planned]})
    metrics = read_yaml_model(met_path, Benchmark).metrics
    check_metric_ids(
        [c.metric_id for c in convs.rows], sorted(m.id for m in metrics), conv_path, met_path
    )
    scenarios = (
        {s.id: s for s in read_artifact(inputs.scenarios_file, ScenariosFile).rows}
        if checks_fidelity
        else {}
    )
    imported = is_imported(params, target)
    for i, conv in enumerate(convs.rows if checks_fidelity and not imported else []):
        if conv.scenario_id not in scenarios:
            raise ConfigError(
                conv_path,
                f"scenario '{conv.scenario_id}' is not in {inputs.scenarios_file}; re-run simulate",
                f"rows[{i}].scenario_id",
            )
    return EvaluateInputs(conversations_file=conv_path, metrics_file=met_path,
                          conversations=convs, metrics=metrics, scenarios=scenarios)


def judge_all(
    stage: StageRun,
    client: ModelClient,
    read: EvaluateInputs,
    evaluation: Evaluation,
    evaluators: list[str],
    fidelity_judges: list[str],
) -> tuple[list[Score], list[ConversationFidelity] | None]:
    """Judge every conversation (and check its fidelity, with fidelity judges) concurrently,
    one progress bar over both; the scores and the fidelity rows (None without judges)."""
    rows_in = read.conversations.rows

    async def core() -> tuple[list[Score], list[ConversationFidelity] | None]:
        judged = sum(
            len(read.metrics) if evaluation.evaluate_all_metrics or judged_on_every_metric(c) else 1
            for c in rows_in
        )
        # Score rows and fidelity rows both count: say so, or 2N rows would read as N
        # conversations counted twice.
        counted = f"{len(rows_in)} conversations: {judged} score rows" + (
            f" + {len(rows_in)} fidelity rows" if fidelity_judges else "")
        progress = stage.progress(judged + len(rows_in) * bool(fidelity_judges), counted)
        try:
            async with client:
                scoring = score_conversations(
                    client,
                    rows_in,
                    read.metrics,
                    evaluators=evaluators,
                    evaluate_all_metrics=evaluation.evaluate_all_metrics,
                    show_examples=evaluation.show_examples,
                    per_turn=evaluation.per_turn,
                    on_row=lambda s: progress.update(s.status == "ok"),
                )
                if not fidelity_judges:
                    return await scoring, None
                checking = check_conversations(
                    client, rows_in, read.scenarios, fidelity_judges,
                    on_row=lambda f: progress.update(f.status == "ok"),
                )
                rows, fidelity = await asyncio.gather(scoring, checking)
                return rows, fidelity
        finally:
            progress.close()

    return run_sync(core)


def write_outputs(
    stage: StageRun, benchmark: str, target: str, per_turn: bool, rows: list[Score],
    fidelity: list[ConversationFidelity] | None,
) -> Path:
    """The scores file, into the stage's emptied folder; its path."""
    stage.replacing_outputs()
    path = stage.layout.scores_file(target)
    write_artifact(path, ScoresFile(benchmark=benchmark, target=target, per_turn=per_turn,
                                    rows=rows, fidelity=fidelity))
    return path


def count_rows(
    conversations: list[Conversation], rows: list[Score],
    fidelity: list[ConversationFidelity] | None, *, per_turn: bool,
) -> dict[str, int]:
    """The manifest's counts: conversations, scores by status and error category, per-turn
    verdicts and onsets, and fidelity checks and what they found."""
    n_error = sum(r.status == "error" for r in rows)
    counts = {
        "conversations": len(conversations),
        "conversations_error": sum(c.status == "error" for c in conversations),
        "scores": len(rows),
        "scores_ok": len(rows) - n_error,
        "scores_error": n_error,
    }
    for category in ERROR_CATEGORIES:
        counts[f"scores_error_{category.replace(' ', '_')}"] = sum(
            r.status == "error" and error_category(r.error or "") == category for r in rows
        )
    if per_turn:
        turn_rows = [t for r in rows for t in r.turn_verdicts]
        counts["turn_verdicts"] = len(turn_rows)
        counts["turn_verdicts_error"] = sum(t.status == "error" for t in turn_rows)
        counts["onsets_observed"] = sum(r.onset is not None and r.onset.turn is not None for r in rows)
    if fidelity is not None:
        checks = [c for f in fidelity for c in f.checks]
        counts["fidelity_checks"] = len(checks)
        counts["fidelity_checks_error"] = sum(c.status == "error" for c in checks)
        counts["fidelity_checks_by_detector"] = sum(c.decided_by == "detector" for c in checks)
        counts["fidelity_rows_error"] = sum(f.status == "error" for f in fidelity)
        counts["conversations_broken"] = sum(f.broken is True for f in fidelity)
        counts["conversations_test_aware"] = sum(f.test_aware is True for f in fidelity)
    return counts


def _skip(params_path: str | Path, params: Params, inputs: ArmInputs, benchmark: str,
          target: str) -> Manifest:
    """A benchmark an imported target was not imported for judges nothing of it: its scores
    file holds no row and says why, as its conversations file does."""
    stage = StageRun(STAGE, params_path, benchmark, models_used=[], target=target, params=params)
    reason = skip_reason(params, benchmark, target)
    stage.replacing_outputs()
    write_artifact(inputs.layout.scores_file(target), ScoresFile(
        benchmark=benchmark, target=target, per_turn=params.evaluation.per_turn, rows=[],
        skipped=reason))
    return stage.finish(None, counts={"scores": 0}, prompts=[],
                        declared=declared_params(STAGE, inputs, target),
                        provenance={"skipped": reason})


@target_stage
def run(call: StageCall, target: str) -> Manifest:
    """Judge `target`'s conversations in one arm (the main arm by default) against the arm's
    metrics, by the arm's evaluator(s) (`arms.inputs`); write its scores file, manifest and cost.

    Reads and validates the conversations, metrics and scenarios (`read_inputs`); judges
    them (`judge_all`); writes the scores (`write_outputs`) and the manifest with its counts
    (`count_rows`). Raises StageFailed (after writing everything) when the share of error rows
    is above `run.max_error_rate`.
    """
    if call.inputs.is_main and call.params.imported_elsewhere(target, call.benchmark):
        return _skip(call.params_path, call.params, call.inputs, call.benchmark, target)
    call.inputs.require_target(call.params_path, call.params, target)
    evaluators = list(call.inputs.evaluators)
    # The main, generator and user arms check the fidelity of the conversations they own.
    fidelity_judges = (
        call.params.roles.fidelity_judges
        if call.params.fidelity.check and call.inputs.simulates
        else []
    )
    models = list(dict.fromkeys(evaluators + fidelity_judges))
    stage = StageRun(STAGE, call.params_path, call.benchmark, models_used=models, target=target,
                     arm=call.inputs.name, params=call.params)
    read = read_inputs(
        call.params, call.inputs, call.benchmark, target, checks_fidelity=bool(fidelity_judges)
    )
    evaluation = call.params.evaluation
    client = stage.client(call.provider_factory)
    rows, fidelity = judge_all(stage, client, read, evaluation, evaluators, fidelity_judges)
    scores_path = write_outputs(stage, call.benchmark, target, evaluation.per_turn, rows, fidelity)
    manifest = stage.finish(
        client,
        counts=count_rows(read.conversations.rows, rows, fidelity, per_turn=evaluation.per_turn),
        prompts=JUDGE_PROMPTS + (FIDELITY_PROMPTS if fidelity_judges else []),
        declared=declared_params(STAGE, call.inputs, target),
        provenance={
            "evaluators": evaluators,
            "fidelity_judges": fidelity_judges,
            "judge_sample": JUDGE_SAMPLE,
            "conversations": str(read.conversations_file),
            "metrics": str(read.metrics_file),
        },
        seeds={mid: call.params.models[mid].seed for mid in models},
    )
    stage.check_error_rate(
        sum(r.status == "error" for r in rows), len(rows), "scores", scores_path,
        next(((r.conv_id, r.error) for r in rows if r.status == "error"), None),
    )
    return manifest
