"""Stage 2: scenarios. Per metric, demographic-neutral base scenarios, each
rewritten once per demographic profile.

- Base scenarios: `generation.scenarios_per_metric` per metric, one per call,
  each call listing the scenarios already written for that metric so the next
  one is a different situation; a draft nearly duplicating one of them is
  dropped. Landmark turns must lie in 1..`generation.scenario_turns` (the schema only
  offers those numbers), be unique, and are stored sorted.
- Profiles: the Cartesian product of `generation.demographics` (`profiles`).
  The generator rewrites the base persona and landmark instructions once per
  profile; the user goal, the latent goal and the turn numbers are copied from
  the base, so variants of one base scenario differ only in who is asking. With
  no demographic axes each base scenario becomes one `_v01` row with its own
  text, without a call.
- Failures: a draft that stays invalid or duplicated after
  `generation.max_regenerations` regenerations becomes a `GenerationError`
  (a failed base scenario: one error, and none of its variants; a failed
  rewrite: one error for that variant only). The error gate counts scenario
  rows: expected = metrics x scenarios_per_metric x profiles.
- Metrics run concurrently; each accepted base scenario starts its rewrites at once.
- Curated scenarios (`curated`, main arm only): base scenarios the researcher kept
  in `benchmarks/<b>/scenarios.yaml` (any ids, added ones too) pass through exactly
  as written, dropped ones are skipped, and only the remaining slots of
  1..`scenarios_per_metric` are generated. The scenarios file
  lists the curated ids (`curated`) so reports can mark them.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, create_model, model_validator

from ..arms.inputs import declared_params
from ..errors import ConfigError
from ..io import read_yaml_model, write_artifact
from ..llm.client import ModelClient, run_sync
from ..prompts import render
from ..schemas import (
    Benchmark,
    GenerationError,
    Landmark,
    Manifest,
    Metric,
    Row,
    Scenario,
    ScenariosFile,
    scenario_id,
)
from ..stage_run import Progress, StageRun
from .curated import CuratedScenarios, curated_source, load_curated
from .entry import StageCall, benchmark_stage
from .generation import generate, require_generating
from .similarity import near_duplicate_of, normalise

STAGE = "gen_scenarios"
BASE_PROMPT = "gen_scenario"
REWRITE_PROMPT = "rewrite_scenario"

# The prompts ask for one or two sentences (persona) and one sentence (goals, landmark
# instructions); the bounds leave room for that and no more, since small models fill them.
PERSONA_MIN, PERSONA_MAX = 20, 300
GOAL_MIN, GOAL_MAX = 10, 200
INSTRUCTION_MIN, INSTRUCTION_MAX = 5, 160

Persona = Annotated[str, Field(min_length=PERSONA_MIN, max_length=PERSONA_MAX)]
Goal = Annotated[str, Field(min_length=GOAL_MIN, max_length=GOAL_MAX)]
Instruction = Annotated[str, Field(min_length=INSTRUCTION_MIN, max_length=INSTRUCTION_MAX)]

Profile = dict[str, str]


def profiles(axes: dict[str, list[str]]) -> list[Profile]:
    """Every combination of one value per axis; `[{}]` (one neutral profile) when there are no axes.

    The order is fixed (axes in params order, values in params order, the last axis
    varying fastest) because a variant's number in its lineage id (`_v03`) is its
    position in this product: the same params must always give the same ids.
    """
    names = list(axes)
    return [dict(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]


def describe(profile: Profile) -> str:
    """`age: teenager; gender: woman`: how a profile is shown to the generator."""
    return "; ".join(f"{axis}: {value}" for axis, value in profile.items())


class _ScenarioDraftBase(Row):
    persona: Persona
    user_goal: Goal
    latent_adversarial_goal: Goal
    if TYPE_CHECKING:
        # Each schema of `scenario_draft_schema` adds its own (its turns an enum of 1..turns).
        landmarks: list[Any]

    @model_validator(mode="after")
    def _coherent(self):
        turns = [lm.turn for lm in self.landmarks]
        if len(set(turns)) != len(turns):
            raise ValueError("landmark turns must be unique")
        self.landmarks.sort(key=lambda lm: lm.turn)
        instructions = [normalise(lm.instruction) for lm in self.landmarks]
        if len(set(instructions)) != len(instructions):
            raise ValueError("landmark instructions must differ from each other")
        if normalise(self.user_goal) == normalise(self.latent_adversarial_goal):
            raise ValueError("the latent goal must differ from the goal the user states")
        return self


@cache
def scenario_draft_schema(turns: int) -> type[_ScenarioDraftBase]:
    """The base-scenario answer for conversations of `turns` turns.

    Turn numbers are an enum of 1..turns rather than a checked integer, so
    grammar-constrained decoding cannot produce an out-of-range turn at all.
    """
    landmark = create_model(
        "LandmarkDraft",
        __base__=Row,
        # A Literal of values known at run time, which no static type can spell.
        turn=(Literal[tuple(range(1, turns + 1))], ...),  # type: ignore[arg-type]
        instruction=(Instruction, ...),
    )
    return create_model(
        "ScenarioDraft",
        __base__=_ScenarioDraftBase,
        landmarks=(list[landmark], Field(min_length=1, max_length=turns)),
    )


@cache
def rewrite_draft_schema(n_landmarks: int) -> type[Row]:
    """A rewrite answers with the persona and exactly one instruction per base landmark, in order:
    the turn numbers are the base's, so the turn structure cannot drift."""
    return create_model(
        "RewriteDraft",
        __base__=Row,
        persona=(Persona, ...),
        landmarks=(list[Instruction], Field(min_length=n_landmarks, max_length=n_landmarks)),
    )


def scenario_text(draft) -> str:
    return f"{draft.persona} {draft.user_goal} {draft.latent_adversarial_goal}"


@dataclass(frozen=True)
class ScenarioJob:
    """What one run of the stage generates, and from what: fixed before the first call."""

    benchmark: Benchmark
    generator: str
    scenarios_per_metric: int
    turns: int
    profiles: list[Profile]
    attempts: int
    curated: CuratedScenarios | None = None

    def kept(self, base_id: str) -> bool:
        """Whether a base scenario slot is the curated file's (kept or dropped), not generated."""
        return self.curated is not None and (
            base_id in self.curated.base_ids() or base_id in self.curated.dropped
        )

    @property
    def rows_expected(self) -> int:
        """Generated slots and curated base scenarios, each once per profile."""
        slots = [
            f"{m.id}_s{n:03d}" for m in self.benchmark.metrics
            for n in range(1, self.scenarios_per_metric + 1)
        ]
        generated = sum(not self.kept(base) for base in slots)
        curated = len(self.curated.base_ids()) if self.curated else 0
        return (generated + curated) * len(self.profiles)

    @property
    def rewrites(self) -> bool:
        return self.profiles != [{}]


@dataclass
class Outcome:
    rows: list[Scenario]
    errors: list[GenerationError]
    near_duplicates: int = 0


class _Reporter:
    """Progress per scenario row; a failed base scenario fails all its rows at once."""

    def __init__(self, progress: Progress | None):
        self.progress = progress

    def rows(self, ok: bool, n: int = 1) -> None:
        if self.progress:
            for _ in range(n):
                self.progress.update(ok)


async def generate_scenarios(
    client: ModelClient, job: ScenarioJob, progress: Progress | None = None
) -> Outcome:
    """All metrics concurrently; rows sorted by id, errors by metric, base scenario and profile."""
    report = _Reporter(progress)
    parts = await asyncio.gather(
        *(_metric(client, job, m, report) for m in job.benchmark.metrics)
    )
    rows = sorted((r for p in parts for r in p.rows), key=lambda r: r.id)
    order = {tuple(p.items()): i for i, p in enumerate(job.profiles)}
    errors = sorted(
        (e for p in parts for e in p.errors),
        key=lambda e: (
            e.metric_id or "",
            e.base_id or "",
            order.get(tuple((e.demographic or {}).items()), -1),
        ),
    )
    return Outcome(rows, errors, sum(p.near_duplicates for p in parts))


async def _metric(client: ModelClient, job: ScenarioJob, metric: Metric, report: _Reporter) -> Outcome:
    out = Outcome([], [])
    schema = scenario_draft_schema(job.turns)
    curated = sorted(
        (r for r in (job.curated.rows if job.curated else []) if r.metric_id == metric.id),
        key=lambda r: r.id,
    )
    # New scenarios must differ from the curated ones as from each other (a variant stands
    # for its base scenario: they share the goals).
    accepted: dict[str, _ScenarioDraftBase | Scenario] = {}
    for row in curated:
        accepted.setdefault(row.base_id, row)
    expansions = []
    for number in range(1, job.scenarios_per_metric + 1):
        base_id = f"{metric.id}_s{number:03d}"
        if job.kept(base_id):
            continue

        def messages(rejected, number=number) -> list[dict]:
            prompt = render(
                BASE_PROMPT,
                benchmark=job.benchmark,
                metric=metric,
                turns=job.turns,
                number=number,
                total=job.scenarios_per_metric,
                previous=list(accepted.values()) + rejected,
            )
            return [{"role": "user", "content": prompt}]

        def accept(draft) -> str | None:
            twin = near_duplicate_of(
                scenario_text(draft), {k: scenario_text(d) for k, d in accepted.items()}
            )
            return None if twin is None else f"near-duplicate of {twin}"

        result = await generate(
            client,
            job.generator,
            messages=messages,
            schema=schema,
            accept=accept,
            attempts=job.attempts,
        )
        out.near_duplicates += sum(r.startswith("near-duplicate") for r in result.rejections)
        if result.value is None:
            out.errors.append(_error(metric, base_id, result.reason("base scenario")))
            report.rows(False, len(job.profiles))
            continue
        accepted[base_id] = result.value
        expansions.append(
            asyncio.create_task(_variants(client, job, metric, number, result.value, report))
        )
    for base_id in sorted({r.base_id for r in curated}):
        part = _curated_rows(job, metric, base_id)
        out.rows += part.rows
        out.errors += part.errors
        report.rows(True, len(part.rows))
        report.rows(False, len(part.errors))
    for part in await asyncio.gather(*expansions):
        out.rows += part.rows
        out.errors += part.errors
    return out


async def _variants(
    client: ModelClient,
    job: ScenarioJob,
    metric: Metric,
    number: int,
    base: _ScenarioDraftBase,
    report: _Reporter,
) -> Outcome:
    base_id = f"{metric.id}_s{number:03d}"
    if not job.rewrites:
        report.rows(True)
        return Outcome(
            [
                _row(
                    metric,
                    number,
                    1,
                    {},
                    base.persona,
                    base,
                    [lm.instruction for lm in base.landmarks],
                )
            ],
            [],
        )
    results = await asyncio.gather(*(_rewrite(client, job, base, p) for p in job.profiles))
    out = Outcome([], [])
    for variant, (profile, result) in enumerate(zip(job.profiles, results), start=1):
        report.rows(result.value is not None)
        if result.value is None:
            reason = f"rewrite for {describe(profile)}: {result.reason('rewrite')}"
            out.errors.append(_error(metric, base_id, reason, profile))
        else:
            out.rows.append(
                _row(
                    metric,
                    number,
                    variant,
                    profile,
                    result.value.persona,
                    base,
                    result.value.landmarks,
                )
            )
    return out


async def _rewrite(client: ModelClient, job: ScenarioJob, base: _ScenarioDraftBase, profile: Profile):
    n = len(base.landmarks)
    prompt = render(REWRITE_PROMPT, base=base, profile=describe(profile), n=n)

    def accept(draft) -> str | None:
        if normalise(draft.persona) == normalise(base.persona):
            return "the rewritten persona is the base persona unchanged"
        return None

    return await generate(
        client,
        job.generator,
        messages=lambda rejected: [{"role": "user", "content": prompt}],
        schema=rewrite_draft_schema(n),
        accept=accept,
        attempts=job.attempts,
    )


def _row(
    metric: Metric,
    number: int,
    variant: int,
    profile: Profile,
    persona: str,
    base: _ScenarioDraftBase,
    instructions: list[str],
) -> Scenario:
    sid = scenario_id(metric.id, number, variant)
    return Scenario(
        id=sid,
        metric_id=metric.id,
        base_id=f"{metric.id}_s{number:03d}",
        persona=persona.strip(),
        user_goal=base.user_goal.strip(),
        latent_adversarial_goal=base.latent_adversarial_goal.strip(),
        landmarks=[
            Landmark(turn=lm.turn, instruction=text.strip())
            for lm, text in zip(base.landmarks, instructions)
        ],
        demographic=dict(profile),
    )


def _curated_rows(job: ScenarioJob, metric: Metric, base_id: str) -> Outcome:
    """A curated base scenario's rows as written, and an error per profile it has no row for."""
    assert job.curated is not None, "a curated base scenario comes from the curated file"
    rows = [r for r in job.curated.rows if r.base_id == base_id]
    have = {tuple(sorted(r.demographic.items())) for r in rows}
    errors = [
        _error(metric, base_id, "curated base scenario has no row for this profile: add one to "
               "the curated file, or drop the base scenario", profile)
        for profile in job.profiles
        if job.rewrites and tuple(sorted(profile.items())) not in have
    ]
    return Outcome(rows, errors)


def _error(metric: Metric, base_id: str, reason: str, profile: Profile | None = None) -> GenerationError:
    """A base scenario that failed (no profile: none of its rows exists), or one of its rows."""
    return GenerationError(stage=STAGE, metric_id=metric.id, base_id=base_id, demographic=profile,
                           reason=reason)


def read_metrics(path: Path) -> Benchmark:
    bench = read_yaml_model(path, Benchmark)
    if not bench.metrics:
        reason = "no metrics to write scenarios for"
        if bench.errors:
            reason += (
                f" (gen_metrics recorded {len(bench.errors)} errors: {bench.errors[0].reason})"
            )
        raise ConfigError(path, reason, "metrics")
    return bench


@benchmark_stage
def run(call: StageCall) -> Manifest:
    """Write the arm's scenarios file, by the arm's generator, for the arm's metrics (`arms.inputs`)."""
    require_generating(call, "scenarios")
    gen_id = call.inputs.generator
    stage = StageRun(STAGE, call.params_path, call.benchmark, models_used=[gen_id],
                     arm=call.inputs.name, params=call.params)
    metrics_path = call.inputs.metrics_file
    g = call.params.generation
    metrics = read_metrics(metrics_path)
    curated_path = curated_source(call.benchmark)
    curated = (
        load_curated(curated_path, metrics, profiles(g.demographics))
        if call.inputs.keeps_curated_scenarios else None
    )
    job = ScenarioJob(
        benchmark=metrics,
        generator=gen_id,
        scenarios_per_metric=g.scenarios_per_metric,
        turns=g.scenario_turns,
        profiles=profiles(g.demographics),
        attempts=1 + g.max_regenerations,
        curated=curated,
    )
    client = stage.client(call.provider_factory)

    async def core() -> Outcome:
        async with client:
            progress = stage.progress(job.rows_expected)
            try:
                return await generate_scenarios(client, job, progress)
            finally:
                progress.close()

    outcome = run_sync(core)
    stage.replacing_outputs()
    write_artifact(
        stage.layout.scenarios_file,
        ScenariosFile(
            benchmark=call.benchmark, rows=outcome.rows, errors=outcome.errors,
            curated=sorted(r.id for r in outcome.rows if job.kept(r.base_id)),
        ),
    )
    base_errors = sum(e.demographic is None for e in outcome.errors)
    manifest = stage.finish(
        client,
        counts={
            "metrics": len(job.benchmark.metrics),
            "metric_errors_upstream": len(job.benchmark.errors),
            "base_scenarios_requested": len(job.benchmark.metrics) * job.scenarios_per_metric,
            "base_scenarios_failed": base_errors,
            "profiles": len(job.profiles),
            "rows_expected": job.rows_expected,
            "rows_written": len(outcome.rows),
            "rewrites_failed": len(outcome.errors) - base_errors,
            "near_duplicates_dropped": outcome.near_duplicates,
            "curated_rows": sum(job.kept(r.base_id) for r in outcome.rows),
            "curated_dropped": len(curated.dropped) if curated else 0,
        },
        prompts=[BASE_PROMPT, REWRITE_PROMPT] if job.rewrites else [BASE_PROMPT],
        declared=declared_params(STAGE, call.inputs),
        provenance={
            "generator": gen_id,
            "metrics_from": str(metrics_path),
            "metric_ids": [m.id for m in job.benchmark.metrics],
            "curated_from": str(curated_path) if curated else None,
        },
        seeds={"generator": call.params.models[gen_id].seed},
    )
    first = outcome.errors[0] if outcome.errors else None
    stage.check_error_rate(
        job.rows_expected - len(outcome.rows), job.rows_expected, "scenario rows",
        stage.layout.scenarios_file,
        (first.base_id or first.metric_id or "—", first.reason) if first else None,
    )
    return manifest
