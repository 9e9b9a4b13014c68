"""Where every artifact lives. One place, so stages, DVC and reports agree.

The main arm writes under `data/<benchmark>/`; a validation arm writes the same
layout under `data/<benchmark>/validation/<arm>/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def benchmark_source(benchmark: str, root: str | Path = ".") -> Path:
    """The hand-edited input definition; never overwritten."""
    return Path(root) / "benchmarks" / benchmark / "benchmark.yaml"


def inspect_logs_dir(reports_dir: str | Path, benchmark: str) -> Path:
    """Where `pressurebench export inspect` writes a benchmark's Inspect eval logs by default."""
    return Path(reports_dir) / benchmark / "inspect"


# Normalized copies of imported conversations (`pressurebench import`), tracked in git. The
# folder always exists (its README says what it holds): every simulate stage depends on it, and
# a dependency that does not exist is an error to DVC.
IMPORTS_DIR = "imports"


def imported_file(benchmark: str, target: str, root: str | Path = ".") -> Path:
    """The normalized, validated copy of the conversations imported as `target`'s."""
    return Path(root) / IMPORTS_DIR / benchmark / f"{target}.json"


@dataclass(frozen=True)
class Layout:
    data_dir: Path
    benchmark: str
    arm: str | None = None

    @property
    def root(self) -> Path:
        base = Path(self.data_dir) / self.benchmark
        return base / "validation" / self.arm if self.arm else base

    @property
    def benchmark_file(self) -> Path:
        return self.root / "benchmark.yaml"

    @property
    def scenarios_file(self) -> Path:
        return self.root / "scenarios.json"

    def run_dir(self, target: str) -> Path:
        return self.root / "runs" / target

    def conversations_file(self, target: str) -> Path:
        return self.run_dir(target) / "conversations.json"

    def scores_file(self, target: str) -> Path:
        return self.run_dir(target) / "scores.json"

    def manifest_file(self, stage: str, target: str | None = None) -> Path:
        base = self.run_dir(target) if target else self.root
        return base / f"{stage}.manifest.json"

    def cost_file(self, stage: str, target: str | None = None) -> Path:
        base = self.run_dir(target) if target else self.root
        return base / f"{stage}.cost.json"

    def calls_file(self, stage: str, target: str | None = None) -> Path:
        """The model calls the stage's last run used (`llm.call_record`), versioned by DVC."""
        base = self.run_dir(target) if target else self.root
        return base / f"{stage}.calls.jsonl"

    @property
    def results_file(self) -> Path:
        return self.root / "results.json"
