"""Every command shown in README.md and on the site's pages runs as written, in some test.

The rule chosen: the tests read the commands from the pages (fenced `bash` blocks), rather
than keeping copies that could drift from them. Each block is run by one test, named in
`RUNNERS` below, that extracts it from its page and runs it as written (placeholders such as
`<repository-url>` filled in, each test says how); a new or edited block on any page fails
here until a test runs it. Two kinds of command are checked here instead of run:

- `make <target>`: `make repro` and `make test` are what the suite and the pipeline tests
  run (`make test` is the suite itself), so each target shown must exist in the Makefile and
  its recipe must expand (`make -n`, which prints the commands without running them).
- every `pressurebench ...` line and inline span on every page must be accepted by the
  command line's own parser, so a renamed command or option fails here, wherever it is shown.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import subprocess
from importlib import import_module
from importlib.metadata import entry_points

import pytest

from docs_support import REPO, Block, pages, shell_blocks

# page → (the test that runs its shell blocks as written, how many blocks it runs)
RUNNERS = {
    "docs/importing-transcripts.md": ("tests/pipeline/test_imported_target.py", 1),
    "docs/tutorial.md": ("tests/docs/test_tutorial.py", None),
    # "Your own study": the tutorial's commands, which its test runs; and `make` (checked here).
    "README.md": ("tests/docs/test_tutorial.py", 2),
    "docs/sharing-and-comparing.md": (
        "tests/pipeline/test_share_a_study.py tests/pipeline/test_compare_experiment.py", 3),
    "docs/inspect-and-release.md": ("tests/interop/test_docs_page.py", 2),
    "docs/experiments.md": ("tests/pipeline/test_experiments.py", 5),
}
# Inline spans that show a command's shape rather than a command (STAGE, [--target T], ...).
SHAPE = re.compile(r"[\[\]|…]|\.\.\.|<|\b[A-Z]{1,}\b")


def make_only(block: Block) -> bool:
    return all(line.startswith("make ") for line in block.commands())


def test_every_shell_block_is_run_by_a_test_or_is_a_make_target():
    unclaimed = [b for b in shell_blocks() if not make_only(b) and b.page not in RUNNERS]
    assert not unclaimed, [(b.page, b.body) for b in unclaimed]


@pytest.mark.parametrize("page", sorted(RUNNERS))
def test_each_runner_reads_its_page(page):
    """A runner names the page it runs and reads its blocks from it, not from a copy."""
    files, count = RUNNERS[page]
    sources = [(REPO / f).read_text(encoding="utf-8") for f in files.split()]
    for source in sources:
        assert page in source and ("recipes(" in source or "blocks(" in source)
    on_page = [b for b in shell_blocks() if b.page == page]
    assert on_page
    if count is not None:
        assert len(on_page) == count, "a block was added or removed: make its test run it"


def test_every_make_target_shown_exists_and_expands():
    shown = {line.split()[1] for b in shell_blocks() if make_only(b) for line in b.commands()}
    for page in pages():
        shown |= set(re.findall(r"`make ([a-z-]+)`", page.read_text(encoding="utf-8")))
    assert {"repro", "test", "docs"} <= shown
    env = {**os.environ, "PATH": os.environ["PATH"]}
    for target in sorted(shown):
        done = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True,
                              env=env, check=False)
        assert done.returncode == 0, (target, done.stderr)


def pressurebench_commands() -> list[tuple[str, str]]:
    """(page, command) for every `pressurebench ...` line of a shell block and inline span."""
    found = []
    for block in shell_blocks():
        found += [(block.page, c) for c in block.commands() if c.startswith("pressurebench ")]
    for page in pages():
        text = page.read_text(encoding="utf-8")
        for span in re.findall(r"`(pressurebench [^`]+)`", text):
            if not SHAPE.search(span.removeprefix("pressurebench ")):
                found.append((str(page.relative_to(REPO)), " ".join(span.split())))
    return found


def refused(commands: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The commands the `pressurebench` console script's parser refuses."""
    (script,) = entry_points(group="console_scripts", name="pressurebench")
    parser = import_module(script.module).build_parser()
    out = []
    for page, command in commands:
        words = shlex.split(command)[1:]
        if command_name(parser, words):
            continue  # a command named in prose (`pressurebench size`), not a command line
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                parser.parse_args(words)
        except SystemExit:
            out.append((page, command))
    return out


def command_name(parser: argparse.ArgumentParser, words: list[str]) -> bool:
    """Whether `words` are exactly the names of a command (`labels import`), nothing more."""
    for word in words:
        groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not groups or word not in groups[0].choices:
            return False
        parser = groups[0].choices[word]
    return bool(words)


def test_every_pressurebench_command_shown_is_one_the_parser_accepts():
    commands = pressurebench_commands()
    assert len(commands) > 20
    assert not refused(commands)


def test_a_command_the_parser_refuses_is_found():
    """The check above finds a renamed option or command."""
    shown = [("page.md", "pressurebench estimate --parameters params/pipeline.yaml"),
             ("page.md", "pressurebench sizes --half-width 0.05"),
             ("page.md", "pressurebench lables import"),
             ("page.md", "pressurebench estimate --params params/pipeline.yaml"),
             ("page.md", "pressurebench labels import")]
    assert refused(shown) == shown[:3]
