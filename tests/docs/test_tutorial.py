"""The tutorial (docs/tutorial.md) runs as written, against servers as strict as the real APIs.

Its files are written where their blocks' titles say, and its shell blocks run one line at a
time, in order, in a fresh folder through the installed `pressurebench` command. The only
thing added is where the official SDKs send their requests: OPENAI_BASE_URL and
ANTHROPIC_BASE_URL (variables both SDKs read) point at the mock server, which refuses what
the real APIs refuse (each rule cited in tests/llm/test_provider_rules.py). The mock accepts
any key: the tutorial's `.env` holds placeholders, as a reader's copy of it would before
they paste their own.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from docs_support import DOCS, blocks
from mock_providers import MockLLMServer

pytestmark = pytest.mark.slow

TUTORIAL = DOCS / "tutorial.md"
VENV_BIN = Path(sys.executable).parent
MODELS = ("gpt-5.4-mini", "claude-sonnet-4-6", "gpt-4.1-mini", "claude-haiku-4-5")


def run_tutorial(root: Path, server: MockLLMServer) -> list[tuple[str, str]]:
    """Write the tutorial's files and run its commands; each command with what it printed."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{env['PATH']}",
               OPENAI_BASE_URL=server.openai_base_url,
               ANTHROPIC_BASE_URL=server.anthropic_base_url)
    ran = []
    for block in blocks(TUTORIAL):
        if block.title:
            path = root / block.title
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.body + "\n", encoding="utf-8")
        elif block.lang == "bash":
            for command in block.commands():
                done = subprocess.run(["bash", "-c", command], check=False, cwd=root, env=env,
                                      capture_output=True, text=True, timeout=600)
                assert done.returncode == 0, f"`{command}` exited {done.returncode}:\n{done.stderr}"
                ran.append((command, done.stdout))
    return ran


def test_the_tutorial_goes_from_a_benchmark_to_a_paper_table(tmp_path):
    with MockLLMServer(api_key=None, models=MODELS) as server:
        ran = run_tutorial(tmp_path, server)

    commands = [c for c, _ in ran]
    assert any(c.startswith("pressurebench check") for c in commands)
    assert commands.index(next(c for c in commands if "run aggregate" in c)) < commands.index(
        next(c for c in commands if c.startswith("pressurebench export")))
    refused = [(e.model, e.status) for e in server.request_log if e.status >= 400]
    assert not refused, refused
    assert {e.model for e in server.request_log if e.model} == set(MODELS)
    # "a few hundred model calls", as the page says
    assert 100 <= sum(e.path.endswith(("/chat/completions", "/messages"))
                      for e in server.request_log) <= 1000

    table = tmp_path / "reports" / "homework-help" / "export" / "tables" / "pass_rates.tex"
    latex = table.read_text(encoding="utf-8")
    assert "\\begin{table}" in latex and "\\toprule" in latex and "\\caption" in latex
    # What the page says of this design: rates without an interval, and the reason.
    csv = (table.parent / "pass_rates.csv").read_text(encoding="utf-8")
    assert "too few base scenarios" in csv
    checked = dict(ran)
    assert "every endpoint answers" in checked["pressurebench check --params params/homework.yaml"]
