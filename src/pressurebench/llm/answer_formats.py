"""How a structured answer is asked for, in the forms providers and servers accept.

Every answer is validated against its pydantic model by the client whatever the
form, so a form only decides how much the server itself guarantees:

- OpenAI strict structured outputs guarantee the schema, but accept only a
  subset of JSON Schema (OpenAI's Structured Outputs guide, "Supported
  schemas"): every object lists all its properties in `required` and sets
  `additionalProperties: false`, and keywords outside the subset are refused.
  `strict_schema` rewrites a schema into that subset; a bound it has to drop
  (a string's length) is stated in the field's description instead, and still
  checked by the client.
- `json_object` and `prompt` forms give the schema in the prompt, so a server
  that only guarantees JSON (or nothing) still knows what to write.
"""

from __future__ import annotations

import copy
import json
from functools import lru_cache

# The JSON Schema keywords OpenAI's strict mode accepts (Structured Outputs guide,
# "Supported schemas": types, properties/required/additionalProperties, items, enum,
# const, anyOf, $defs/$ref, description and title; for strings pattern and format; for
# numbers minimum, maximum, their exclusive forms and multipleOf; for arrays minItems and
# maxItems).
STRICT_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "$defs", "$ref", "description", "title", "pattern", "format", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
})
_SUBSCHEMA_MAPS = ("properties", "$defs")
_SUBSCHEMA_LISTS = ("anyOf",)


def strict_schema(schema: dict) -> dict:
    """`schema` as OpenAI strict mode requires it (a new dict; `schema` is not changed)."""
    return _strict(copy.deepcopy(schema))


def _strict(node: dict) -> dict:
    notes = _length_note(node)
    for key in list(node):
        if key not in STRICT_KEYWORDS:
            del node[key]
    if notes:
        node["description"] = f"{node['description']} ({notes})" if node.get("description") else notes
    for key in _SUBSCHEMA_MAPS:
        for name, sub in node.get(key, {}).items():
            node[key][name] = _strict(sub)
    for key in _SUBSCHEMA_LISTS:
        if key in node:
            node[key] = [_strict(sub) for sub in node[key]]
    if isinstance(node.get("items"), dict):
        node["items"] = _strict(node["items"])
    if node.get("type") == "object" or "properties" in node:
        props = node.setdefault("properties", {})
        optional = [name for name in props if name not in node.get("required", [])]
        for name in optional:  # strict mode has no optional keys: an optional one may be null
            props[name] = {"anyOf": [props[name], {"type": "null"}]}
        node["required"] = list(props)
        node["additionalProperties"] = False
    return node


def _length_note(node: dict) -> str:
    low, high = node.get("minLength"), node.get("maxLength")
    if low and high:
        return f"{low} to {high} characters"
    if high is not None:
        return f"at most {high} characters"
    if low:
        return f"at least {low} characters"
    return ""


@lru_cache(maxsize=256)
def _instruction(schema_json: str) -> str:
    return (
        "Reply with only one JSON object that matches this JSON schema, with no other text "
        f"and no code fences:\n{schema_json}"
    )


def schema_instruction(schema: dict) -> str:
    return _instruction(json.dumps(schema, sort_keys=True, ensure_ascii=False))


def with_schema_instruction(messages: list[dict], schema: dict) -> list[dict]:
    """`messages` with the schema stated at the end of the system message (one is added if none).

    The system message, not a last user message, so the conversation's turns stay as
    they are and chat templates that want the system message first still get it there.
    """
    text = schema_instruction(schema)
    if messages and messages[0]["role"] == "system":
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{text}"}
        return [first, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]
