"""The params keys dvc.yaml declares must be spelled out in the params file.

Pydantic fills in defaults, but DVC reads the YAML itself and refuses a stage
whose declared key is absent; `pressurebench check` says which key is missing
before `dvc repro` fails half-way.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError
from .io import read_yaml

_VAR = re.compile(r"\$\{([^}]+)\}")


def _lookup(data: Any, dotted: str) -> tuple[bool, Any]:
    node = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _expand(key: str, data: dict, items: dict[str, list[str]]) -> list[str]:
    """Interpolate `${var}` from the params and `${item.x}` over every value of the matrix."""
    keys = [key]
    for expr in _VAR.findall(key):
        out = []
        for k in keys:
            if expr.startswith("item."):
                values = items.get(expr.removeprefix("item."), [])
            elif expr == "item":
                values = items.get("", [])
            else:
                found, value = _lookup(data, expr)
                values = [str(value)] if found and not isinstance(value, (list, dict)) else []
            out += [k.replace("${" + expr + "}", v) for v in values]
        keys = out
    return keys


def declared_params(dvc_file: Path, params_file: Path) -> list[tuple[str, str]]:
    """(stage, key) for every param key dvc.yaml declares against `params_file`."""
    spec = yaml.safe_load(dvc_file.read_text(encoding="utf-8")) or {}
    data = read_yaml(params_file) or {}
    out = []
    for name, stage in (spec.get("stages") or {}).items():
        body = stage.get("do", stage)
        items: dict[str, list[str]] = {}
        if "foreach" in stage:
            items[""] = _expand_list(stage["foreach"], data)
        for axis, values in (stage.get("matrix") or {}).items():
            items[axis] = _expand_list(values, data)
        for entry in body.get("params") or []:
            if isinstance(entry, dict):
                for file, keys in entry.items():
                    if (dvc_file.parent / file).resolve() == Path(params_file).resolve():
                        out += [(name, k) for key in keys for k in _expand(key, data, items)]
    return out


def _expand_list(value: Any, data: dict) -> list[str]:
    if isinstance(value, str) and _VAR.fullmatch(value):
        found, resolved = _lookup(data, _VAR.fullmatch(value).group(1))
        return [str(v) for v in resolved] if found and isinstance(resolved, list) else []
    return [str(v) for v in value] if isinstance(value, list) else []


def check_declared_params(dvc_file: Path, params_file: Path) -> int:
    """Raise ConfigError for the first declared key the params file lacks; return how many were checked."""
    data = read_yaml(params_file) or {}
    declared = declared_params(dvc_file, params_file)
    for stage, key in declared:
        if not _lookup(data, key)[0]:
            raise ConfigError(
                params_file,
                f"missing, but dvc.yaml stage '{stage}' declares it (DVC needs every declared "
                "param written out in the file, even where pressurebench has a default)",
                key,
            )
    return len(declared)
