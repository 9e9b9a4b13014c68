"""The keys a row about one conversation carries of it (its scores, its fidelity row).

Every such row is found, joined and clustered by the same keys, so they are copied from the
conversation in one place: a row cannot carry a key under another name or miss one.
"""

from __future__ import annotations

from typing import Any

from ..schemas import Conversation


def conversation_keys(conv: Conversation) -> dict[str, Any]:
    """`conv`'s keys, as the keyword arguments of a row about it (its demographic a copy)."""
    return {
        "conv_id": conv.conv_id,
        "scenario_id": conv.scenario_id,
        "base_id": conv.base_id,
        "target": conv.target,
        "sample": conv.sample,
        "demographic": dict(conv.demographic),
    }
