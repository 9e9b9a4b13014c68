"""A token budget that cannot cut off a structured answer the schema allows.

Every string and list in the answer schemas is bounded, so the longest valid
answer is known in characters. A reply cut off inside its JSON is always an
error, so a structured call gets at least enough tokens for that longest
answer; the registry's `max_tokens` (set with chat replies in mind) still
applies when it is larger.
"""

from __future__ import annotations

import json
from functools import lru_cache

CHARS_PER_TOKEN_WORST = 2  # short words, punctuation and digits tokenise densely
JSON_OVERHEAD_TOKENS = 64
SCALAR_CHARS = {"boolean": 5, "integer": 20, "number": 24, "null": 4}


def max_answer_chars(schema: dict, root: dict | None = None) -> int | None:
    """Longest JSON text valid under `schema`, in characters; None when a string or list is unbounded."""
    root = root or schema
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return max_answer_chars(root.get("$defs", {}).get(name, {}), root)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            sizes = [max_answer_chars(s, root) for s in schema[key]]
            known = [s for s in sizes if s is not None]
            return None if len(known) < len(sizes) else max(known)
    if "enum" in schema:
        return max(len(json.dumps(v)) for v in schema["enum"])
    if "const" in schema:
        return len(json.dumps(schema["const"]))
    kind = schema.get("type")
    if kind == "string":
        # Escapes can double a character in the worst case; quotes add two.
        return 2 * schema["maxLength"] + 2 if "maxLength" in schema else None
    if kind == "array":
        item = max_answer_chars(schema.get("items", {}), root)
        if item is None or "maxItems" not in schema:
            return None
        return 2 + schema["maxItems"] * (item + 2)
    if kind == "object":
        total = 2
        for name, sub in schema.get("properties", {}).items():
            size = max_answer_chars(sub, root)
            if size is None:
                return None
            total += len(json.dumps(name)) + 2 + size + 2
        return total
    return SCALAR_CHARS.get(kind) if kind is not None else None


@lru_cache(maxsize=256)
def _budget(schema_json: str) -> int | None:
    chars = max_answer_chars(json.loads(schema_json))
    return None if chars is None else chars // CHARS_PER_TOKEN_WORST + JSON_OVERHEAD_TOKENS


def structured_budget(schema: dict, max_tokens: int) -> int:
    """`max_tokens`, raised to fit the schema's longest valid answer when that is known."""
    need = _budget(json.dumps(schema, sort_keys=True))
    return max_tokens if need is None else max(max_tokens, need)
