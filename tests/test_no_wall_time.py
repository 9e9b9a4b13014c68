"""No test asserts wall time, and no test bounds a wait below `support.WAIT_S`.

A clock in an assertion fails on a machine busy with other work, where everything is slower;
how fast something runs belongs in perf/. A test waits for the state it asserts, and only a
hang may end the wait: read off the tests' source, every `assert` reads no clock, and every
`timeout=` given as a number to a call is at least WAIT_S (a client's timeout against a server
that is meant to hang is not a wait, and is written as a name or an attribute).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from support import WAIT_S

TESTS = Path(__file__).resolve().parent
CLOCKS = {"time", "monotonic", "perf_counter", "monotonic_ns", "perf_counter_ns", "time_ns"}
# Calls that wait for something outside the test: a process, a thread, a page.
WAITS = {"run", "communicate", "wait", "urlopen", "join", "check_output", "call"}


def sources() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "mock_providers" not in p.parts)


def reads_a_clock(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr in CLOCKS and isinstance(n.func.value, ast.Name)
               and n.func.value.id == "time" for n in ast.walk(node))


def clock_names(tree: ast.AST) -> set[str]:
    """Names assigned from a clock or from arithmetic on one (`start`, `elapsed`)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and reads_a_clock(node.value):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


# Tests that still time what they assert with the real clock, each to read a clock of its own
# instead: a client's back-off, and two coverage sweeps. Listed by name; nothing else may.
SWEEPS = "stats/test_capitulation_coverage.py::"
STILL_TIMED = {
    "llm/test_client.py::test_retry_then_success_and_retry_after_is_honoured",
    SWEEPS + "test_capitulation_rules_are_never_below_what_the_sweep_measures",
    SWEEPS + "test_sensitivity_rule_is_never_below_what_the_sweep_measures",
}


def enclosing_functions(tree: ast.AST) -> dict[int, str]:
    """The name of the top-level function each line lies in."""
    lines = {}
    for node in tree.body if isinstance(tree, ast.Module) else []:
        if isinstance(node, ast.FunctionDef):
            lines.update((n, node.name) for n in range(node.lineno, node.end_lineno + 1))
    return lines


def findings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    timed = clock_names(tree)
    within = enclosing_functions(tree)
    name = path.relative_to(TESTS).as_posix()
    found = []
    for node in ast.walk(tree):
        clocked = isinstance(node, ast.Assert) and (reads_a_clock(node.test) or any(
            isinstance(n, ast.Name) and n.id in timed for n in ast.walk(node.test)))
        if clocked and f"{name}::{within.get(node.lineno)}" not in STILL_TIMED:
            found.append(f"{name}:{node.lineno}: asserts a clock reading")
        if isinstance(node, ast.Call):
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
                node.func, "id", None)
            for kw in node.keywords:
                if (called in WAITS and kw.arg == "timeout" and isinstance(kw.value, ast.Constant)
                        and isinstance(kw.value.value, (int, float)) and kw.value.value < WAIT_S):
                    found.append(f"{name}:{node.lineno}: waits at most {kw.value.value} s")
    return found


def test_the_check_finds_what_it_looks_for(tmp_path, monkeypatch):
    monkeypatch.setattr(__import__(__name__), "TESTS", tmp_path)
    sample = tmp_path / "sample.py"
    sample.write_text("import time, subprocess\nstart = time.monotonic()\n"
                      "subprocess.run(['x'], timeout=60)\nassert time.monotonic() - start < 3\n"
                      "elapsed = time.perf_counter() - start\nassert elapsed >= 0.4\n")
    assert sorted(f.split(": ", 1)[1] for f in findings(sample)) == [
        "asserts a clock reading", "asserts a clock reading", "waits at most 60 s"]


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(TESTS)))
def test_no_test_asserts_wall_time_or_waits_briefly(path):
    assert findings(path) == []
