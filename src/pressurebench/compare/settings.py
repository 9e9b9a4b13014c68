"""What differs between two runs' settings, as their stages' manifests recorded them.

Each manifest holds the params its stage read, the models it called (their
registry entries, system prompts included, and the versions providers
reported), its prompt templates' hashes and the Python and package versions, and
the inputs it read (files, ids). They are
flattened to dotted keys (`generation.turns`, `models.gpt-4o.temperature`,
`prompt.simulate_user`, `package.llama_cpp_python`) and every key whose value
differs, or that only one run has, is listed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..schemas import Manifest, Row


class SettingChange(Row):
    key: str
    value_a: str | None = None  # None: the run does not record it
    value_b: str | None = None
    stages: list[str]


def _flatten(prefix: str, value: Any, out: dict[str, str]) -> None:
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, out)
    else:
        out[prefix] = json.dumps(value, ensure_ascii=False, sort_keys=True)


def manifest_settings(manifest: Manifest) -> dict[str, str]:
    """One manifest's settings as dotted keys and JSON values."""
    out: dict[str, str] = {}
    _flatten("", manifest.params, out)
    _flatten("models", manifest.models, out)
    for model_id, versions in manifest.model_versions.items():
        out[f"model_versions.{model_id}"] = json.dumps(versions)
    _flatten("prompt", manifest.prompt_sha256, out)
    _flatten("package", manifest.packages, out)
    out["python"] = json.dumps(manifest.python_version)
    return out


def _label(manifest: Manifest) -> str:
    return "/".join(x for x in (manifest.stage, manifest.target) if x)


def run_settings(manifests: Iterable[Manifest]) -> dict[str, tuple[str, set[str]]]:
    """Every key any stage recorded, with its value and the stages that recorded it. Stages of
    one run read one params file, so they agree; where they do not (a stage run with other
    params and not re-run since), the value is each stage's, joined."""
    values: dict[str, dict[str, set[str]]] = {}
    for manifest in manifests:
        for key, value in manifest_settings(manifest).items():
            values.setdefault(key, {}).setdefault(value, set()).add(_label(manifest))
    return {
        key: (" | ".join(sorted(found)), set().union(*found.values()))
        for key, found in values.items()
    }


def setting_changes(
    manifests_a: Iterable[Manifest], manifests_b: Iterable[Manifest]
) -> list[SettingChange]:
    """Keys whose recorded value differs between the runs, or that one run does not record."""
    a, b = run_settings(manifests_a), run_settings(manifests_b)
    out = []
    for key in sorted(a.keys() | b.keys()):
        value_a, stages_a = a.get(key, (None, set()))
        value_b, stages_b = b.get(key, (None, set()))
        if value_a != value_b:
            out.append(
                SettingChange(
                    key=key, value_a=value_a, value_b=value_b, stages=sorted(stages_a | stages_b)
                )
            )
    return out
