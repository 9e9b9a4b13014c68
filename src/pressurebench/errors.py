"""Errors a user can act on: each names the file and, where there is one, the field."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

# The command line's exit codes (docs/troubleshooting.md), under `dvc repro` too: 2 for a
# problem in the inputs or settings the user can fix, 3 for a stage above
# `run.max_error_rate`, 130 for a command stopped by Ctrl-C (128 + SIGINT, as a shell reports
# it), 1 for anything unexpected.
EXIT_UNEXPECTED = 1
EXIT_BAD_INPUT = 2
EXIT_TOO_MANY_ERRORS = 3
EXIT_INTERRUPTED = 130
# What a command stopped by Ctrl-C says, where no stage said more (`StageInterrupted`).
INTERRUPTED = ("stopped by Ctrl-C (SIGINT) before it finished; run it again to continue: model "
               "calls answered before the stop are cached and replayed for free, and calls "
               "still waiting for an answer were abandoned and are sent again")


class PressurebenchError(Exception):
    """Base class for errors reported to the user as one line, without a traceback; each kind
    carries the command line's exit code for it."""

    exit_code = EXIT_BAD_INPUT


class ConfigError(PressurebenchError):
    """A params, benchmark or artifact file is missing, unreadable or invalid."""

    def __init__(self, path: str | Path, message: str, field: str | None = None):
        self.path = str(path)
        self.field = field
        where = f"{self.path}: {field}" if field else self.path
        super().__init__(f"{where}: {message}")


class StageFailed(PressurebenchError):
    """A stage finished its artifacts but its error share is above `max_error_rate`."""

    exit_code = EXIT_TOO_MANY_ERRORS


def reported(exc: PressurebenchError | KeyboardInterrupt) -> int:
    """Say `exc` on stderr in its one line, as every command does, and give its exit code: a
    Ctrl-C that no stage turned into a `StageInterrupted` is said the same way, never as a
    traceback."""
    if isinstance(exc, KeyboardInterrupt):
        print(f"pressurebench: {INTERRUPTED}", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(f"pressurebench: {exc}", file=sys.stderr)
    return exc.exit_code


def field_path(loc: tuple, data: Any = None) -> str:
    """Render a pydantic error location as a dotted path (`models.gpt-4o.temperature`).

    A list item that carries an `id` (a benchmark's metric, a scenario) is named by it,
    `metrics[m02].definition`: the id is what the file's reader finds, a zero-based
    position is not. Without `data`, or for items without an id, the position is shown.
    """
    out = ""
    node = data
    for part in loc:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and 0 <= part < len(node) else None
            ident = item.get("id") if isinstance(item, dict) else None
            out += f"[{ident}]" if isinstance(ident, str) and ident else f"[{part}]"
            node = item
        else:
            out += ("." if out else "") + str(part)
            node = node.get(part) if isinstance(node, dict) else None
    return out or "<root>"


def _missing_field_meaning(model: type[BaseModel] | None, loc: tuple) -> str | None:
    """The description of the required field at `loc` in `model`, to say what it holds."""
    field = None
    for part in loc:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return None
        field = model.model_fields[part]
        annotation = field.annotation
        model = (annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel)
                 else None)
    return field.description if field is not None else None


def config_error_from_validation(
    path: str | Path, exc: ValidationError, prefix: str = "", data: Any = None,
    model: type[BaseModel] | None = None,
) -> ConfigError:
    """Turn pydantic's errors into a ConfigError naming file and field, one line per error.

    Every error is listed: fixing the first only to meet the next one costs a run each.
    A required field that is absent says what it holds (its description in `model`).
    """
    lines = []
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        field = field_path(loc, data)
        if prefix:
            field = f"{prefix}.{field}" if field != "<root>" else prefix
        msg = err.get("msg", "invalid")
        if err.get("type") == "missing":
            meaning = _missing_field_meaning(model, loc)
            msg = "Field required" + (f" (no default): {meaning}" if meaning else "")
        lines.append((field, msg))
    field, msg = lines[0]
    msg += "".join(f"\n{path}: {f}: {m}" for f, m in lines[1:])
    return ConfigError(path, msg, field)
