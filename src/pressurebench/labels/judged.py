"""What the judge saw, shown to a rater as it was: the definition and the user/assistant turns.

`stages.evaluate.judge_messages` gives the judge the metric's definition (and its
examples under `evaluation.show_examples`) and the transcript's user and
assistant messages, dropping system messages. A rater gets the same, so a
disagreement between them is about the verdict, not about what each was shown.
"""

from __future__ import annotations

import hashlib
import json

from ..schemas import SPEAKER_LABELS, Conversation, Message, Metric
from .records import Turn

CONV_KEY_DIGITS = 12


def judged_turns(transcript: list[Message]) -> list[Turn]:
    """The messages the judge read, in order (the roles `judge_messages` keeps)."""
    return [Turn(role=m.role, content=m.content) for m in transcript if m.role in SPEAKER_LABELS]


def transcript_sha256(turns: list[Turn]) -> str:
    """Hash of exactly these turns (roles and text), as a label records them."""
    payload = json.dumps([t.model_dump() for t in turns], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def conversation_sha256(conv: Conversation) -> str:
    return transcript_sha256(judged_turns(conv.transcript))


def conv_key(conv_id: str) -> str:
    """A conversation's reference in pages and labels files: its id names the target."""
    return hashlib.sha256(conv_id.encode("utf-8")).hexdigest()[:CONV_KEY_DIGITS]


def item_key(conv_id: str, metric_id: str) -> str:
    return f"{conv_key(conv_id)}:{metric_id}"


def item_id(conv_id: str, metric_id: str) -> str:
    return f"{conv_id}:{metric_id}"


def examples_shown(metric: Metric, show_examples: bool) -> list[str]:
    return list(metric.examples) if show_examples else []
