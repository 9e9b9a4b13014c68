"""Two runs compared: per benchmark and target every rate side by side with the change and its
interval, what differs in their settings, and what each run took."""

from __future__ import annotations

from pydantic import Field

from ..run_totals import RunTotals
from ..schemas import Row
from ..stats.score_frames import scores_frame
from .differences import GroupChange, Pairing, compare_frames, scenario_pairing
from .runs import Run
from .settings import SettingChange, setting_changes

COMPARISON_SCHEMA_VERSION = 1


class BenchmarkComparison(Row):
    benchmark: str
    pairing: Pairing
    targets_only_a: list[str]
    targets_only_b: list[str]
    changes: list[GroupChange]


class RunComparison(Row):
    schema_version: int = COMPARISON_SCHEMA_VERSION
    run_a: str
    run_b: str
    confidence_level: float = Field(gt=0, lt=1)
    benchmarks: list[BenchmarkComparison]
    benchmarks_only_a: list[str]
    benchmarks_only_b: list[str]
    settings: list[SettingChange]
    totals_a: RunTotals
    totals_b: RunTotals


def compare_runs(run_a: Run, run_b: Run, *, confidence_level: float = 0.95) -> RunComparison:
    """Every benchmark both runs scored, compared target by target (B − A)."""
    benchmarks = []
    for name in sorted(run_a.benchmarks.keys() & run_b.benchmarks.keys()):
        a, b = run_a.benchmarks[name], run_b.benchmarks[name]
        frame_a = scores_frame(s for f in a.scores.values() for s in f.rows)
        frame_b = scores_frame(s for f in b.scores.values() for s in f.rows)
        pairing = scenario_pairing(
            frame_a,
            frame_b,
            a.scenarios.rows if a.scenarios else None,
            b.scenarios.rows if b.scenarios else None,
        )
        benchmarks.append(
            BenchmarkComparison(
                benchmark=name,
                pairing=pairing,
                targets_only_a=sorted(a.scores.keys() - b.scores.keys()),
                targets_only_b=sorted(b.scores.keys() - a.scores.keys()),
                changes=compare_frames(
                    frame_a,
                    frame_b,
                    paired=pairing.paired,
                    names=(run_a.label, run_b.label),
                    confidence_level=confidence_level,
                ),
            )
        )
    return RunComparison(
        run_a=run_a.label,
        run_b=run_b.label,
        confidence_level=confidence_level,
        benchmarks=benchmarks,
        benchmarks_only_a=sorted(run_a.benchmarks.keys() - run_b.benchmarks.keys()),
        benchmarks_only_b=sorted(run_b.benchmarks.keys() - run_a.benchmarks.keys()),
        settings=setting_changes(run_a.manifests.values(), run_b.manifests.values()),
        totals_a=run_a.totals,
        totals_b=run_b.totals,
    )
