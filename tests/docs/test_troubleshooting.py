"""docs/troubleshooting.md covers every failure kind a stage's report knows, from the code.

The stage failure report (`stage_failure`) gives advice by error class (`ADVICE`) and, for a
failed call, by what its reason says (`FIXES`); a native crash exits 4. Each needs a section
with its cause and remedy: a class by a heading that names it, a kind of reason by a heading
its pattern matches (the heading reads like the reason: "HTTP 429 or rate limit").
"""

from __future__ import annotations

import re

from docs_support import DOCS
from pressurebench.pipeline import stage_failure

PAGE = DOCS / "troubleshooting.md"


def sections() -> dict[str, str]:
    """Each `###` heading with its text up to the next heading."""
    parts = re.split(r"^### (.+)$", PAGE.read_text(encoding="utf-8"), flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_every_error_class_the_report_advises_on_has_a_cause_and_a_remedy():
    found = sections()
    for name in stage_failure.ADVICE:
        body = found.get(f"`{name}`")
        assert body is not None, f"no section for {name}"
        assert "**Cause.**" in body and "**Remedy.**" in body, name


def test_every_kind_of_failed_call_the_report_knows_has_a_section():
    headings = list(sections())
    for pattern, _ in stage_failure.FIXES:
        matching = [h for h in headings if pattern.search(h)]
        assert matching, f"no section whose heading matches {pattern.pattern}"
        for heading in matching:
            assert "**Remedy.**" in sections()[heading]


def test_the_exit_codes_on_the_page_are_the_command_lines():
    from pressurebench import errors
    from pressurebench.pipeline.native_crash import EXIT_NATIVE_CRASH

    text = PAGE.read_text(encoding="utf-8")
    for code, kind in ((errors.EXIT_BAD_INPUT, "inputs or settings"),
                       (errors.EXIT_TOO_MANY_ERRORS, "run.max_error_rate"),
                       (EXIT_NATIVE_CRASH, "crashed natively"),
                       (errors.EXIT_INTERRUPTED, "Ctrl-C"),
                       (errors.EXIT_UNEXPECTED, "unexpected")):
        row = next(line for line in text.splitlines() if line.startswith(f"| {code} |"))
        assert kind in row, (code, row)
    assert "### Native crash" in text and "### Unexpected error" in text
