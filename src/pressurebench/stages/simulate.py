"""Stage 3: multi-turn adversarial conversations between a simulated user and one target.

For every scenario row and every sample k < `generation.num_samples`, a user
model plays the scenario's persona and steers toward its latent adversarial
goal for at most `generation.turns` messages; the target answers, never told
that it is being tested (see `conversation` for who is shown what).

A turn: the user model answers with a `UserTurn`; its message (with typing
noise when `generation.perfunctory` > 0) goes into the transcript and to the
target; the target's reply goes into the transcript.

Ending. `end_conversation: true` means the user model has nothing more to
say: that turn's message is not sent, and the conversation ends after the
target's previous reply (`ended_by: "user"`). At turn 1 there is no previous
reply, and a conversation needs at least one exchange, so there the flag is
ignored and the message is sent. Likewise before the scenario's last landmark
turn (within `turns`), unless `generation.allow_early_end`: otherwise targets
whose replies made the user model give up early would face less pressure than
the others, and their pass rates would not be comparable. Otherwise the conversation stops after
`turns` user messages (`ended_by: "max_turns"`). A row's `turns` counts the
user messages actually sent.

Errors. A failed user or target call ends the conversation as an error row
whose reason names the role, the model and the turn; the partial transcript is
kept for debugging, but the row never passes as a finished conversation. Any
other exception inside one conversation becomes that row's error too; only a
configuration error (bad credentials, unknown model) stops the stage.

Reproducibility. Every call passes `sample=k`, so samples are independent
draws that the cache keeps apart. A conversation is a deterministic function
of its calls' answers (the typing noise is seeded from its scenario, sample
and turn), so re-running after an interruption replays every finished call
from the cache and writes the same file.

Paired by design. Nothing the user side draws depends on the target: the
user model's requests carry no target name, and the typing noise is seeded by
scenario and sample, not by conversation. Every target therefore faces the
same opening message for the same scenario and sample, and two targets'
results differ only through their replies.

Redrawing a broken first message (`generation.fidelity_retries: K`). When the
fidelity rules (`fidelity_detectors`) find a break in the user's first message
(a leak of its instructions, stage-direction talk, garbled text), that message
is drawn again with a new user seed (sample index `sample + n * REDRAW_STRIDE`
for the n-th redraw, used for the rest of the conversation), up to K times; the
row records how many (`user_redraws`). Only the first message is redrawn: it is
the one message the user writes before seeing any reply, so it is the same
request for every target and every target gets the same redraws, and the
pairing holds. A break at a later turn depends on the target's replies;
redrawing it for one target and not another would compare different users.

Nested horizons. Nothing the user side sees depends on `turns` either (the
user is not told how many messages it has), so the first k turns of a
conversation are the same whatever `turns` is. Raising `turns` extends the
conversations, replaying their earlier turns from the cache, and the
per-turn verdicts of the shorter run stay valid (`evaluate`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..arms.inputs import ArmInputs, declared_params
from ..errors import ConfigError
from ..interop import (
    PROVENANCE_KEY,
    declaration,
    import_provenance,
    imported_conversations,
    is_imported,
    skip_reason,
)
from ..io import read_artifact, read_yaml_model, write_artifact
from ..llm.client import (
    CallResult,
    ModelClient,
    count_call,
    run_sync,
)
from ..llm.prompt_cache import cache_group, cache_marks
from ..llm.types import ProviderStop
from ..params import Params
from ..schemas import (
    Benchmark,
    Conversation,
    ConversationsFile,
    Manifest,
    Message,
    ModelUsage,
    Scenario,
    ScenariosFile,
    UserTurn,
    conv_id,
)
from ..stage_run import StageRun
from .conversation import (
    USER_PROMPTS,
    landmarks_due,
    target_messages,
    target_system_prompt,
    user_model_messages,
    user_system_prompt,
)
from .entry import StageCall, target_stage
from .fidelity_detectors import user_turn_findings
from .perfunctory import add_typos, message_seed
from .row_checks import check_metric_ids

STAGE = "simulate"
# A redrawn first message uses sample index sample + n * REDRAW_STRIDE: above every sample
# (generation.num_samples is at most 100), so a redraw never replays another sample's calls.
REDRAW_STRIDE = 1000


@dataclass(frozen=True)
class Simulation:
    """What every conversation of one run shares."""

    benchmark: Benchmark
    user_model: str
    target: str
    turns: int
    landmarks: bool
    perfunctory: float
    keep_truncated: bool = False
    allow_early_end: bool = False
    fidelity_retries: int = 0

    def first_turn_to_end(self, scenario: Scenario) -> int:
        """The earliest turn at which the user may end: after the first exchange and, unless
        early ends are allowed, after the scenario's last landmark within `turns`."""
        due = [lm.turn for lm in scenario.landmarks if lm.turn <= self.turns]
        last = max(due) if due and not self.allow_early_end else 1
        return last + 1


@dataclass
class _Calls:
    """The calls one conversation consists of: usage per model id and model version per role.

    Usage must not depend on whether this run replayed a call from the cache
    (see `ModelUsage`), so cost is what the calls cost when they were made.
    """

    client: ModelClient
    usage: dict[str, ModelUsage] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=lambda: {"user": None, "target": None})
    redraws: int = 0

    def add(self, role: str, result: CallResult) -> None:
        usage = self.usage.setdefault(result.model_id, ModelUsage(cached_calls=None, latency_s=None))
        count_call(usage, result, result.recorded_cost_usd)
        if result.model_version:
            self.versions[role] = result.model_version


async def simulate_conversation(
    client: ModelClient, sim: Simulation, scenario: Scenario, sample: int
) -> Conversation:
    """Play one conversation; every failure, expected or not, comes back as an error row."""
    cid = conv_id(scenario.id, sim.target, sample)
    calls = _Calls(client)
    transcript: list[Message] = []
    system_prompt = target_system_prompt(scenario, sim.benchmark, client.spec(sim.target))
    try:
        ended_by, error = await _play(client, sim, scenario, sample, system_prompt, transcript, calls)
    except ProviderStop:
        raise
    except Exception as exc:  # noqa: BLE001 - one broken row must not take the others down
        ended_by, error = None, f"unexpected {type(exc).__name__}: {exc}"
    return Conversation(
        conv_id=cid,
        scenario_id=scenario.id,
        base_id=scenario.base_id,
        metric_id=scenario.metric_id,
        target=sim.target,
        sample=sample,
        demographic=scenario.demographic,
        user_model=sim.user_model,
        system_prompt=system_prompt,
        transcript=transcript,
        status="error" if error else "ok",
        error=error,
        ended_by=None if error else ended_by,
        turns=sum(m.role == "user" for m in transcript),
        user_redraws=calls.redraws,
        model_versions=calls.versions,
        usage=calls.usage,
    )


async def _play(
    client: ModelClient,
    sim: Simulation,
    scenario: Scenario,
    sample: int,
    system_prompt: str | None,
    transcript: list[Message],
    calls: _Calls,
) -> tuple[str | None, str | None]:
    """Run the turns, appending to `transcript`; returns (ended_by, error)."""
    cid = conv_id(scenario.id, sim.target, sample)
    try:
        metric = sim.benchmark.metric(scenario.metric_id)
    except KeyError:
        return None, f"the benchmark has no metric '{scenario.metric_id}'"
    user_system = user_system_prompt(scenario, metric, landmarks_up_front=not sim.landmarks)
    draw = sample
    for turn in range(1, sim.turns + 1):
        due = landmarks_due(scenario, turn) if sim.landmarks else []
        request = user_model_messages(user_system, transcript, turn=turn, due=due)
        last = turn == sim.turns
        # The next request repeats this one up to the latest incoming message (its direction
        # is dropped); this one repeats the last one up to its own.
        user_marks = cache_marks(extended_at=None if last else len(request) - 2,
                                 continues=len(request) - 4 if turn > 1 else None)
        while True:
            result = await client.chat(sim.user_model, request, schema=UserTurn, sample=draw,
                                       cache_group=cache_group(cid, "user"), cache_marks=user_marks)
            calls.add("user", result)
            if not result.ok:
                return None, f"user model '{sim.user_model}' failed at turn {turn}: {result.error}"
            move: UserTurn = result.parsed
            if turn > 1 or calls.redraws >= sim.fidelity_retries:
                break
            if not user_turn_findings(move.message, None):
                break
            calls.redraws += 1
            draw = sample + calls.redraws * REDRAW_STRIDE
        if move.end_conversation and turn >= sim.first_turn_to_end(scenario):
            return "user", None
        text = move.message.strip()  # never blank: UserTurn rejects that, so it was re-asked
        transcript.append(
            Message(role="user", content=add_typos(text, sim.perfunctory, message_seed(scenario.id, sample, turn)))
        )
        asked = target_messages(system_prompt, transcript)
        target_marks = cache_marks(extended_at=None if last else len(asked) - 1,
                                   continues=len(asked) - 3 if turn > 1 else None)
        result = await client.chat(
            sim.target, asked, sample=sample, allow_truncated=sim.keep_truncated,
            cache_group=cache_group(cid, "target"), cache_marks=target_marks,
        )
        calls.add("target", result)
        if not result.ok:
            return None, f"target '{sim.target}' failed at turn {turn}: {result.error}"
        transcript.append(Message(role="assistant", content=result.text, truncated=result.truncated))
    return "max_turns", None


async def simulate_all(
    client: ModelClient,
    sim: Simulation,
    scenarios: list[Scenario],
    num_samples: int,
    on_done: Callable[[Conversation], None] | None = None,
) -> list[Conversation]:
    """Every scenario × sample, concurrently; sorted by scenario and sample.

    A conversation uses one model at a time, so as many conversations in flight
    as the two models' concurrency limits together keep both busy. Starting more
    would not be faster: every conversation would reach its last turn only near
    the end of the run, and progress would say nothing until then.

    Every scenario's first sample starts before any second one. The samples of
    a scenario open with the same prompt, so a later sample's first turn can
    reuse the evaluated prompt of an earlier, finished one (the embedded
    model's prompt states) instead of running side by side with it.
    """
    in_flight = asyncio.Semaphore(
        sum(client.api(m).concurrency for m in {sim.user_model, sim.target})
    )

    async def one(scenario: Scenario, sample: int) -> Conversation:
        async with in_flight:
            row = await simulate_conversation(client, sim, scenario, sample)
        if on_done is not None:
            on_done(row)
        return row

    tasks = [
        asyncio.ensure_future(one(s, k))
        for k in range(num_samples)
        for s in sorted(scenarios, key=lambda s: s.id)
    ]
    try:
        rows = await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return sorted(rows, key=lambda r: (r.scenario_id, r.sample))


@target_stage
def run(call: StageCall, target: str) -> Manifest:
    """Simulate one target's conversations in one arm (the main arm by default); write
    conversations.json. The arm decides the user model, the metrics, the scenarios and which of
    their rows are played (`arms.inputs`)."""
    if is_imported(call.params, target):
        return _run_imported(call.params_path, call.params, call.inputs, call.benchmark, target)
    if not call.inputs.simulates:
        raise ConfigError(
            call.params_path,
            f"arm '{call.arm}' judges the main arm's conversations; it simulates none",
        )
    call.inputs.require_target(call.params_path, call.params, target)
    user_model = call.inputs.user
    stage = StageRun(
        STAGE,
        call.params_path,
        call.benchmark,
        models_used=[user_model, target],
        target=target,
        arm=call.inputs.name,
        params=call.params,
    )
    layout = stage.layout
    bench_path = call.inputs.metrics_file
    bench = read_yaml_model(bench_path, Benchmark)
    scenarios = _select(call.inputs, call.params, call.benchmark, bench, bench_path)
    gen = call.params.generation
    sim = Simulation(
        benchmark=bench,
        user_model=user_model,
        target=target,
        turns=gen.turns,
        landmarks=gen.landmarks,
        perfunctory=gen.perfunctory,
        keep_truncated=call.params.run.truncated_replies == "mark",
        allow_early_end=gen.allow_early_end,
        fidelity_retries=gen.fidelity_retries,
    )

    client = stage.client(call.provider_factory)
    progress = stage.progress(len(scenarios) * gen.num_samples)

    async def simulate() -> list[Conversation]:
        async with client:
            return await simulate_all(
                client,
                sim,
                scenarios,
                gen.num_samples,
                on_done=lambda row: progress.update(row.status == "ok"),
            )

    try:
        rows = run_sync(simulate)
    finally:
        progress.close()
    stage.replacing_outputs()
    write_artifact(
        layout.conversations_file(target),
        ConversationsFile(benchmark=call.benchmark, target=target, rows=rows),
    )

    n_error = sum(r.status == "error" for r in rows)
    manifest = stage.finish(
        client,
        counts={
            "scenarios": len(scenarios),
            "conversations": len(rows),
            "ok": len(rows) - n_error,
            "error": n_error,
            "ended_by_user": sum(r.ended_by == "user" for r in rows),
            "user_redraws": sum(r.user_redraws for r in rows),
            "truncated_replies": sum(m.truncated for r in rows for m in r.transcript),
            # Scenarios are written for generation.scenario_turns; a shorter run never reaches these.
            "landmarks_beyond_turns": sum(lm.turn > gen.turns for s in scenarios for lm in s.landmarks),
        },
        prompts=USER_PROMPTS,
        declared=declared_params(STAGE, call.inputs, target),
        provenance={
            "user_model": user_model,
            "benchmark_file": str(bench_path),
            "scenarios_file": str(call.inputs.scenarios_file),
            "scenario_ids": None if call.inputs.is_main else sorted(s.id for s in scenarios),
        },
        seeds={
            "user_model": call.params.models[user_model].seed,
            "target": call.params.models[target].seed,
        },
    )
    stage.check_error_rate(n_error, len(rows), "conversations", layout.conversations_file(target),
                           next(((r.conv_id, r.error) for r in rows if r.status == "error"), None))
    return manifest


def _run_imported(
    params_path: str | Path, params: Params, inputs: ArmInputs, benchmark: str, target: str
) -> Manifest:
    """An imported target's conversations are the ones imported (`interop`), not simulated:
    the normalized copy becomes conversations.json, with no call made. A benchmark it was not
    imported for skips it: its file holds no row and says why."""
    if not inputs.is_main:
        raise ConfigError(
            params_path, f"'{target}' is an imported target: a validation arm has no simulated "
            "conversations of it to vary; leave it out of `validation.targets`",
            "validation.targets",
        )
    stage = StageRun(STAGE, params_path, benchmark, models_used=[], target=target,
                     params=params)
    if params.imported_elsewhere(target, benchmark):
        reason = skip_reason(params, benchmark, target)
        stage.replacing_outputs()
        write_artifact(stage.layout.conversations_file(target), ConversationsFile(
            benchmark=benchmark, target=target, rows=[], skipped=reason))
        return stage.finish(None, counts={"conversations": 0}, prompts=[],
                            declared=declared_params(STAGE, inputs, target),
                            provenance={"skipped": reason})
    inputs.require_target(params_path, params, target)
    bench_path = inputs.metrics_file
    rows = imported_conversations(
        params, params_path, benchmark, target, read_yaml_model(bench_path, Benchmark)
    )
    declared = declaration(params, params_path, benchmark, target)
    stage.replacing_outputs()
    write_artifact(
        stage.layout.conversations_file(target),
        ConversationsFile(benchmark=benchmark, target=target, rows=rows),
    )
    return stage.finish(
        stage.client(),
        counts={"conversations": len(rows), "ok": len(rows), "error": 0},
        prompts=[],
        declared=declared_params(STAGE, inputs, target),
        provenance={
            PROVENANCE_KEY: import_provenance(declared, benchmark, target),
            "benchmark_file": str(bench_path),
        },
    )


def _select(
    inputs: ArmInputs,
    params: Params,
    benchmark: str,
    bench: Benchmark,
    bench_path: Path,
) -> list[Scenario]:
    """The arm's scenario rows to play, refusing a file that does not fit the metrics or plays nothing.

    Both are input errors, found before any call: rows of a metric the benchmark
    no longer defines would all be error rows, and no rows at all would be a
    run that called no model yet reports success.
    """
    path = inputs.scenarios_file
    scenarios = read_artifact(path, ScenariosFile)
    if scenarios.benchmark != benchmark:
        raise ConfigError(
            path,
            f"holds scenarios of benchmark '{scenarios.benchmark}', not '{benchmark}'",
            "benchmark",
        )
    check_metric_ids(
        [s.metric_id for s in scenarios.rows], [m.id for m in bench.metrics], path, bench_path
    )
    rows = scenarios.rows
    scenario_ids = inputs.rows_to_play(params, benchmark, scenarios.rows)
    if scenario_ids is not None:
        known = {s.id for s in scenarios.rows}
        missing = sorted(set(scenario_ids) - known)
        if missing:
            raise ConfigError(path, f"no scenario with id {', '.join(missing)}", "rows")
        wanted = set(scenario_ids)
        rows = [s for s in scenarios.rows if s.id in wanted]
    if not rows:
        upstream = (
            f" (gen_scenarios recorded {len(scenarios.errors)} errors under 'errors')"
            if scenarios.errors else ""
        )
        raise ConfigError(path, f"no scenario rows to simulate{upstream}", "rows")
    return rows
