"""Deterministic instances of JSON schemas, so a mock provider can answer structured requests.

A structured-output call is only exercised end to end if the reply validates
against the schema the client asked for. Real providers guarantee that for
strict schemas; the mock has to earn it by construction. The generator covers
the subset that pydantic and the providers' strict modes emit: objects (nested,
required and optional properties, `additionalProperties` maps), `$ref` into
`$defs`/`definitions`, `allOf`/`anyOf`/`oneOf`, type lists (nullable), arrays
with `items`/`prefixItems` and `minItems`/`maxItems`/`uniqueItems`, strings with
`minLength`/`maxLength`/`enum`/`const`/common formats, integers and numbers with
inclusive or exclusive bounds and `multipleOf`, booleans and null. String
`pattern` is not honoured: no general regex inverter is worth its weight here.

Constraints stated at the end of a `description` as `{maxLength: 40, minimum: 1}`
are honoured too: the Anthropic SDK moves keywords its API does not enforce
there, for the model to follow, and then validates the reply against the
original pydantic model, so the mock must follow them as a model would.

The same schema and seed always give the same instance, so a test run is
reproducible and a response cache keyed on the request sees stable answers.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import uuid
from collections.abc import Mapping
from typing import Any

__all__ = ["schema_instance"]

# Deeper than this (counted in `$ref` hops and nested containers) the generator
# takes the smallest valid choice: optional properties dropped, arrays at
# minItems, the null branch of a union. Recursive schemas then terminate.
_MAX_DEPTH = 6

_WORDS = (
    "alpha",
    "bridge",
    "candle",
    "delta",
    "ember",
    "forest",
    "garden",
    "harbor",
    "island",
    "jungle",
    "kettle",
    "lantern",
    "meadow",
    "needle",
    "orchard",
    "pepper",
    "quartz",
    "river",
    "saddle",
    "timber",
    "umbrella",
    "valley",
    "willow",
    "yonder",
    "zephyr",
    "cobalt",
    "marble",
)


def schema_instance(schema: Mapping[str, Any] | bool, seed: int | str | bytes = 0) -> Any:
    """Return a value valid against `schema`, chosen deterministically from `seed`.

    Raises ValueError for a `$ref` that does not point into the schema itself.
    """
    if isinstance(seed, str):
        seed = seed.encode()
    if isinstance(seed, bytes):
        seed = int.from_bytes(hashlib.sha256(seed).digest()[:8], "big")
    root = schema if isinstance(schema, Mapping) else {}
    return _Generator(root, random.Random(seed)).generate(schema, 0)


class _Generator:
    def __init__(self, root: Mapping[str, Any], rng: random.Random):
        self.root = root
        self.rng = rng

    def generate(self, schema: Mapping[str, Any] | bool, depth: int) -> Any:
        if schema is True or schema == {}:
            return self._word()
        if schema is False:
            raise ValueError("the schema `false` admits no value")
        schema = self._flatten(schema)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(list(schema["enum"]))
        for union in ("anyOf", "oneOf"):
            if union in schema:
                return self.generate(self._pick_branch(schema[union], depth), depth + 1)
        kind = self._type_of(schema, depth)
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, depth)
        if kind == "string":
            return self._string(schema)
        if kind == "integer":
            return self._integer(schema)
        if kind == "number":
            return self._number(schema)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "null":
            return None
        raise ValueError(f"unsupported JSON schema type {kind!r}")

    # -- composition -------------------------------------------------------

    def _flatten(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        """Resolve `$ref` and merge `allOf` so the rest sees one plain schema."""
        out = dict(schema)
        seen: set[str] = set()
        while "$ref" in out:
            ref = out.pop("$ref")
            if ref in seen:
                raise ValueError(f"$ref cycle without a terminating branch at {ref!r}")
            seen.add(ref)
            out = {**self._resolve(ref), **out}
        if "allOf" in out:
            parts = [self._flatten(part) for part in out.pop("allOf")]
            for part in parts:
                out = _merge(out, part)
        return {**_description_hints(out.get("description")), **out}

    def _resolve(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#"):
            raise ValueError(f"only local $ref is supported, got {ref!r}")
        node: Any = self.root
        for token in [t for t in ref[1:].split("/") if t]:
            token = token.replace("~1", "/").replace("~0", "~")
            try:
                node = node[int(token)] if isinstance(node, list) else node[token]
            except (KeyError, IndexError, ValueError, TypeError):
                raise ValueError(f"$ref {ref!r} does not resolve inside the schema") from None
        return dict(node)

    def _pick_branch(self, branches: list[Any], depth: int) -> Any:
        null_branches = [b for b in branches if self._is_null(b)]
        others = [b for b in branches if not self._is_null(b)]
        if null_branches and (not others or depth >= _MAX_DEPTH or self.rng.random() < 0.2):
            return null_branches[0]
        return self.rng.choice(others)

    def _is_null(self, schema: Any) -> bool:
        return isinstance(schema, Mapping) and (
            schema.get("type") == "null" or ("const" in schema and schema["const"] is None)
        )

    def _type_of(self, schema: Mapping[str, Any], depth: int) -> str:
        kind = schema.get("type")
        if isinstance(kind, list):
            concrete = [k for k in kind if k != "null"]
            if "null" in kind and (not concrete or depth >= _MAX_DEPTH or self.rng.random() < 0.2):
                return "null"
            return self.rng.choice(concrete)
        if kind:
            return kind
        if "properties" in schema or "additionalProperties" in schema or "required" in schema:
            return "object"
        if "items" in schema or "prefixItems" in schema:
            return "array"
        if any(k in schema for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")):
            return "number"
        return "string"

    # -- containers --------------------------------------------------------

    def _object(self, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        properties: Mapping[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ()))
        out: dict[str, Any] = {}
        for name, sub in properties.items():
            if name in required or (depth < _MAX_DEPTH and self.rng.random() < 0.6):
                out[name] = self.generate(sub, depth + 1)
        extra = schema.get("additionalProperties")
        if not properties and isinstance(extra, Mapping) and depth < _MAX_DEPTH:
            low = schema.get("minProperties", 1)
            high = schema.get("maxProperties", low + 2)
            for i in range(self.rng.randint(low, max(low, high))):
                out[f"{self._word()}_{i}"] = self.generate(extra, depth + 1)
        return out

    def _array(self, schema: Mapping[str, Any], depth: int) -> list[Any]:
        prefix = list(schema.get("prefixItems", ()))
        items = schema.get("items", {})
        if isinstance(items, list):  # draft-04 tuple form
            prefix, items = items, schema.get("additionalItems", {})
        low = schema.get("minItems", 0)
        high = schema.get("maxItems")
        if depth >= _MAX_DEPTH:
            length = low
        else:
            floor = max(low, 1) if high is None or high >= 1 else low
            length = self.rng.randint(
                floor, min(high if high is not None else floor + 3, floor + 3)
            )
        if items is False:
            length = min(length, len(prefix))
        out = [self.generate(s, depth + 1) for s in prefix[:length]]
        unique = schema.get("uniqueItems", False)
        seen = {json.dumps(v, sort_keys=True) for v in out}
        tries = 0
        while len(out) < length and tries < 20 * length:
            tries += 1
            value = self.generate(items, depth + 1)
            key = json.dumps(value, sort_keys=True)
            if unique and key in seen:
                continue
            seen.add(key)
            out.append(value)
        return out

    # -- scalars -----------------------------------------------------------

    def _word(self) -> str:
        return self.rng.choice(_WORDS)

    def _string(self, schema: Mapping[str, Any]) -> str:
        fmt = schema.get("format")
        if fmt in _FORMATS:
            return _FORMATS[fmt](self.rng)
        low = schema.get("minLength", 0)
        high = schema.get("maxLength")
        if high is None:
            high = max(low, 48)
        target = self.rng.randint(min(max(low, 4), high), min(high, max(low, 48)))
        words: list[str] = []
        while len(" ".join(words)) < target:
            words.append(self._word())
        text = " ".join(words)[:target]
        if text.endswith(" "):
            text = text[:-1] + "a"
        return text

    def _integer(self, schema: Mapping[str, Any]) -> int:
        low, high = _bounds(schema)
        low = math.ceil(low) if low is not None else None
        high = math.floor(high) if high is not None else None
        if low is not None and (
            schema.get("exclusiveMinimum") is True or _excl(schema, "exclusiveMinimum", low)
        ):
            low += 1
        if high is not None and (
            schema.get("exclusiveMaximum") is True or _excl(schema, "exclusiveMaximum", high)
        ):
            high -= 1
        low, high = _default_range(low, high, 0, 100)
        step = schema.get("multipleOf")
        if step:
            first, last = math.ceil(low / step), math.floor(high / step)
            return int(self.rng.randint(first, last) * step)
        return self.rng.randint(low, high)

    def _number(self, schema: Mapping[str, Any]) -> float:
        low, high = _bounds(schema)
        low, high = _default_range(low, high, 0.0, 100.0)
        step = schema.get("multipleOf")
        if step:
            first, last = math.ceil(low / step), math.floor(high / step)
            candidates = [k * step for k in range(first, last + 1)]
            candidates = [c for c in candidates if _inside(schema, c)] or candidates
            return float(self.rng.choice(candidates))
        for _ in range(20):
            value = round(self.rng.uniform(low, high), 2)
            if low <= value <= high and _inside(schema, value):
                return value
        return (low + high) / 2


_HINT = re.compile(r"\{([^{}]*)\}\s*$")
_HINT_KEYWORDS = {
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
}


def _description_hints(description: Any) -> dict[str, Any]:
    """Numeric constraints from a trailing `{key: value, ...}` in a description."""
    match = _HINT.search(description) if isinstance(description, str) else None
    if match is None:
        return {}
    hints: dict[str, Any] = {}
    for part in match.group(1).split(","):
        key, _, value = (s.strip() for s in part.partition(":"))
        if key == "uniqueItems":
            hints[key] = value == "True"
        elif key in _HINT_KEYWORDS:
            try:
                number = float(value)
            except ValueError:
                continue
            hints[key] = int(number) if number.is_integer() else number
    return hints


def _merge(a: dict[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out = {**a, **b}
    if "properties" in a and "properties" in b:
        out["properties"] = {**a["properties"], **b["properties"]}
    if "required" in a and "required" in b:
        out["required"] = list(dict.fromkeys([*a["required"], *b["required"]]))
    return out


def _bounds(schema: Mapping[str, Any]) -> tuple[float | None, float | None]:
    low = schema.get("minimum")
    high = schema.get("maximum")
    emin = schema.get("exclusiveMinimum")
    emax = schema.get("exclusiveMaximum")
    if isinstance(emin, (int, float)) and not isinstance(emin, bool):
        low = emin if low is None else max(low, emin)
    if isinstance(emax, (int, float)) and not isinstance(emax, bool):
        high = emax if high is None else min(high, emax)
    return low, high


def _excl(schema: Mapping[str, Any], key: str, bound: float | None) -> bool:
    """Whether a draft-06 numeric exclusive bound is the binding one."""
    value = schema.get(key)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and bound == value


def _inside(schema: Mapping[str, Any], value: float) -> bool:
    emin, emax = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if emin is True:
        emin = schema.get("minimum")
    if emax is True:
        emax = schema.get("maximum")
    if isinstance(emin, (int, float)) and not isinstance(emin, bool) and value <= emin:
        return False
    return not (isinstance(emax, (int, float)) and not isinstance(emax, bool) and value >= emax)


def _default_range(low: Any, high: Any, lo_default: Any, span: Any) -> tuple[Any, Any]:
    if low is None and high is None:
        return lo_default, lo_default + span
    if low is None:
        return high - span, high
    if high is None:
        return low, low + span
    return low, high


def _date_time(rng: random.Random) -> str:
    return f"{_date(rng)}T{_time(rng)}Z"


def _date(rng: random.Random) -> str:
    return f"{rng.randint(2020, 2025)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _time(rng: random.Random) -> str:
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"


_FORMATS = {
    "date-time": _date_time,
    "date": _date,
    "time": _time,
    "email": lambda rng: f"{rng.choice(_WORDS)}{rng.randint(1, 99)}@example.com",
    "uri": lambda rng: f"https://example.com/{rng.choice(_WORDS)}/{rng.randint(1, 999)}",
    "uuid": lambda rng: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
}
