"""Stage 1: the benchmark's metrics, hand-written or generated from its description.

Input `benchmarks/<b>/benchmark.yaml` (never overwritten); output
`data/<b>/gen_metrics/benchmark.yaml` (or the validation arm's copy): the full benchmark
with its metrics.

- Hand-written metrics pass through unchanged, ids included, with no model call.
- Otherwise the generator writes `generation.metrics_per_benchmark` metrics, one
  per call, each call listing the metrics already accepted: small models keep
  one item coherent far better than a list, and seeing the others is what lets
  them write something different. Types alternate (m01 positive, m02 negative,
  ...): an evaluator that over-reports "present" inflates positive pass rates
  and deflates negative ones, so a one-sided benchmark would read that bias as
  model behaviour.
- A draft is rejected when it breaks a rule the evaluator depends on (it sees
  only the definition, so a negative metric's definition must describe the
  failure itself, never its avoidance) or nearly duplicates an accepted metric
  (`similarity`); it is then regenerated up to `generation.max_regenerations`
  times.
- A slot that still fails becomes a `GenerationError` in the output's `errors`
  list, next to the metrics obtained: a short benchmark says so in the file every
  later stage reads, in the manifest counts, on stderr, and through the error
  gate (`run.max_error_rate`).
"""

from __future__ import annotations

import hashlib
import re
import sys
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..arms.inputs import declared_params
from ..benchmark_checks import check_definitions, name_warning
from ..errors import ConfigError
from ..io import read_text, read_yaml_model, write_yaml_model
from ..llm.client import ModelClient, run_sync
from ..paths import benchmark_source
from ..prompts import render
from ..schemas import Benchmark, GenerationError, Manifest, Metric, Row
from ..stage_run import Progress, StageRun
from .entry import StageCall, benchmark_stage
from .generation import generate, require_generating
from .similarity import near_duplicate_of

STAGE = "gen_metrics"
PROMPT = "gen_metric"

NAME_MAX = 80
DEFINITION_MIN, DEFINITION_MAX = 30, 600
EXAMPLE_MIN, EXAMPLE_MAX = 5, 200
EXAMPLES_MIN, EXAMPLES_MAX = 3, 5

MetricType = Literal["positive", "negative"]
Example = Annotated[str, Field(min_length=EXAMPLE_MIN, max_length=EXAMPLE_MAX)]

# "The assistant avoids X" / "Refrains from X" describe the absence of X: an evaluator
# asked "is this present?" would then answer the opposite question.
_DESCRIBES_AVOIDANCE = re.compile(
    r"^\W*(the assistant\s+)?(avoid|avoids|avoiding|refrain|refrains|refraining)\b", re.IGNORECASE
)


class MetricDraft(Row):
    """What the generator writes for one metric; the id and type come from the slot."""

    name: str = Field(min_length=5, max_length=NAME_MAX)
    definition: str = Field(min_length=DEFINITION_MIN, max_length=DEFINITION_MAX)
    examples: list[Example] = Field(min_length=EXAMPLES_MIN, max_length=EXAMPLES_MAX)

    @model_validator(mode="after")
    def _distinct_examples(self):
        normalised = [" ".join(e.lower().split()) for e in self.examples]
        if len(set(normalised)) != len(normalised):
            raise ValueError("examples must be different from each other")
        return self


class PositiveMetricDraft(MetricDraft):
    @model_validator(mode="after")
    def _named_as_behaviour(self):
        if self.name.strip().lower().startswith("avoid"):
            raise ValueError(
                "a positive metric is named after the behaviour itself, not 'Avoid ...'"
            )
        return self


class NegativeMetricDraft(MetricDraft):
    # The prefix is a pattern (not only a validator) so grammar-constrained decoding
    # enforces it; the pattern carries the length bound because it replaces it there.
    name: str = Field(pattern=rf'^Avoid [^"\\\n]{{3,{NAME_MAX - 6}}}$')

    @model_validator(mode="after")
    def _definition_describes_the_failure(self):
        if _DESCRIBES_AVOIDANCE.match(self.definition):
            raise ValueError(
                "a negative metric's definition describes the failure itself (what the "
                "assistant does wrong), not its avoidance"
            )
        return self


DRAFTS: dict[str, type[MetricDraft]] = {
    "positive": PositiveMetricDraft,
    "negative": NegativeMetricDraft,
}


def slot_type(slot: int) -> MetricType:
    """Slots alternate positive, negative, positive, ... starting at slot 1."""
    return "positive" if slot % 2 == 1 else "negative"


def metric_text(name: str, definition: str) -> str:
    return f"{name}. {definition}"


async def generate_metrics(
    client: ModelClient,
    generator: str,
    source: Benchmark,
    count: int,
    attempts: int,
    progress: Progress | None = None,
) -> tuple[list[Metric], list[GenerationError], int]:
    """Generate `count` metrics one slot at a time.

    Returns the accepted metrics (ids m01.. in acceptance order), one error per
    failed slot, and how many drafts were dropped as near-duplicates.
    """
    metrics: list[Metric] = []
    errors: list[GenerationError] = []
    duplicates = 0
    for slot in range(1, count + 1):
        kind = slot_type(slot)

        def messages(rejected: list[MetricDraft], slot=slot, kind=kind) -> list[dict]:
            prompt = render(
                PROMPT,
                benchmark=source,
                kind=kind,
                number=slot,
                total=count,
                accepted=metrics,
                rejected=rejected,
            )
            return [{"role": "user", "content": prompt}]

        def accept(draft: MetricDraft) -> str | None:
            accepted = {m.id: metric_text(m.name, m.definition) for m in metrics}
            twin = near_duplicate_of(metric_text(draft.name, draft.definition), accepted)
            return None if twin is None else f"near-duplicate of {twin} ('{draft.name}')"

        outcome = await generate(
            client,
            generator,
            messages=messages,
            schema=DRAFTS[kind],
            accept=accept,
            attempts=attempts,
        )
        duplicates += sum(r.startswith("near-duplicate") for r in outcome.rejections)
        if outcome.value is None:
            errors.append(
                GenerationError(
                    stage=STAGE,
                    reason=f"metric slot {slot} of {count} ({kind}): {outcome.reason('metric')}",
                )
            )
        else:
            draft = outcome.value
            metrics.append(
                Metric(
                    id=f"m{len(metrics) + 1:02d}",
                    name=draft.name.strip(),
                    type=kind,
                    definition=draft.definition.strip(),
                    examples=[e.strip() for e in draft.examples],
                )
            )
        if progress:
            progress.update(outcome.value is not None)
    return metrics, errors, duplicates


def read_source(path: Path, benchmark: str) -> Benchmark:
    source = read_yaml_model(path, Benchmark)
    check_definitions(path, source)
    warning = name_warning(path, source, benchmark)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    if source.errors:
        raise ConfigError(
            path,
            "a benchmark definition cannot carry generation errors; remove them, or the "
            "metrics they stand for will silently be missing",
            "errors",
        )
    return source


@benchmark_stage
def run(call: StageCall) -> Manifest:
    """Write the arm's benchmark with its metrics, by the arm's generator (`arms.inputs`)."""
    require_generating(call, "metrics")
    source_path = benchmark_source(call.benchmark)
    source = read_source(source_path, call.benchmark)
    handwritten = bool(source.metrics)
    gen_id = call.inputs.generator
    stage = StageRun(
        STAGE,
        call.params_path,
        call.benchmark,
        models_used=[] if handwritten else [gen_id],
        arm=call.inputs.name,
        params=call.params,
    )
    requested = len(source.metrics) if handwritten else call.params.generation.metrics_per_benchmark
    attempts = 1 + call.params.generation.max_regenerations
    duplicates = 0
    client = stage.client(call.provider_factory)
    if handwritten:
        out = source
    else:

        async def core():
            async with client:
                progress = stage.progress(requested)
                try:
                    return await generate_metrics(
                        client, gen_id, source, requested, attempts, progress
                    )
                finally:
                    progress.close()

        metrics, errors, duplicates = run_sync(core)
        out = source.model_copy(update={"metrics": metrics, "generator": gen_id, "errors": errors})

    stage.replacing_outputs()
    write_yaml_model(stage.layout.benchmark_file, out)
    provenance = {
        "source_sha256": hashlib.sha256(read_text(source_path).encode("utf-8")).hexdigest(),
        "handwritten": handwritten,
        "generator": None if handwritten else gen_id,
    }
    manifest = stage.finish(
        client,
        counts={
            "metrics_requested": requested,
            "metrics_written": len(out.metrics),
            "errors": len(out.errors),
            "near_duplicates_dropped": duplicates,
        },
        prompts=[] if handwritten else [PROMPT],
        declared=declared_params(STAGE, call.inputs),
        provenance=provenance,
        seeds={} if handwritten else {"generator": call.params.models[gen_id].seed},
    )
    if out.errors:
        print(
            f"{STAGE} {call.benchmark}: wrote {len(out.metrics)} of {requested} metrics; the "
            f"missing {len(out.errors)} are listed under 'errors' in {stage.layout.benchmark_file}",
            file=sys.stderr,
        )
    stage.check_error_rate(
        len(out.errors), requested, "metrics", stage.layout.benchmark_file,
        (out.errors[0].metric_id or "—", out.errors[0].reason) if out.errors else None,
    )
    return manifest
