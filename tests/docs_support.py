"""The documentation as the tests read it: the site's pages and README.md, their fenced blocks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from support import REPO

DOCS = REPO / "docs"

FENCE = re.compile(
    r"^(?P<indent>[ ]*)```(?P<lang>[\w-]*)(?P<attrs>[^\n]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$",
    re.MULTILINE | re.DOTALL,
)
TITLE = re.compile(r'title="(?P<title>[^"]+)"')


@dataclass(frozen=True)
class Block:
    """One fenced block: its language, its `title="..."` (a file's path) if any, its text."""

    page: str
    lang: str
    title: str | None
    body: str

    def commands(self) -> list[str]:
        """A shell block's command lines, a trailing comment dropped (`make repro   # ...`)."""
        lines = []
        for line in self.body.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line and not line.startswith("#"):
                lines.append(line)
        return lines


def pages() -> list[Path]:
    """README.md and every Markdown page of the site (the generated coverage tables too)."""
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    name = str(path.relative_to(REPO))
    found = []
    for match in FENCE.finditer(text):
        indent = len(match.group("indent"))
        body = "\n".join(line[indent:] for line in match.group("body").splitlines())
        title = TITLE.search(match.group("attrs"))
        found.append(Block(name, match.group("lang"), title and title.group("title"), body))
    return found


def shell_blocks() -> list[Block]:
    return [b for path in pages() for b in blocks(path) if b.lang in ("bash", "sh", "shell")]


def recipes(page: str) -> list[Block]:
    """The shell blocks of one page (`docs/tutorial.md`), in order: what a test runs as written."""
    return [b for b in blocks(REPO / page) if b.lang in ("bash", "sh", "shell")]
