"""`pressurebench check` asks each endpoint for its model list before anything is spent.

A 404 from the list (a base URL that leads nowhere) and a model the list does not hold are
errors naming the model, the URL and the likely fix. The mock answers `GET /v1/models` as the
services do: OpenAI lists every model in one page
(https://platform.openai.com/docs/api-reference/models/list), Anthropic pages 20 models by
default with `has_more`/`last_id` and takes `limit` (1 to 1000) and `after_id`
(https://docs.claude.com/en/api/models-list); both answer `GET /v1/models/{model}` with 404
for a model they do not serve (https://docs.claude.com/en/api/models, which takes aliases).
"""

from __future__ import annotations

import anthropic
import openai
import pytest

from pressurebench.commands.cli import main
from support import tiny_params

KEY_ENV = "PB_CHECK_KEY"


def point_models_at(project, server, **changes) -> dict:
    models = tiny_params()["models"]
    for spec in models.values():
        spec.update(base_url=server.openai_base_url, api_key_env=KEY_ENV)
    for model_id, spec in changes.items():
        models[model_id] = {**models[model_id], **spec}
    project.write_params(models=models)
    return models


@pytest.fixture
def served(project, mock_server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, mock_server.api_key)
    mock_server.models = ("gen-model", "user-model", "judge-model", "target-a", "target-b")
    return mock_server


def test_a_base_url_the_models_endpoint_answers_404_is_an_error_naming_model_url_and_fix(
    project, served, capsys
):
    wrong = served.base_url + "/wrongpath/v1"
    point_models_at(project, served, judge={"base_url": wrong})
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert (f"model 'judge': GET {wrong}/models answered HTTP 404 (not found), so base_url "
            f"{wrong} does not lead to the openai API; an OpenAI-compatible base_url ends in the "
            "API's version path") in err
    assert "every endpoint answers" not in err


def test_a_model_the_endpoint_does_not_list_is_an_error_naming_model_url_and_fix(
    project, served, capsys
):
    point_models_at(project, served, **{"target-b": {"model": "target-bb"}})
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert (f"model 'target-b': 'target-bb' is not among the 5 models {served.openai_base_url}"
            "/models lists (gen-model, user-model, judge-model, target-a, target-b); set "
            "models.target-b.model to a name it lists, or base_url to the server that serves it"
            ) in err
    assert err.count("\n") == 1  # the other four models are listed


def test_an_anthropic_model_on_a_later_page_of_the_list_passes_and_an_unknown_one_fails(
    project, served, capsys
):
    served.models = (*(f"claude-old-{i}" for i in range(30)), "claude-haiku-4-5",
                     "gen-model", "user-model", "judge-model", "target-a", "target-b")
    anthropic_judge = {"provider": "anthropic", "model": "claude-haiku-4-5",
                       "base_url": served.anthropic_base_url}
    point_models_at(project, served, judge=anthropic_judge)
    assert main(["check"]) == 0
    assert "every endpoint answers" in capsys.readouterr().out
    pages = [e for e in served.request_log if e.path == "/v1/models" and e.provider == "anthropic"]
    assert len(pages) == 2  # 20 by default, then the rest after `last_id`

    point_models_at(project, served, judge={**anthropic_judge, "model": "claude-haiku-9"})
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert (f"model 'judge': 'claude-haiku-9' is not among the 36 models "
            f"{served.anthropic_base_url}/v1/models lists") in err


def test_the_mock_model_list_is_paged_and_refused_as_the_official_sdks_expect(mock_server):
    mock_server.models = tuple(f"claude-m{i:02d}" for i in range(45))
    client = anthropic.Anthropic(base_url=mock_server.anthropic_base_url,
                                 api_key=mock_server.api_key)
    first = client.models.list()
    assert len(first.data) == 20 and first.has_more and first.last_id == "claude-m19"
    assert [m.id for m in client.models.list()] == list(mock_server.models)  # SDK follows pages
    assert client.models.retrieve("claude-m44").id == "claude-m44"
    with pytest.raises(anthropic.NotFoundError):
        client.models.retrieve("claude-nope")
    with pytest.raises(anthropic.BadRequestError):
        client.models.list(limit=1001)

    oai = openai.OpenAI(base_url=mock_server.openai_base_url, api_key=mock_server.api_key,
                        max_retries=0)
    assert [m.id for m in oai.models.list()] == list(mock_server.models)
    with pytest.raises(openai.NotFoundError) as caught:
        oai.models.retrieve("gpt-nope")
    assert caught.value.code == "model_not_found"


def test_an_endpoint_that_lists_no_model_is_a_warning_naming_the_names_left_unchecked(
    project, served, capsys
):
    """Some OpenAI-compatible servers answer `GET /models` with an empty list: nothing to
    compare a name with, so the check passes but says which names it could not check (an
    error would leave only `--offline`, which skips every key and endpoint too)."""
    served.models = ()
    point_models_at(project, served)
    assert main(["check"]) == 0
    out = capsys.readouterr().out
    assert (f"warn  models 'gen', 'user', 'judge', 'target-a', 'target-b': "
            f"{served.openai_base_url}/models answers but lists no model, so the model names "
            "'gen-model', 'user-model', 'judge-model', 'target-a', 'target-b' could not be "
            "checked against it") in out
    assert out.index("warn  models") < out.index("ok  keys present and every endpoint answers")


def test_a_misspelled_model_is_named_before_any_call_and_a_run_anyway_stops_at_its_404(
    project, served, capsys
):
    """The server refuses a model it does not list as the services do (404 `model_not_found`):
    `check` names the model before anything is paid; a stage run anyway stops at the first
    refusal, labelled not found (exit 2), instead of making every call or blaming the key."""
    served.serves_listed_only = True
    point_models_at(project, served, **{"target-b": {"model": "target-bb"}})
    assert main(["check"]) == 2
    assert "model 'target-b': 'target-bb' is not among the 5 models" in capsys.readouterr().err
    assert not [e for e in served.request_log if e.path.endswith("/chat/completions")]

    for stage in ("gen_metrics", "gen_scenarios"):
        assert main(["run", stage, "--benchmark", "tiny"]) == 0
    served.reset()
    assert main(["run", "simulate", "--benchmark", "tiny", "--target", "target-b"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("pressurebench: ") and "target-bb" in err
    assert "HTTP 404" in err and "not found: this endpoint serves no model of this name" in err
    refused = [e for e in served.request_log if e.model == "target-bb"]
    # Calls already in flight when the first 404 came back are let finish; nothing after it.
    assert 1 <= len(refused) <= 8 and all(e.status == 404 for e in refused)
