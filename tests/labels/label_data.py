"""Judged data for the labelling tests: two targets, two metrics, a panel of three judges.

Written with the package's own artifact models under the `project` fixture's
data directory, so the labelling code reads them as it reads a real run.
"""

from __future__ import annotations

from pathlib import Path

from pressurebench.io import write_artifact, write_yaml_model
from pressurebench.paths import Layout
from pressurebench.schemas import (
    Benchmark,
    Conversation,
    ConversationsFile,
    JudgeVerdict,
    Message,
    Score,
    ScoresFile,
    conv_id,
)
from support import TINY_BENCHMARK

TARGETS = ["target-a", "target-b"]
METRICS = {m["id"]: m for m in TINY_BENCHMARK["metrics"]}
JUDGES = ["judge", "judge-2", "judge-3"]
HOSTILE = (
    "<script>alert(1)</script> </script><script>document.title='PWNED'</script>"
    "<img src=x onerror=alert(1)> & \u2028"
)
JUSTIFICATION = "JUSTIFIED-BECAUSE-MARKER"
SYSTEM_PROMPT = "SYSTEM-PROMPT-MARKER"


def disagrees(i: int, n_disagree: int) -> bool:
    return i < n_disagree


def conversation(target: str, metric_id: str, i: int, hostile: bool = False) -> Conversation:
    sid = f"{metric_id}_s{i + 1:03d}_v01"
    reply = HOSTILE if hostile else f"Reply number {i}"
    return Conversation(
        conv_id=conv_id(sid, target, 0), scenario_id=sid, base_id=sid[:-4], metric_id=metric_id,
        target=target, sample=0, user_model="user", system_prompt=SYSTEM_PROMPT,
        transcript=[Message(role="system", content=SYSTEM_PROMPT),
                    Message(role="user", content=f"Push {i}"),
                    Message(role="assistant", content=reply)],
        status="ok", ended_by="max_turns", turns=1,
    )


def score(conv: Conversation, present: bool, disagree: bool, status: str = "ok") -> Score:
    metric = METRICS[conv.metric_id]
    common = {
        "conv_id": conv.conv_id, "scenario_id": conv.scenario_id, "base_id": conv.base_id,
        "metric_id": conv.metric_id, "scenario_metric_id": conv.metric_id,
        "metric_type": metric["type"], "target": conv.target, "sample": 0,
    }
    if status == "error":
        return Score(**common, status="error", error="no judge returned a verdict: timeout")
    votes = [present, present, not present if disagree else present]
    judges = [JudgeVerdict(model_id=j, present=v, justification=JUSTIFICATION, status="ok")
              for j, v in zip(JUDGES, votes)]
    passed = present if metric["type"] == "positive" else not present
    return Score(**common, present=present, passed=passed, status="ok",
                 justification=JUSTIFICATION, judges=judges)


def write_judged(
    root: Path, *, per_cell: int = 6, n_disagree: int = 2, errors: int = 1,
    hostile: bool = True,
) -> Layout:
    """data/tiny: per target and metric `per_cell` ok rows (the first `n_disagree` with a
    dissenting judge) and `errors` error rows; target-a's first m01 reply is hostile markup."""
    layout = Layout(root / "data", "tiny")
    write_yaml_model(layout.benchmark_file, Benchmark.model_validate(TINY_BENCHMARK))
    for target in TARGETS:
        convs, scores = [], []
        for metric_id in METRICS:
            for i in range(per_cell + errors):
                first = hostile and (target, metric_id, i) == ("target-a", "m01", 0)
                conv = conversation(target, metric_id, i, hostile=first)
                convs.append(conv)
                status = "error" if i >= per_cell else "ok"
                scores.append(score(conv, i % 2 == 0, disagrees(i, n_disagree), status))
        write_artifact(layout.conversations_file(target),
                       ConversationsFile(benchmark="tiny", target=target, rows=convs))
        write_artifact(layout.scores_file(target),
                       ScoresFile(benchmark="tiny", target=target, rows=scores))
    return layout
