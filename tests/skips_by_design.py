"""The only tests that may skip when CI=true, each with the reason the skip is right.

Everything else that skips under CI=true fails instead (the hook below, which conftest.py
registers): a skip because a tool is missing means the tool was not installed, and the test it
guards would otherwise never run where the suite is judged. Keys are test ids without parameters.
"""

from __future__ import annotations

import os

import pytest

BY_DESIGN: dict[str, str] = {
    "tests/reliability/test_bad_input.py::test_data_file_without_read_permission":
        "root reads files whatever their permissions; the directory case covers unreadable input",
    "tests/llm/test_local_provider.py::"
    "test_a_plain_layout_loads_without_extra_buffer_types_and_answers_the_same":
        "on a CPU with Intel AMX the repacked layout this test compares against crashes llama.cpp",
}


def allowed_in_ci(nodeid: str) -> bool:
    return nodeid.split("[", 1)[0] in BY_DESIGN


def _unlisted_ci_skip(report) -> str | None:
    """The skip's reason, where CI=true and the skipped test or module is not listed."""
    if (os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail")
            and not allowed_in_ci(report.nodeid)):
        return report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    return None


def _message(reason: str) -> str:
    return (f"skipped under CI=true ({reason}); install what it names, or list the test in "
            "tests/skips_by_design.py with the reason the skip is right")


_skipped_modules: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true a test's skip that is not listed in BY_DESIGN fails, naming its reason."""
    outcome = yield
    report = outcome.get_result()
    if (reason := _unlisted_ci_skip(report)) is not None:
        report.outcome = "failed"
        report.longrepr = _message(reason)


def pytest_collectreport(report):
    """A whole module skipped at import (`pytest.importorskip` at module level) is remembered
    rather than failed, so collection goes on and every other test still runs. Under pytest-xdist
    the workers collect and the controller is handed each skipped module's report once: the
    controller remembers it too, names it and fails the run."""
    if (reason := _unlisted_ci_skip(report)) is not None:
        _skipped_modules.append(f"{report.nodeid}: {_message(reason)}")


def pytest_terminal_summary(terminalreporter):
    for line in _skipped_modules:
        terminalreporter.write_line(f"FAILED (module) {line}", red=True)


def pytest_sessionfinish(session):
    """The run's exit status is the controller's (a pytest-xdist worker has `workerinput`)."""
    if (_skipped_modules and session.exitstatus == 0
            and not hasattr(session.config, "workerinput")):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
