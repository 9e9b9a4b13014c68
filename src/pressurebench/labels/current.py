"""The main arm's judged data as it is now: what labels are drawn from and checked against."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import ConfigError
from ..params import Params
from ..paths import Layout
from ..reports.judged_files import metrics_of, read_judged_files, scenarios_in
from ..schemas import (
    Conversation,
    ConversationFidelity,
    Metric,
    Scenario,
    Score,
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
    metrics = {m.id: m for m in metrics_of(layout)}
    conversations: dict[str, Conversation] = {}
    conv_ids: dict[str, str] = {}
    targets = params.targets_of(benchmark)
    judged = read_judged_files([layout.conversations_file(t) for t in targets],
                               [layout.scores_file(t) for t in targets])
    for path, rows in judged.conversations:
        for conv in rows:
            key = conv_key(conv.conv_id)
            if conv_ids.get(key, conv.conv_id) != conv.conv_id:
                raise ConfigError(
                    path,
                    f"conversations '{conv_ids[key]}' and '{conv.conv_id}' share the key {key}; "
                    "labels could not tell them apart",
                )
            conv_ids[key] = conv.conv_id
            conversations[conv.conv_id] = conv
    scores = {(score.conv_id, score.metric_id): score for score in judged.scores}
    fidelity = {row.conv_id: row for row in judged.fidelity}
    scenarios = (
        {sc.id: sc for sc in scenarios_in(layout.scenarios_file)}
        if fidelity else {}
    )
    return JudgedData(benchmark, metrics, conversations, scores, conv_ids, fidelity, scenarios)
