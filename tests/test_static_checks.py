"""The type checker and the linter, as `make test` and CI run them: zero findings.

mypy checks `src/` at the strictness `[tool.mypy]` in pyproject.toml declares, and ruff the
repository's Python with the rule set `[tool.ruff.lint]` declares; a finding fails the test
with the checker's own report. A `# type: ignore` names its error code (mypy's
`ignore-without-code`) and its reason, in a comment beside it or right above it.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

from support import REPO

IGNORE = re.compile(r"#\s*type:\s*ignore\[[a-z-, ]+\](?P<rest>.*)$")


def run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *command], cwd=REPO, capture_output=True,
                          text=True, timeout=600, check=False)


def test_mypy_finds_no_error_in_src():
    done = run("mypy")
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]
    assert "Success: no issues found" in done.stdout


def test_ruff_finds_nothing():
    done = run("ruff", "check", "--no-cache", "--output-format", "concise")
    assert done.returncode == 0, done.stdout[-8000:] + done.stderr[-2000:]


def test_the_declared_strictness_is_kept():
    with open(REPO / "pyproject.toml", "rb") as fh:
        mypy = tomllib.load(fh)["tool"]["mypy"]
    assert mypy["files"] == ["src/pressurebench"]
    for flag in ("no_implicit_optional", "strict_optional", "check_untyped_defs",
                 "warn_unused_ignores", "warn_redundant_casts", "warn_unreachable",
                 "strict_equality"):
        assert mypy[flag] is True, flag
    assert "ignore-without-code" in mypy["enable_error_code"]


def test_every_type_ignore_says_why():
    unexplained = []
    for path in sorted((REPO / "src").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines):
            match = IGNORE.search(line)
            if not match:
                continue
            above = [lines[k].strip() for k in range(max(0, n - 2), n)]
            if not (match["rest"].strip().startswith("#") or any(a.startswith("#") for a in above)):
                unexplained.append(f"{path.relative_to(REPO)}:{n + 1}")
    assert unexplained == [], "a `# type: ignore[code]` without its reason"
