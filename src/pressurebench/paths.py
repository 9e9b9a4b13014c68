"""Where every artifact lives. One place, so stages, DVC and reports agree.

The main arm writes under `data/<benchmark>/`; a validation arm writes the same
layout under `data/<benchmark>/validation/<arm>/`, and the judge probes write their edited
conversations and re-judged rows under `data/<benchmark>/validation/probes/runs/<target>/`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


def benchmark_source(benchmark: str, root: str | Path = ".") -> Path:
    """The hand-edited input definition; never overwritten."""
    return Path(root) / "benchmarks" / benchmark / "benchmark.yaml"


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

    def study_file(self, stage: str) -> Path:
        """A validation study's comparison artifact, `data/<benchmark>/<stage>.json`."""
        return self.root / f"{stage}.json"

    def probe_edits_file(self, target: str) -> Path:
        """The judge probes' edited conversations of one target (in the probes layout)."""
        return self.run_dir(target) / "probe_edits.json"

    def probe_scores_file(self, target: str) -> Path:
        """The judge probes' verdicts on one target's edited conversations (probes layout)."""
        return self.run_dir(target) / "probe_scores.json"


PROBES = "probes"


def probes_layout(data_dir: str | Path, benchmark: str) -> Layout:
    """Where the judge probes write: `data/<benchmark>/validation/probes/`."""
    return Layout(Path(data_dir), benchmark, PROBES)
