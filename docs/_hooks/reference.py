"""MkDocs hook: the references and the repository's tables, written from the code at build time.

A reference copied by hand drifts from the code it describes; one generated when the site is
built cannot. A page holds a marker line, `<!-- reference: NAME -->`, and the hook replaces it
with tables made from:

- `params`: the params schema (every field's type, default, bounds and `Field(description=...)`);
- `cli`: the command line's argparse parser;
- `packages`: the package's folders and top-level modules, layer by layer as
  `[tool.importlinter]` in pyproject.toml orders them, each described by its face (a folder's
  `__init__` docstring, a module's docstring) with the modules a folder holds;
- `make`: the Makefile's targets, each described by the comment above its rule;
- `extras`: the package's optional extras, each described by the comment above it in
  pyproject.toml.

Whatever a table cannot describe fails the build: a params field without a description, an
argument without help, a folder or module without a docstring, a make target without its
comment or a `.PHONY` target without a rule, an extra without its comment.

The code is found through stable names: the params schema through the package's
`pressurebench.params` module, the parser through the `pressurebench` console script's entry
point, the repository (pyproject.toml, the Makefile) as the folder the package is installed
from in development (`pip install -e`, as `make install` does).
"""

from __future__ import annotations

import argparse
import ast
import html
import importlib
import re
import tomllib
import types
import typing
from importlib.metadata import entry_points
from pathlib import Path

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

MARKER = re.compile(r"^<!-- reference: (?P<name>[a-z]+) -->$", re.MULTILINE)


class MissingDescription(ValueError):
    """A params field or command-line argument the reference cannot describe."""


# ---- the params schema -------------------------------------------------------------------------


def _type_name(annotation: object) -> str:
    """`int | None` → `integer or null`, `list[ModelId]` → `list of model id`, a Literal its values."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        base, *meta = args
        patterned = any(_pattern(m) for m in meta if isinstance(m, FieldInfo))
        return "id" if patterned else _type_name(base)
    if origin is typing.Literal:
        return " or ".join(f"`{a}`" for a in args)
    if origin in (typing.Union, types.UnionType):
        names = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(names) + (" or null" if type(None) in args else "")
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"mapping of {_type_name(args[0])} to {_type_name(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    return {int: "integer", float: "number", str: "text", bool: "boolean"}.get(
        annotation, getattr(annotation, "__name__", str(annotation)))


def _pattern(info: FieldInfo) -> str | None:
    return next((getattr(m, "pattern", None) for m in info.metadata if getattr(m, "pattern", None)),
                None)


def _metadata(info: FieldInfo, annotation: object) -> list[object]:
    """The constraints of a field and of the Annotated types it is made of (seeds, ids)."""
    found = list(info.metadata)
    if typing.get_origin(annotation) is typing.Annotated:
        for meta in typing.get_args(annotation)[1:]:
            found.extend(meta.metadata if isinstance(meta, FieldInfo) else [meta])
    elif typing.get_origin(annotation) in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found.extend(_metadata(FieldInfo(), arg))
    return found


def _is_text(annotation: object) -> bool:
    return annotation is str or str in typing.get_args(annotation)


def _bounds(info: FieldInfo, annotation: object) -> str:
    words = []
    for meta in _metadata(info, annotation):
        for attr, symbol in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(meta, attr, None)
            if value is not None:
                words.append(f"{symbol} {value:,}".replace(",", " "))
        unit = "characters" if _is_text(annotation) else "items"
        if isinstance(meta, annotated_types.MinLen) and meta.min_length == 1:
            words.append("not empty")
        elif isinstance(meta, annotated_types.MinLen) and meta.min_length:
            words.append(f"at least {meta.min_length} {unit}")
        if isinstance(meta, annotated_types.MaxLen):
            words.append(f"at most {meta.max_length} {unit}")
        if getattr(meta, "pattern", None):
            words.append(f"matches `{meta.pattern}`")
    return ", ".join(dict.fromkeys(words))


def _default(info: FieldInfo) -> str:
    if info.default_factory is not None:
        value = info.default_factory()
        return "—" if isinstance(value, BaseModel) else f"`{value!r}`"
    if info.default is PydanticUndefined:
        return "required"
    return "`null`" if info.default is None else f"`{info.default!r}`"


def _cell(text: str) -> str:
    """One table cell: on one line, `|` escaped, and `<` and `>` outside code spans shown as
    written (`<dir>/<benchmark>/` is a path, not an HTML tag)."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    parts[::2] = [html.escape(p, quote=False) for p in parts[::2]]
    return "`".join(parts)


def _section_model(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) is dict:
        value = typing.get_args(annotation)[1]
        if isinstance(value, type) and issubclass(value, BaseModel):
            return value
    return None


def params_tables(model: type[BaseModel], prefix: str = "") -> list[tuple[str, type, list[str]]]:
    """One table per section: (key path, model, rows); nested sections get their own table."""
    rows, nested = [], []
    for name, info in model.model_fields.items():
        key = f"{prefix}{name}"
        if not info.description:
            raise MissingDescription(
                f"params field `{key}` ({model.__name__}.{name}) has no Field(description=...)")
        rows.append(f"| `{name}` | {_cell(_type_name(info.annotation))} | {_default(info)} | "
                    f"{_cell(_bounds(info, info.annotation))} | {_cell(info.description)} |")
        section = _section_model(info.annotation)
        if section is not None:
            child = f"{key}.<id>." if typing.get_origin(info.annotation) is dict else f"{key}."
            nested.extend(params_tables(section, child))
    return [(prefix.rstrip(".") or "top level", model, rows), *nested]


def params_reference() -> str:
    params = importlib.import_module("pressurebench.params")
    out = []
    for key, model, rows in params_tables(params.Params):
        title = "Top level" if key == "top level" else f"`{key}`"
        doc = (model.__doc__ or "").strip().split("\n\n")[0]
        out += [f"### {title}", ""]
        if doc and key != "top level":
            out += [" ".join(doc.split()), ""]
        out += ["| key | type | default | bounds | what it does |",
                "|---|---|---|---|---|", *rows, ""]
    return "\n".join(out)


# ---- the command line --------------------------------------------------------------------------


def console_parser() -> argparse.ArgumentParser:
    """The parser behind the `pressurebench` console script, wherever its module lives."""
    (script,) = entry_points(group="console_scripts", name="pressurebench")
    module = importlib.import_module(script.module)
    return module.build_parser()


def _subcommands(parser: argparse.ArgumentParser, words: tuple[str, ...] = (),
                 aliases: tuple[str, ...] = ()):
    """Each command once, under its name, with the other names it answers to (argparse lists a
    command's aliases as choices of their own, each holding the command's one parser)."""
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not actions:
        yield words, parser, aliases
        return
    helps = {c.dest: c.help for c in actions[0]._choices_actions}
    names: dict[int, list[str]] = {}
    for name, sub in actions[0].choices.items():
        names.setdefault(id(sub), []).append(name)
    for first, *others in names.values():
        sub = actions[0].choices[first]
        sub.description = sub.description or helps.get(first)
        yield from _subcommands(sub, (*words, first), tuple(others))


def _argument_row(action: argparse.Action, command: str) -> str:
    if action.option_strings:
        name = ", ".join(f"`{o}`" for o in action.option_strings)
        if action.nargs != 0:
            name += f" `{action.metavar or action.dest.upper()}`"
    else:
        name = f"`{action.metavar or action.dest}`" + (" ..." if action.nargs == "+" else "")
    if action.choices:
        name += " (" + ", ".join(f"`{c}`" for c in action.choices) + ")"
    if not action.help:
        raise MissingDescription(f"`{command}` argument {name} has no help")
    default = ("required" if action.required or not action.option_strings
               else "" if action.default in (None, False) else f"`{action.default}`")
    return f"| {name} | {default} | {_cell(action.help or '')} |"


def cli_reference() -> str:
    parser = console_parser()
    out = []
    for words, sub, aliases in _subcommands(parser):
        command = " ".join((parser.prog, *words))
        out += [f"### `{command}`", "", _cell(sub.description or ""), ""]
        if aliases:
            also = ", ".join(f"`{' '.join((parser.prog, *words[:-1], a))}`" for a in aliases)
            out += [f"Also runs as {also}.", ""]
        usage = " ".join(sub.format_usage().split()).removeprefix("usage: ")
        out += ["```text", usage, "```", ""]
        arguments = [a for a in sub._actions if not isinstance(a, argparse._HelpAction)]
        if arguments:
            out += ["| argument | default | what it does |", "|---|---|---|",
                    *(_argument_row(a, command) for a in arguments), ""]
    return "\n".join(out)


# ---- the repository: the package map, the Makefile, the extras --------------------------------


def repository() -> Path:
    """The checkout the package is installed from (`src/pressurebench` in it)."""
    package = Path(importlib.import_module("pressurebench").__file__).parent
    root = package.parents[1]
    if not (root / "pyproject.toml").is_file():
        raise FileNotFoundError(f"{package} is not installed from a checkout (pip install -e .)")
    return root


def _summary(path: Path) -> str:
    """The first paragraph of a module's docstring, on one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not doc:
        raise MissingDescription(f"{path} has no docstring to describe it by")
    return " ".join(doc.split("\n\n")[0].split())


def layers(root: Path) -> list[list[str]]:
    """The package's layers, highest first, each its folders and top-level modules."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers"]
    return [re.split(r"\s*[:|]\s*", layer.strip()) for layer in contract["layers"]]


def package_map(root: Path | None = None) -> str:
    root = root or repository()
    package = root / "src" / "pressurebench"
    rows = []
    for number, names in enumerate(layers(root), start=1):
        for name in names:
            folder = package / name
            if (folder / "__init__.py").is_file():
                held = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
                held += sorted(f"{d.name}/" for d in folder.iterdir() if (d / "__init__.py").is_file())
                what = f"{_summary(folder / '__init__.py')} Holds: " + ", ".join(
                    f"`{m}`" for m in held) + "."
                rows.append(f"| {number} | `{name}/` | {_cell(what)} |")
            else:
                rows.append(f"| {number} | `{name}` | {_cell(_summary(package / f'{name}.py'))} |")
    return "\n".join(["| layer | folder or module | what it holds |", "|---|---|---|", *rows, ""])


def _described(lines: list[str], where: str, pattern: re.Pattern) -> dict[str, str]:
    """Each name `pattern` finds at the start of a line, with the comment lines right above it."""
    found = {}
    for i, line in enumerate(lines):
        match = pattern.match(line)
        if not match:
            continue
        comment = []
        j = i - 1
        while j >= 0 and lines[j].startswith("#"):
            comment.insert(0, lines[j].lstrip("#").strip())
            j -= 1
        if not comment:
            raise MissingDescription(f"{where}: `{match.group(1)}` has no comment above it")
        found[match.group(1)] = " ".join(comment)
    return found


def make_targets(root: Path | None = None) -> str:
    text = ((root or repository()) / "Makefile").read_text(encoding="utf-8")
    lines = text.splitlines()
    rules = _described(lines, "Makefile", re.compile(r"^([A-Za-z][\w-]*):(?!=)"))
    declared = [t for line in lines if line.startswith(".PHONY:") for t in line.split()[1:]]
    for target in declared:
        if target not in rules:
            raise MissingDescription(f"Makefile: `{target}` is declared .PHONY but has no rule")
    rows = [f"| `make {t}` | {_cell(what)} |" for t, what in rules.items()]
    return "\n".join(["| command | what it does |", "|---|---|", *rows, ""])


def extras(root: Path | None = None) -> str:
    text = ((root or repository()) / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[project.optional-dependencies]", 1)[1].split("\n[", 1)[0]
    found = _described(section.splitlines(), "pyproject.toml [project.optional-dependencies]",
                       re.compile(r"^([\w-]+) = \["))
    rows = [f"| `{name}` | {_cell(what)} |" for name, what in found.items()]
    return "\n".join(["| extra | what it brings |", "|---|---|", *rows, ""])


GENERATORS = {"params": params_reference, "cli": cli_reference, "packages": package_map,
              "make": make_targets, "extras": extras}


def render(markdown: str) -> str:
    """The page with every reference marker replaced by its generated reference."""
    return MARKER.sub(lambda m: GENERATORS[m.group("name")](), markdown)


def on_page_markdown(markdown: str, **_) -> str:
    return render(markdown)
