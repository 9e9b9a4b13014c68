"""The main arm's judged data as it is now: what labels are drawn from and checked against."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError
from ..io import read_artifact, read_yaml_model
from ..params import Params
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
from .judged import conv_key


@dataclass(frozen=True)
class JudgedData:
    benchmark: str
    metrics: dict[str, Metric]
    conversations: dict[str, Conversation]
    scores: dict[tuple[str, str], Score]  # (conv_id, judged metric id)
    conv_ids: dict[str, str]  # conversation key -> conversation id
    fidelity: dict[str, ConversationFidelity] = field(default_factory=dict)  # by conv_id
    scenarios: dict[str, Scenario] = field(default_factory=dict)  # read where fidelity was checked


def load_judged(params: Params, benchmark: str) -> JudgedData:
    """Metrics, conversations and scores of every target of the main arm, validated on read;
    where the evaluate stage checked fidelity, its rows and the scenarios the users played."""
    layout = Layout(params.data_dir, benchmark)
    metrics = {m.id: m for m in read_yaml_model(layout.benchmark_file, Benchmark).metrics}
    conversations: dict[str, Conversation] = {}
    scores: dict[tuple[str, str], Score] = {}
    conv_ids: dict[str, str] = {}
    fidelity: dict[str, ConversationFidelity] = {}
    for target in params.targets_of(benchmark):
        for conv in read_artifact(layout.conversations_file(target), ConversationsFile).rows:
            key = conv_key(conv.conv_id)
            if conv_ids.get(key, conv.conv_id) != conv.conv_id:
                raise ConfigError(
                    layout.conversations_file(target),
                    f"conversations '{conv_ids[key]}' and '{conv.conv_id}' share the key {key}; "
                    "labels could not tell them apart",
                )
            conv_ids[key] = conv.conv_id
            conversations[conv.conv_id] = conv
        scores_file = read_artifact(layout.scores_file(target), ScoresFile)
        for score in scores_file.rows:
            scores[(score.conv_id, score.metric_id)] = score
        fidelity.update((row.conv_id, row) for row in scores_file.fidelity or [])
    scenarios = (
        {sc.id: sc for sc in read_artifact(layout.scenarios_file, ScenariosFile).rows}
        if fidelity else {}
    )
    return JudgedData(benchmark, metrics, conversations, scores, conv_ids, fidelity, scenarios)
