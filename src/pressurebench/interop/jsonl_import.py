"""Plain chat logs: one conversation per line, `{"id", "messages": [{"role", "content"}],
"group"?, "metadata"?}`. Needs nothing beyond the standard library."""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import ConfigError
from .records import ImportedConversation, build

KEYS = {"id", "messages", "group", "metadata"}


def read_jsonl(path: Path) -> list[ImportedConversation]:
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            if not line.strip():
                continue
            where = f"line {n}"
            try:
                raw = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(path, f"not JSON ({exc.msg}): not a chat log", where) from None
            if not isinstance(raw, dict) or "id" not in raw or "messages" not in raw:
                raise ConfigError(path, 'each line needs "id" and "messages"', where)
            unknown = sorted(set(raw) - KEYS)
            if unknown:
                raise ConfigError(path, f"unknown keys {unknown} (known: {sorted(KEYS)})", where)
            messages = raw["messages"]
            if not isinstance(messages, list) or not all(
                isinstance(m, dict) and isinstance(m.get("role"), str)
                and isinstance(m.get("content"), str) for m in messages
            ):
                raise ConfigError(path, '"messages" must be a list of {"role", "content"} '
                                  "with text content", f"{where}, sample '{raw['id']}'")
            metadata = raw.get("metadata") or {}
            if not isinstance(metadata, dict):
                raise ConfigError(path, '"metadata" must be an object', where)
            rows.append(build(str(path), raw["id"], [(m["role"], m["content"]) for m in messages],
                              group=raw.get("group"), metadata=metadata))
    return rows
