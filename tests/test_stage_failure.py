"""A failed stage still leaves a report that says what to do, and exits with a documented code."""

from __future__ import annotations

import html
import re
import socket

import pytest
import yaml

from pressurebench.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_TOO_MANY_ERRORS,
    EXIT_UNEXPECTED,
)
from pressurebench.pipeline.notebook_run import NotebookFailed, main, run_notebook
from pressurebench.pipeline.stage_failure import exit_code, fix_for, reason_pattern
from stages.test_simulate import scenario, seed_inputs
from support import REPO


def test_exit_codes_follow_the_command_line():
    assert exit_code("StageFailed") == EXIT_TOO_MANY_ERRORS == 3
    for name in ("ConfigError", "RequestsRefused", "ProviderAuthError", "ProviderNotFound",
                 "SpendingCapReached"):
        assert exit_code(name) == EXIT_BAD_INPUT == 2, name
    assert exit_code("ZeroDivisionError") == EXIT_UNEXPECTED == 1
    for name in ("StageInterrupted", "KeyboardInterrupt"):  # Ctrl-C, in a model call or not
        assert exit_code(name) == EXIT_INTERRUPTED == 130, name


def test_reasons_that_differ_only_in_numbers_and_names_group_together():
    a = "target 'gpt-x' failed at turn 2: HTTP 503 after 5 retries"
    b = "target 'gpt-y' failed at turn 4: HTTP 503 after 5 retries"
    assert reason_pattern(a) == reason_pattern(b) == (
        "target '…' failed at turn N: HTTP N after N retries"
    )


def test_hosts_ports_versions_and_model_names_keep_their_digits():
    reason = ("openai gpt-4o-mini at http://127.0.0.1:8765/v1: connection error: "
              "Cannot connect to host 127.0.0.1:8765 after 2.5 s")
    assert reason_pattern(reason) == (
        "openai gpt-4o-mini at http://127.0.0.1:8765/v1: connection error: "
        "Cannot connect to host 127.0.0.1:8765 after N s"
    )


@pytest.fixture
def api_params(tmp_path):
    from support import tiny_params

    models = tiny_params()["models"]
    models["target-a"].update(model="gpt-4o-mini", base_url="http://127.0.0.1:8765/v1",
                              api_key_env="LAB_OPENAI_KEY")
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(tiny_params(models=models)))
    return {"params_path": str(path), "benchmark": "tiny", "target": "target-a"}


@pytest.mark.parametrize("said, advice", [
    ("connection error: ClientConnectorError: Cannot connect to host 127.0.0.1:8765",
     "Nothing answered at http://127.0.0.1:8765/v1: is a server running there"),
    ("HTTP 401: Incorrect API key provided", "check the key in $LAB_OPENAI_KEY"),
    ("HTTP 404: The model `gpt-4o-mini` does not exist",
     ("The provider does not serve the model `target-a` (gpt-4o-mini) at "
      "http://127.0.0.1:8765/v1")),
    ("HTTP 400: Unsupported parameter: 'max_tokens'", "its own message is quoted below"),
])
def test_each_kind_of_failed_call_gets_its_own_fix(api_params, said, advice):
    reason = f"target 'target-a' failed at turn 1: openai gpt-4o-mini at http://127.0.0.1:8765/v1: {said}"
    assert advice in fix_for(reason, api_params)


def test_an_unknown_kind_of_failure_gets_no_invented_fix(api_params):
    assert fix_for("ZeroDivisionError: division by zero", api_params) is None


def test_a_fix_quotes_no_markup_from_a_provider_message(api_params):
    reason = "openai gpt-4o-mini at http://evil.example/<script>x</script>: connection error: refused"
    fix = fix_for(reason, api_params)
    assert "<script>" not in fix and "&lt;script&gt;" in fix


def page_text(page: str) -> str:
    """What a reader sees: the page without its tags, styles and scripts, spaces folded."""
    page = re.sub(r"<(style|script)\b.*?</\1>", " ", page, flags=re.DOTALL)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_a_stage_over_its_error_budget_leaves_a_report_with_its_reasons(
    project, mock_server, monkeypatch, capfd
):
    """The target's endpoint refuses connections: every conversation fails, the notebook stops
    with StageFailed, and the report says what to do and groups the error rows by reason."""
    from support import tiny_params

    monkeypatch.setenv("PB_KEY", mock_server.api_key)
    models = tiny_params()["models"]
    models["user"].update(base_url=mock_server.openai_base_url, api_key_env="PB_KEY")
    models["target-a"].update(base_url=f"http://127.0.0.1:{closed_port()}/v1",
                              api_key_env="PB_KEY", timeout_s=2)
    project.write_params(models=models, run={"max_error_rate": 0.0, "max_retries": 0,
                                             "cache_dir": ".pbcache", "data_dir": "data",
                                             "reports_dir": "reports"})
    seed_inputs([scenario(), scenario(variant=2)])
    code = main([str(REPO / "notebooks" / "03_simulate.ipynb"), "reports/tiny/runs/target-a/simulate",
                 "-p", "params_path", "params/pipeline.yaml", "-p", "benchmark", "tiny",
                 "-p", "target", "target-a"])
    assert code == EXIT_TOO_MANY_ERRORS
    err = capfd.readouterr().err  # the kernel's own output included
    assert "StageFailed" in err
    assert "KeyboardInterrupt" not in err and "without encryption" not in err
    page = (project.root / "reports/tiny/runs/target-a/simulate/03_simulate.html").read_text()
    assert "simulate failed (tiny · target-a)" in page
    assert "What to do:" in page and "run.max_error_rate" in page
    # The fix names the host and port nothing answered at; the file of the error rows is named,
    # and the first row's reason is quoted in full.
    port = models["target-a"]["base_url"].split(":")[2].split("/")[0]
    text = page_text(page)
    assert f"Nothing answered at http://127.0.0.1:{port}/v1 : is a server running there" in text
    assert "Error rows by reason" in page
    assert "2 error rows in data/tiny/runs/target-a/simulate/conversations.json" in text
    assert f"Cannot connect to host 127.0.0.1:{port}" in text
    assert "The error rows are in data/tiny/runs/target-a/simulate/conversations.json; the first, m0" in err
    # The sections after the failed cell never ran: no empty headings.
    assert "Provenance and cost" not in text
    assert "<title>simulate · tiny · target-a · FAILED</title>" in page
    assert "Models</strong> (main run of tiny)" in page  # which models, failed or not


@pytest.mark.slow
def test_bad_input_is_exit_2_with_a_report(project):
    """No conversations to judge: a ConfigError, exit code 2, and a report naming the file."""
    with pytest.raises(NotebookFailed) as failed:
        run_notebook(REPO / "notebooks" / "04_evaluate.ipynb", "reports/tiny/runs/target-a/evaluate",
                     {"params_path": "params/pipeline.yaml", "benchmark": "tiny",
                      "target": "target-a"})
    assert failed.value.code == EXIT_BAD_INPUT
    page = (project.root / "reports/tiny/runs/target-a/evaluate/04_evaluate.html").read_text()
    assert "evaluate failed" in page and "fix the file and field named below" in page
    assert "conversations.json" in page
