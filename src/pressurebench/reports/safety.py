"""Keeping model text inert in the HTML pages this package writes.

Model replies, personas and judge justifications are untrusted: a transcript
can contain `</script><script>...`. Data goes into a page either through
Jinja's autoescaping or as JSON inside `<script type="application/json">`,
with every character that could close the element or start markup written as
a JSON escape, so the parser never sees it. Pages also carry a Content
Security Policy that allows no network access and only the page's own inline
script, as a second line of defence should an escape ever be missed.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import jinja2

from ..io import atomic_write_text

TEMPLATES = Path(__file__).parent / "templates"

_JSON_IN_HTML = {
    ord("<"): "\\u003c",
    ord(">"): "\\u003e",
    ord("&"): "\\u0026",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def write_page(path: str | Path, page: str) -> Path:
    """Write a finished page to `path` (atomically: a reader never opens half a page) and give
    where it went."""
    path = Path(path)
    atomic_write_text(path, page)
    return path


def json_for_script(data: Any) -> str:
    """JSON safe to place verbatim between `<script type="application/json">` tags.

    `<`, `>` and `&` can only occur inside JSON strings, where their `\\uXXXX`
    forms mean the same, so `JSON.parse` returns the original text.
    """
    return json.dumps(data, ensure_ascii=False, sort_keys=True).translate(_JSON_IN_HTML)


def script_hash(source: str) -> str:
    """The CSP source expression that allows exactly this inline script."""
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode()}'"


def content_security_policy(*inline_scripts: str) -> str:
    """No network, no plugins, no forms; inline styles and data: images; only the given scripts."""
    scripts = " ".join(script_hash(s) for s in inline_scripts) or "'none'"
    return (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src {scripts}; base-uri 'none'; form-action 'none'"
    )


def template_env() -> jinja2.Environment:
    """Jinja environment over the package's templates, autoescaping every value."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def read_template_asset(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")
