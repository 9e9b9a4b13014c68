"""What a run took: calls, tokens, cost and wall time per stage, and summed over the run.

Every stage writes `cost.json` (calls, cached calls, tokens and cost per model)
and `manifest.json` (among others its duration) into its folder (`paths`). The
totals read every cost file there is, whatever its stage, so a new kind of stage
is counted without a change here, and take each stage's wall time from the
manifest beside it.

A total is only as known as its parts: a stage whose cost is unknown (a model
without a price) makes the run's cost unknown, and a cost file without its
manifest makes the run's wall time unknown, never 0. The run's wall time is the
sum of its stages' durations, which is the time `dvc repro` spent when it ran
them one after another; stages re-run later replayed what the cache held, so
their durations (and `cached_calls`) describe that later run.

What a run paid (`cost_usd`: nothing for a replayed call) is shown beside what
its calls cost when they were made (`recorded_cost_usd`, replays included, from
the cost and time each reply carries in the cache and the call record): a run
replayed from the cache costs $0 and its calls still cost what they cost. A
cost file written before calls kept their cost has no recorded cost (None).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

import pandas as pd
from pydantic import Field

from .io import read_artifact
from .paths import COMPARISON_STEP, COST, MANIFEST, RUNS, STUDY_COMPARISONS
from .schemas import Cost, Manifest, Row

# The main arm's stages whose folders lie in the benchmark's folder rather than under
# `runs/<target>/`.
RESULTS_STAGES = ("gen_metrics", "gen_scenarios", "aggregate")
MISSING = "—"
N = TypeVar("N", int, float)


class StageTotals(Row):
    """One stage execution's calls, tokens, cost and wall time, summed over its models."""

    path: str = Field(description="the cost file, relative to the data directory")
    stage: str
    arm: str | None = None
    target: str | None = None
    models: list[str] = Field(description="the model ids it called")
    calls: int = Field(ge=0)
    cached_calls: int | None = Field(ge=0, description="replayed from the cache")
    failed_calls: int = Field(ge=0)
    input_tokens: int = Field(ge=0)
    cached_input_tokens: int = Field(default=0, ge=0, description="of input_tokens, read from a prompt cache")
    cache_write_tokens: int = Field(default=0, ge=0, description="of input_tokens, written to a prompt cache")
    output_tokens: int = Field(ge=0)
    cost_usd: float | None = Field(description="what this run paid; None when a model has no price")
    recorded_cost_usd: float | None = Field(
        default=None, description="what its calls cost when they were made, replays included"
    )
    timed_calls: int = Field(default=0, ge=0, description="calls whose time was recorded")
    recorded_latency_s: float = Field(default=0.0, ge=0, description="those calls' times summed")
    wall_s: float | None = Field(description="the stage's duration; None without its manifest")


class RunTotals(Row):
    """Every stage of a run and their sums (None where a part is unknown)."""

    stages: list[StageTotals]
    calls: int = Field(ge=0)
    cached_calls: int | None
    failed_calls: int = Field(ge=0)
    input_tokens: int = Field(ge=0)
    cached_input_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(ge=0)
    cost_usd: float | None
    recorded_cost_usd: float | None = None
    wall_s: float | None
    unknown_cost: list[str] = Field(description="stages whose cost is unknown")
    unknown_wall: list[str] = Field(description="stages without a manifest")


# The counts a stage sums over its models' usage and a run over its stages.
COUNTS = ("calls", "cached_calls", "failed_calls", "input_tokens", "cached_input_tokens",
          "cache_write_tokens", "output_tokens")


def _known_sum(values: Iterable[N | None]) -> N | None:
    total: N = 0
    for value in values:
        if value is None:
            return None
        total += value
    return total


def _sums(parts: Sequence[object], fields: Iterable[str]) -> dict[str, Any]:
    """Each of `fields` summed over `parts`: unknown (None) where one part's is unknown."""
    return {name: _known_sum(getattr(part, name) for part in parts) for name in fields}


def stage_totals(path: str, cost: Cost, manifest: Manifest | None) -> StageTotals:
    """One stage's row from its cost file and (when present) its manifest."""
    folder = PurePosixPath(path).parent
    stage = (STUDY_COMPARISONS.get(folder.parent.name, folder.name)
             if folder.name == COMPARISON_STEP else folder.name)
    target = folder.parent.name if folder.parent.parent.name == RUNS else None
    usage = list(cost.by_model.values())
    return StageTotals(
        path=path,
        stage=manifest.stage if manifest else stage,
        arm=manifest.arm if manifest else None,
        target=manifest.target if manifest else target,
        models=sorted(cost.by_model),
        **_sums(usage, COUNTS),
        cost_usd=cost.total_cost_usd,
        recorded_cost_usd=cost.recorded_cost_usd,
        timed_calls=sum(r.timed_calls for r in cost.recorded.values()),
        recorded_latency_s=sum(r.latency_s for r in cost.recorded.values()),
        wall_s=manifest.duration_s if manifest else None,
    )


def run_totals(stages: Iterable[StageTotals]) -> RunTotals:
    stages = sorted(stages, key=lambda s: s.path)
    return RunTotals(
        stages=stages,
        **_sums(stages, (*COUNTS, "cost_usd", "recorded_cost_usd", "wall_s")),
        unknown_cost=[s.path for s in stages if s.cost_usd is None],
        unknown_wall=[s.path for s in stages if s.wall_s is None],
    )


def cost_files(root: Path) -> list[Path]:
    """Every cost file under `root`."""
    return sorted(root.rglob(COST))


def manifest_beside(cost_path: str) -> str:
    """The manifest path the stage wrote next to `cost_path`."""
    return str(PurePosixPath(cost_path).with_name(MANIFEST))


def behind_results(path: str) -> bool:
    """Whether the cost file at `path` (relative to a benchmark's folder) is of a stage whose
    outputs its results are made from: the generation stages, every stage of a target under
    `runs/`, and the aggregate stage. The validation arms and the studies comparing them (below
    `validation/`) run after the results."""
    parts = PurePosixPath(path).parts
    if parts[0] == RUNS:
        return True
    return len(parts) == 2 and parts[0] in RESULTS_STAGES


def read_totals(root: str | Path, *, results_only: bool = False) -> RunTotals:
    """The totals of every stage that wrote under `root` (a data directory, or one benchmark's
    folder), reading and validating each cost file and its manifest; with `results_only`, of
    the stages a benchmark's results are made from (`behind_results`)."""
    root = Path(root)
    rows = []
    for path in cost_files(root):
        rel = path.relative_to(root).as_posix()
        if results_only and not behind_results(rel):
            continue
        manifest_path = Path(manifest_beside(str(path)))
        manifest = read_artifact(manifest_path, Manifest) if manifest_path.is_file() else None
        rows.append(stage_totals(rel, read_artifact(path, Cost), manifest))
    return run_totals(rows)


def format_cost(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


def format_seconds(seconds: float | None) -> str:
    """`2 min 05 s`, `41.2 s`; "—" when unknown."""
    if seconds is None:
        return MISSING
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


TOTALS_COLUMNS = [
    "stage", "arm", "target", "calls", "cached", "failed", "input tokens", "of them cache reads",
    "cache writes", "output tokens", "cost paid", "cost when made", "wall time",
]


def totals_frame(totals: RunTotals) -> pd.DataFrame:
    """One row per stage and a last row for the run, formatted for a report."""

    def row(label: str, arm: str, target: str, t: StageTotals | RunTotals) -> list:
        return [
            label, arm, target, t.calls, MISSING if t.cached_calls is None else t.cached_calls,
            t.failed_calls, t.input_tokens, t.cached_input_tokens, t.cache_write_tokens,
            t.output_tokens, format_cost(t.cost_usd), format_cost(t.recorded_cost_usd),
            format_seconds(t.wall_s),
        ]

    rows = [row(s.stage, s.arm or "main", s.target or "", s) for s in totals.stages]
    rows.append(row("run total", "", "", totals))
    return pd.DataFrame(rows, columns=TOTALS_COLUMNS)

