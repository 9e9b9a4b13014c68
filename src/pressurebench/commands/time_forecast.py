"""How long the planned model calls should take, stage by stage, before anything runs.

Two sources, the first that applies:

- **recorded**: stages of the same kind that already ran with the same models
  (their cost files and manifests under the data directory): seconds of stage
  wall time per call that was not replayed from the cache, times the calls
  planned. It includes the concurrency, the provider's latency and the
  machine as they were, and is the better figure whenever it exists (a pilot
  run records it).
- **recorded call times**: where those stages replayed their calls from the
  cache or the call record, the time each call took when it was made (kept
  with its reply), averaged and divided by the calls the stage's models run at
  once. A replayed run still knows what its calls took.
- **assumed** (stages whose models are all embedded): the planned tokens at
  the prompt and decoding speeds below, which are the slower ends of what
  `perf/README.md` measured for SmolLM2-135M at `requantize: q8_0`, on as
  many llama.cpp contexts as the provider opens.

Otherwise (an API model never run here) the time is not estimated, never 0. Times
cover model calls only: starting a stage's notebook and loading the embedded
model add a few seconds per stage.

The expected cost of a stage whose calls were recorded is their recorded cost
per call (what each call cost when it was made, replayed since or not) times
the calls planned, beside the token-based estimate.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..llm.providers.registry import api_for, is_embedded
from ..params import Params
from ..run_totals import RunTotals
from .cost_forecast import Line

# Tokens per second: prompt evaluation per core, and decoding per call.
ASSUMED_PROMPT_TPS_PER_CORE = 180.0
ASSUMED_DECODE_TPS = 35.0
# Calls one model file runs at once (`llm.providers.local_provider.MAX_CONTEXTS`).
LOCAL_CONTEXTS = 4
RECORDED = "recorded"
ASSUMED = "assumed"
NOT_ESTIMATED = "not estimated"


@dataclass
class StageTime:
    stage: str
    arm: str
    calls: int
    seconds: float | None
    basis: str  # RECORDED, ASSUMED or NOT_ESTIMATED, with what it rests on
    cost_usd: float | None = None  # from the recorded cost per call; None where none is known
    cost_basis: str = ""


def _stage_key(line: Line) -> tuple[str, str]:
    return line.stage, line.arm


def recorded_rates(history: RunTotals) -> dict[tuple[str, frozenset[str]], tuple[float, int]]:
    """Per stage kind and set of models: (seconds per uncached call, uncached calls measured)."""
    seconds: dict[tuple[str, frozenset[str]], float] = {}
    calls: dict[tuple[str, frozenset[str]], int] = {}
    for s in history.stages:
        if s.wall_s is None or s.cached_calls is None or s.calls - s.cached_calls <= 0:
            continue  # a replay from the cache says nothing about how long calls take
        key = (s.stage, frozenset(s.models))
        seconds[key] = seconds.get(key, 0.0) + s.wall_s
        calls[key] = calls.get(key, 0) + s.calls - s.cached_calls
    return {key: (seconds[key] / calls[key], calls[key]) for key in seconds}


def recorded_call_times(history: RunTotals) -> dict[tuple[str, frozenset[str]], tuple[float, int]]:
    """Per stage kind and set of models: (mean seconds a call took when it was made, calls
    timed), over every recorded call, replayed since or not."""
    seconds: dict[tuple[str, frozenset[str]], float] = {}
    calls: dict[tuple[str, frozenset[str]], int] = {}
    for s in history.stages:
        if s.timed_calls <= 0:
            continue
        key = (s.stage, frozenset(s.models))
        seconds[key] = seconds.get(key, 0.0) + s.recorded_latency_s
        calls[key] = calls.get(key, 0) + s.timed_calls
    return {key: (seconds[key] / calls[key], calls[key]) for key in seconds}


def recorded_call_costs(history: RunTotals) -> dict[tuple[str, frozenset[str]], tuple[float, int]]:
    """Per stage kind and set of models: (what a call cost when it was made, calls counted)."""
    cost: dict[tuple[str, frozenset[str]], float] = {}
    calls: dict[tuple[str, frozenset[str]], int] = {}
    for s in history.stages:
        if s.recorded_cost_usd is None or s.calls <= 0:
            continue
        key = (s.stage, frozenset(s.models))
        cost[key] = cost.get(key, 0.0) + s.recorded_cost_usd
        calls[key] = calls.get(key, 0) + s.calls
    return {key: (cost[key] / calls[key], calls[key]) for key in cost}


def _assumed_local_seconds(params: Params, lines: list[Line]) -> float:
    total = 0.0
    for line in lines:
        spec = params.models[line.model_id]
        cores = spec.n_threads or os.cpu_count() or 1
        contexts = max(1, min(cores, LOCAL_CONTEXTS))
        share = max(1, cores // contexts)
        per_call = (
            line.input_tokens / max(line.calls, 1) / (ASSUMED_PROMPT_TPS_PER_CORE * share)
            + line.output_tokens / max(line.calls, 1) / ASSUMED_DECODE_TPS
        )
        total += line.calls * per_call / min(contexts, max(line.calls, 1))
    return total


def expected_times(params: Params, lines: list[Line], history: RunTotals | None) -> list[StageTime]:
    """One expected time per planned stage (stage × arm/target), in the order of `lines`."""
    rates = recorded_rates(history) if history is not None else {}
    call_times = recorded_call_times(history) if history is not None else {}
    call_costs = recorded_call_costs(history) if history is not None else {}
    stages: dict[tuple[str, str], list[Line]] = {}
    for line in lines:
        stages.setdefault(_stage_key(line), []).append(line)
    out = []
    for (stage, arm), group in stages.items():
        calls = sum(x.calls for x in group)
        models = frozenset(x.model_id for x in group)
        if (stage, models) in rates:
            rate, measured = rates[(stage, models)]
            out.append(StageTime(stage, arm, calls, calls * rate,
                                 f"{RECORDED}: {rate:.2f} s per call over {measured} calls"))
        elif (stage, models) in call_times:
            per_call, measured = call_times[(stage, models)]
            at_once = min(api_for(params.models[m]).concurrency for m in models)
            out.append(StageTime(
                stage, arm, calls, calls * per_call / at_once,
                f"{RECORDED}: {per_call:.2f} s per call when the {measured} recorded calls were "
                f"made, {at_once} at once",
            ))
        elif all(is_embedded(params.models[m].provider) for m in models):
            out.append(StageTime(stage, arm, calls, _assumed_local_seconds(params, group),
                                 f"{ASSUMED}: embedded model at {ASSUMED_PROMPT_TPS_PER_CORE:.0f} "
                                 f"prompt tokens/s per core, {ASSUMED_DECODE_TPS:.0f} decoded/s"))
        else:
            out.append(StageTime(stage, arm, calls, None,
                                 f"{NOT_ESTIMATED}: {', '.join(sorted(models))} never ran here "
                                 "in this stage; a pilot run records its time"))
    for time_ in out:
        key = (time_.stage, frozenset(x.model_id for x in stages[(time_.stage, time_.arm)]))
        if key in call_costs:
            per_call, counted = call_costs[key]
            time_.cost_usd = time_.calls * per_call
            time_.cost_basis = (f"{RECORDED}: ${per_call:.6f} per call, what {counted} recorded "
                                "calls cost when made")
    return out


def total_seconds(times: list[StageTime]) -> float | None:
    """The run's expected time; None when any stage's is not estimated."""
    known = [t.seconds for t in times if t.seconds is not None]
    if len(known) < len(times):
        return None
    return sum(known)
