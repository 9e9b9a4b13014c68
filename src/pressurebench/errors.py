"""Errors a user can act on: each names the file and, where there is one, the field."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError


class PressurebenchError(Exception):
    """Base class for errors reported to the user as one line, without a traceback."""


class ConfigError(PressurebenchError):
    """A params, benchmark or artifact file is missing, unreadable or invalid."""

    def __init__(self, path: str | Path, message: str, field: str | None = None):
        self.path = str(path)
        self.field = field
        where = f"{self.path}: {field}" if field else self.path
        super().__init__(f"{where}: {message}")


class StageFailed(PressurebenchError):
    """A stage finished its artifacts but its error share is above `max_error_rate`."""


def field_path(loc: tuple) -> str:
    """Render a pydantic error location as a dotted path (`models.gpt-4o.temperature`, `metrics[2].type`)."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "<root>"


def config_error_from_validation(path: str | Path, exc: ValidationError, prefix: str = "") -> ConfigError:
    """Turn the first pydantic error into a one-line ConfigError naming file and field.

    The first error is enough to act on; listing all of them would bury it.
    """
    err = exc.errors()[0]
    loc = tuple(err.get("loc", ()))
    field = field_path(loc)
    if prefix:
        field = f"{prefix}.{field}" if field != "<root>" else prefix
    more = len(exc.errors()) - 1
    msg = err.get("msg", "invalid")
    if more:
        msg += f" (and {more} more error{'s' if more > 1 else ''})"
    return ConfigError(path, msg, field)
