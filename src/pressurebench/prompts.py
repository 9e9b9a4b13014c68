"""Prompt templates: Jinja files inside the package, hashed into every manifest.

Keeping prompts as files (not string literals scattered over stages) makes them
reviewable as text, and their hash says exactly which wording produced a run.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

import jinja2

_ENV = jinja2.Environment(
    undefined=jinja2.StrictUndefined, keep_trailing_newline=False, trim_blocks=True, lstrip_blocks=True
)


@cache
def template_text(name: str) -> str:
    return resources.files("pressurebench").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")


def prompt_sha256(name: str) -> str:
    return hashlib.sha256(template_text(name).encode("utf-8")).hexdigest()


@cache
def _template(name: str) -> jinja2.Template:
    """Compiled once: compiling costs far more than rendering, and stages render per call."""
    return _ENV.from_string(template_text(name))


def render(name: str, **values) -> str:
    """Render template `name`; a missing value is an error, never an empty string."""
    return _template(name).render(**values).strip()


def prompt_hashes(names: list[str]) -> dict[str, str]:
    return {name: prompt_sha256(name) for name in names}
