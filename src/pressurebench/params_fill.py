"""The params keys dvc.yaml reads, and their defaults written into a params file.

DVC resolves dvc.yaml's `${...}` and `matrix:` from the params file itself, and refuses a
stage whose declared param the file lacks, before any of the package's code runs. So a key
the params model gives a default would still stop `dvc repro` when a file leaves it out (a
file written before the key existed, or one copied from a short example).
`pressurebench use` and `pressurebench check` write those keys' defaults into the file,
comments and order kept, so the params model and the pipeline read the same values.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import yaml

from .io import atomic_rewrite_text, read_text
from .params import Params

INTERPOLATION = re.compile(r"\$\{\s*([^${}]+?)\s*\}")

# Keys whose default the params model spells None but DVC needs as a value: None in the model
# stands for another key's value, which is what is written.
DVC_VALUES = {
    "validation.targets": lambda params: params.simulated_targets(),
}

FILLED_COMMENT = "default, written by pressurebench"


def dvc_read_keys(dvc_yaml: str | Path) -> tuple[list[str], list[str]]:
    """The dotted params keys dvc.yaml reads: the `${...}` expressions DVC interpolates (`item`
    aside, which DVC binds per stage) and the params its stages declare, each in file order."""
    stages = (yaml.safe_load(read_text(dvc_yaml)) or {}).get("stages") or {}

    def strings(node: Any):
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for key, value in node.items():
                yield from strings(key)
                yield from strings(value)
        elif isinstance(node, list):
            for value in node:
                yield from strings(value)

    interpolated = [expr for text in strings(stages) for expr in INTERPOLATION.findall(text)
                    if expr.split(".")[0] != "item"]
    declared = []
    for stage in stages.values():
        body = stage.get("do", stage) if isinstance(stage, dict) else {}
        for entry in body.get("params") or []:
            if isinstance(entry, dict):
                declared += [n for names in entry.values() for n in names
                             if isinstance(n, str) and "${" not in n]
    return list(dict.fromkeys(interpolated)), list(dict.fromkeys(declared))


def interpolates_from(dvc_yaml: str | Path, params_path: str | Path) -> bool:
    """Whether dvc.yaml resolves its `${...}` from `params_path` (listed in its `vars`, or the
    file a listed link points to)."""
    listed = (yaml.safe_load(read_text(dvc_yaml)) or {}).get("vars") or []
    files = [v.split(":")[0] for v in listed if isinstance(v, str)]
    return any(Path(f).resolve() == Path(params_path).resolve() for f in files)


def _lookup(data: Any, key: str) -> tuple[bool, Any]:
    node = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def absent_defaults(params_path: str | Path, params: Params,
                    dvc_yaml: str | Path = "dvc.yaml") -> dict[str, Any]:
    """Every key dvc.yaml reads that the file at `params_path` leaves out, with the value the
    params model gives it (a key DVC interpolates must also not be null)."""
    raw = yaml.safe_load(read_text(params_path))
    raw = raw if isinstance(raw, dict) else {}
    interpolated, declared = dvc_read_keys(dvc_yaml)
    model = params.model_dump(mode="json")
    out: dict[str, Any] = {}
    for key in dict.fromkeys(interpolated + declared):
        present, value = _lookup(raw, key)
        if present and (value is not None or key not in interpolated):
            continue
        if key in DVC_VALUES:
            out[key] = DVC_VALUES[key](params)
        else:
            known, default = _lookup(model, key)
            if not known or (default is None and key in interpolated):
                continue
            out[key] = default
        _place(raw, key, out[key])  # a section filled key by key is then present as a whole
    return out


def _place(data: dict, key: str, value: Any) -> None:
    *parents, leaf = key.split(".")
    for part in parents:
        if not isinstance(data.get(part), dict):
            data[part] = {}
        data = data[part]
    data[leaf] = value


def write_defaults(params_path: str | Path, values: dict[str, Any]) -> None:
    """Write `values` (dotted keys) into the params file (through a link, into its target),
    keeping its comments and key order; each written key says where it came from in a comment."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.representer import RoundTripRepresenter

    class _NullAsNull(RoundTripRepresenter):
        """Writes None as `null` (ruamel leaves the value empty), in this dump only."""

    _NullAsNull.add_representer(
        type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))

    rt = YAML()  # round-trip: comments, order and flow style kept
    rt.preserve_quotes = True
    rt.width = 100
    doc = rt.load(read_text(params_path))

    def styled(value: Any) -> Any:
        if isinstance(value, list):
            seq = CommentedSeq(styled(v) for v in value)
            seq.fa.set_flow_style()
            return seq
        if isinstance(value, dict):
            return CommentedMap((k, styled(v)) for k, v in value.items())
        return value

    rt.Representer = _NullAsNull
    added: dict[int, int] = {}  # keys added to each section so far, to keep their order
    for key, value in values.items():
        *parents, leaf = key.split(".")
        node = doc
        for part in parents:
            if not isinstance(node.get(part), dict):
                node[part] = CommentedMap()
            node = node[part]
        # A section written inline (`roles: {generator: a, ...}`) is written out a key a line:
        # a comment cannot end a line inside braces.
        if node is not doc and node.fa.flow_style():
            node.fa.set_block_style()
        # A section's own keys go first in it: blank lines after a section belong to its last
        # key, so a key added last would follow them.
        comment = None if isinstance(value, dict) else FILLED_COMMENT
        if node is doc:
            node[leaf] = styled(value)
            if comment:
                node.yaml_add_eol_comment(comment, leaf)
        else:
            at = added[id(node)] = added.get(id(node), -1) + 1
            node.insert(at, leaf, styled(value), comment=comment)
    out = io.StringIO()
    rt.dump(doc, out)
    atomic_rewrite_text(params_path, out.getvalue())


def fill_defaults(params_path: str | Path, params: Params,
                  dvc_yaml: str | Path = "dvc.yaml") -> dict[str, Any]:
    """Write the defaults of the keys dvc.yaml reads that the file lacks; what was written."""
    values = absent_defaults(params_path, params, dvc_yaml)
    if values:
        write_defaults(params_path, values)
    return values
