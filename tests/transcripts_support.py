"""Inspect eval logs built with inspect_ai's own API, and plain chat JSONL, for import tests."""

from __future__ import annotations

import json
from pathlib import Path


def inspect_log(path: Path, samples: list[dict], model: str = "openai/gpt-x") -> Path:
    """An Inspect log written by `write_eval_log`: each sample {id, messages: [(role, text)],
    epoch?, metadata?}."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalSample,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageSystem,
        ChatMessageTool,
        ChatMessageUser,
    )

    kinds = {"system": ChatMessageSystem, "user": ChatMessageUser,
             "assistant": ChatMessageAssistant, "tool": ChatMessageTool}
    spec = EvalSpec(created="2026-01-01T00:00:00+00:00", task="chat", dataset=EvalDataset(),
                    model=model, config=EvalConfig())
    log = EvalLog(eval=spec, status="success", samples=[
        EvalSample(id=s["id"], epoch=s.get("epoch", 1), input="", target="",
                   messages=[kinds[r](content=t) for r, t in s["messages"]],
                   metadata=s.get("metadata", {}))
        for s in samples
    ])
    write_eval_log(log, str(path))
    return path


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def chat(user: str = "Please agree with me.", reply: str = "I see your point, but no.") -> list:
    return [("system", "You are helpful."), ("user", user), ("assistant", reply)]
