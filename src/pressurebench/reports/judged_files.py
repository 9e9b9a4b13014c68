"""The judged files of a benchmark, read and validated in one place: its metrics, the scenarios
its users played, and each target's conversations and scores, with the fidelity rows the
evaluate stage wrote beside them. The transcript browser shows them, and the labels are drawn
from and checked against them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..io import read_artifact, read_yaml_model
from ..paths import Layout
from ..schemas import (
    Benchmark,
    Conversation,
    ConversationFidelity,
    ConversationsFile,
    Metric,
    Scenario,
    ScenariosFile,
    Score,
    ScoresFile,
)


@dataclass(frozen=True)
class JudgedFiles:
    conversations: list[tuple[Path, list[Conversation]]]  # each file's rows, in the order read
    scores: list[Score]
    fidelity: list[ConversationFidelity]

    def all_conversations(self) -> list[Conversation]:
        return [c for _, rows in self.conversations for c in rows]


def metrics_of(layout: Layout) -> list[Metric]:
    """The metrics of the benchmark file the stages wrote (hand-written or generated)."""
    return read_yaml_model(layout.benchmark_file, Benchmark).metrics


def scenarios_in(path: str | Path) -> list[Scenario]:
    """The scenario rows of a scenarios file."""
    return read_artifact(path, ScenariosFile).rows


def read_judged_files(
    conversation_files: Sequence[str | Path], score_files: Sequence[str | Path] = (),
) -> JudgedFiles:
    """Every conversations file, then every scores file, as given (validated on read)."""
    conversations = [(Path(f), read_artifact(f, ConversationsFile).rows) for f in conversation_files]
    scores_files = [read_artifact(f, ScoresFile) for f in score_files]
    return JudgedFiles(
        conversations=conversations,
        scores=[s for f in scores_files for s in f.rows],
        fidelity=[row for f in scores_files for row in f.fidelity or []],
    )
