"""Requests today's OpenAI and Anthropic models accept, checked against a server that refuses
what the real APIs refuse.

The mock server's rules and their sources are in `mock_providers.mock_llm_server`
("the providers' rules"):

- OpenAI reasoning models (o-series, gpt-5 family) refuse `max_tokens` ("Unsupported
  parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens'
  instead.") and a temperature or top_p other than 1 ("Unsupported value: 'temperature' does
  not support 0.7 with this model. Only the default (1) value is supported."); their hidden
  reasoning counts against `max_completion_tokens` and is reported in
  `usage.completion_tokens_details.reasoning_tokens` (OpenAI API reference and reasoning guide).
- Strict structured outputs take a subset of JSON Schema: every object sets
  `additionalProperties: false` and requires every property; other keywords are refused
  (OpenAI Structured Outputs guide, "Supported schemas").
- `json_object` needs the word "json" in the messages (OpenAI API reference, response_format).
- Unknown request fields are refused by both APIs.
- Recent Claude models refuse temperature together with top_p ("`temperature` and `top_p`
  cannot both be specified for this model. Please use only one."; Messages API reference:
  "You should either alter temperature or top_p, but not both"); temperature ranges 0 to 1;
  models after Claude Opus 4.6 refuse any of them ("`temperature` is deprecated for this
  model."; Anthropic's model deprecations page).

The registries here name models as a user would (no base_url): the official SDKs read
OPENAI_BASE_URL / ANTHROPIC_BASE_URL, which point them at the mock, so the requests are
exactly those the real services would receive.
"""

from __future__ import annotations

import asyncio

import anthropic
import openai
import pytest

from fakes import Script
from pressurebench.errors import ConfigError
from pressurebench.llm import ModelClient
from pressurebench.llm.types import RejectedError, RequestsRefused
from pressurebench.params import ModelSpec, load_params
from pressurebench.schemas import JudgeOutput, UserTurn

KEY_ENV = "PB_RULES_KEY"
MSGS = [{"role": "system", "content": "Judge the transcript."}, {"role": "user", "content": "hello"}]
REASONING = "gpt-5.4-mini"
CLAUDE = "claude-sonnet-4-6"


@pytest.fixture
def at_mock(mock_server, monkeypatch):
    """The official SDKs' default endpoints point at the mock server."""
    monkeypatch.setenv(KEY_ENV, mock_server.api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", mock_server.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", mock_server.anthropic_base_url)
    return mock_server


def spec(provider: str, model: str, **kw) -> ModelSpec:
    return ModelSpec(provider=provider, model=model, api_key_env=KEY_ENV, **kw)


def call(tmp_path, model_spec: ModelSpec, *, n: int = 1, schema=None, **client_kw):
    """`n` calls with distinct messages; their results."""
    client = ModelClient({"m": model_spec}, tmp_path / "cache", backoff_base_s=0.01,
                         max_retries=1, **client_kw)

    async def go():
        async with client:
            return await asyncio.gather(*(
                client.chat("m", [*MSGS[:-1], {"role": "user", "content": f"hello {i}"}], schema=schema)
                for i in range(n)
            ))

    return asyncio.run(go())


def last_body(server) -> dict:
    return server.request_log[-1].body


# --- the mock refuses what the real APIs refuse --------------------------------------------


def oa(server):
    return openai.OpenAI(api_key=server.api_key, base_url=server.openai_base_url, max_retries=0)


def test_reasoning_models_refuse_max_tokens_and_sampling_temperature(mock_server):
    with pytest.raises(openai.BadRequestError) as refused:
        oa(mock_server).chat.completions.create(model=REASONING, messages=MSGS, max_tokens=50)
    assert refused.value.body["param"] == "max_tokens" and refused.value.body["code"] == "unsupported_parameter"
    assert "Use 'max_completion_tokens' instead" in refused.value.body["message"]
    with pytest.raises(openai.BadRequestError) as refused:
        oa(mock_server).chat.completions.create(
            model="o4-mini", messages=MSGS, max_completion_tokens=50, temperature=0.7)
    assert refused.value.body["code"] == "unsupported_value"
    assert "Only the default (1) value is supported" in refused.value.body["message"]
    ok = oa(mock_server).chat.completions.create(
        model=REASONING, messages=MSGS, max_completion_tokens=500, reasoning_effort="low")
    assert ok.usage.completion_tokens_details.reasoning_tokens == mock_server.reasoning_tokens


def test_other_models_refuse_reasoning_effort_and_unknown_fields(mock_server):
    with pytest.raises(openai.BadRequestError, match="reasoning_effort"):
        oa(mock_server).chat.completions.create(model="gpt-4o", messages=MSGS, reasoning_effort="low")
    with pytest.raises(openai.BadRequestError, match="Unrecognized request argument supplied: frob"):
        oa(mock_server).chat.completions.create(model="gpt-4o", messages=MSGS, extra_body={"frob": 1})


@pytest.mark.parametrize(("schema", "complaint"), [
    ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
     "'additionalProperties' is required to be supplied and to be false"),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
      "required": ["a"], "additionalProperties": False}, "Missing 'b'"),
    ({"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}},
      "required": ["a"], "additionalProperties": False}, "'maxLength' is not permitted"),
])
def test_strict_mode_refuses_schemas_outside_its_subset(mock_server, schema, complaint):
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "strict": True, "schema": schema}}
    with pytest.raises(openai.BadRequestError, match=complaint):
        oa(mock_server).chat.completions.create(model="gpt-4o", messages=MSGS, response_format=fmt)


def test_json_object_needs_the_word_json(mock_server):
    with pytest.raises(openai.BadRequestError, match="must contain the word 'json'"):
        oa(mock_server).chat.completions.create(
            model="gpt-4o", messages=MSGS, response_format={"type": "json_object"})


def test_recent_claude_refuses_temperature_with_top_p_and_the_newest_any_sampling(mock_server):
    client = anthropic.Anthropic(api_key=mock_server.api_key, base_url=mock_server.anthropic_base_url,
                                 max_retries=0)
    user = [{"role": "user", "content": "hi"}]
    def create(model=CLAUDE, **sampling):  # the anthropic SDK 1.0 and later has no sampling arguments
        return client.messages.create(model=model, max_tokens=50, messages=user, extra_body=sampling)

    with pytest.raises(anthropic.BadRequestError, match="cannot both be specified"):
        create(temperature=0.5, top_p=0.9)
    with pytest.raises(anthropic.BadRequestError, match="less than or equal to 1"):
        create(temperature=1.5)
    with pytest.raises(anthropic.BadRequestError, match="Extra inputs are not permitted"):
        create(frob=1)
    with pytest.raises(anthropic.BadRequestError, match="`temperature` is deprecated for this model"):
        create(model="claude-opus-4-7", temperature=0.5)
    assert create(temperature=0.5).content and create(model="claude-opus-4-7").content


# --- our providers send what the models accept ----------------------------------------------


def test_reasoning_model_gets_completion_tokens_with_room_to_reason_and_no_temperature(at_mock, tmp_path):
    [result] = call(tmp_path, spec("openai", REASONING, reasoning_effort="low", max_tokens=300),
                    schema=JudgeOutput)
    assert result.ok, result.error
    body = last_body(at_mock)
    assert "max_tokens" not in body and "temperature" not in body and "top_p" not in body
    assert body["max_completion_tokens"] >= 300 + 4096  # the answer's budget plus room to reason
    assert body["reasoning_effort"] == "low"
    assert result.reasoning_tokens == at_mock.reasoning_tokens
    assert result.output_tokens > result.reasoning_tokens  # billed output includes the reasoning


def test_strict_structured_output_at_openai_sends_a_schema_strict_mode_accepts(at_mock, tmp_path):
    for schema in (JudgeOutput, UserTurn):
        [result] = call(tmp_path, spec("openai", "gpt-4o-2024-08-06"), schema=schema)
        assert result.ok, result.error
        fmt = last_body(at_mock)["response_format"]["json_schema"]
        assert fmt["strict"] is True
        sent = fmt["schema"]["properties"]["message" if schema is UserTurn else "justification"]
        assert "maxLength" not in sent and "characters" in sent["description"]
        assert "max_completion_tokens" in last_body(at_mock)


def test_reasoning_that_uses_up_the_limit_is_an_explicit_error(at_mock, tmp_path):
    """With no room to reason, the reply is empty and cut off: an error that says why."""
    [result] = call(tmp_path, spec("openai", "o3", reasoning_tokens=0, max_tokens=8))
    assert not result.ok
    assert "hidden reasoning used the whole token limit" in result.error
    assert "reasoning_tokens" in result.error


@pytest.mark.parametrize("mode", ["json_schema", "json_object", "tool", "prompt"])
def test_every_structured_form_gives_a_validated_answer_from_openai(at_mock, tmp_path, mode):
    [result] = call(tmp_path, spec("openai", "gpt-4o", structured_output=mode), schema=JudgeOutput)
    assert result.ok, result.error
    assert isinstance(result.parsed, JudgeOutput)
    body = last_body(at_mock)
    system = body["messages"][0]["content"]
    assert ("JSON schema" in system) == (mode in ("json_object", "prompt"))
    assert ("tools" in body) == (mode == "tool")


@pytest.mark.parametrize("mode", ["tool", "prompt"])
def test_claude_answers_in_both_forms_with_only_the_sampling_setting_it_was_given(at_mock, tmp_path, mode):
    [result] = call(tmp_path, spec("anthropic", CLAUDE, temperature=0.4, structured_output=mode),
                    schema=UserTurn)
    assert result.ok, result.error
    body = last_body(at_mock)
    assert body["temperature"] == 0.4 and "top_p" not in body


def test_compatible_servers_get_max_tokens_and_the_schema_as_written(mock_server, monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_ENV, mock_server.api_key)
    [result] = call(tmp_path, spec("openai", "llama-3.1-8b", base_url=mock_server.openai_base_url,
                                   max_tokens=100), schema=JudgeOutput)
    assert result.ok, result.error
    body = last_body(mock_server)
    assert body["max_tokens"] >= 100 and "max_completion_tokens" not in body
    fmt = body["response_format"]["json_schema"]
    assert "strict" not in fmt and fmt["schema"]["properties"]["justification"]["maxLength"] == 600


def test_extra_body_reaches_the_request(at_mock, tmp_path):
    [result] = call(tmp_path, spec("openai", "gpt-4o", extra_body={"service_tier": "flex"}))
    assert result.ok and last_body(at_mock)["service_tier"] == "flex"


def test_unset_temperature_is_left_out(at_mock, tmp_path):
    call(tmp_path, spec("openai", "gpt-4o"))
    assert "temperature" not in last_body(at_mock)
    call(tmp_path, spec("anthropic", CLAUDE))
    assert "temperature" not in last_body(at_mock) and "top_p" not in last_body(at_mock)


# --- refused requests fail fast; what the params cannot send is caught before any call ------


def test_a_request_refused_again_and_again_stops_after_three_calls(at_mock, tmp_path):
    """`reasoning: false` makes the client send a temperature the reasoning model refuses."""
    wrong = spec("openai", REASONING, reasoning=False, temperature=0.7, max_concurrency=1)
    with pytest.raises(RequestsRefused) as stopped:
        call(tmp_path, wrong, n=20)
    assert "does not support 0.7" in str(stopped.value) and "refused 3 times in a row" in str(stopped.value)
    assert at_mock.path_counts["/v1/chat/completions"] == 3


def test_refusals_that_differ_or_are_interrupted_by_answers_are_row_errors_not_a_stop(tmp_path):
    """Each prompt too long in its own way, or a refusal now and then, is no reason to stop."""
    script = Script(lambda mid, req: RejectedError(f"HTTP 400: prompt {req.messages[-1]['content']} too long"))
    client = ModelClient({"m": spec("openai", "gpt-4o", max_concurrency=1)}, tmp_path / "a",
                         provider_factory=script.factory())
    assert not any(r.ok for r in run_all(client, 6)) and len(script.calls) == 6
    alternate = Script(lambda mid, req: "fine" if len(alternate.calls) % 2 else RejectedError("HTTP 400: no"))
    client = ModelClient({"m": spec("openai", "gpt-4o", max_concurrency=1)}, tmp_path / "b",
                         provider_factory=alternate.factory())
    assert sum(r.ok for r in run_all(client, 6)) == 3 and len(alternate.calls) == 6


def run_all(client: ModelClient, n: int):
    async def go():
        async with client:
            return [await client.chat("m", [{"role": "user", "content": str(i)}]) for i in range(n)]

    return asyncio.run(go())


@pytest.mark.parametrize(("entry", "complaint"), [
    ({"provider": "anthropic", "model": CLAUDE, "temperature": 0.5, "top_p": 0.9}, "cannot both be specified"),
    ({"provider": "anthropic", "model": CLAUDE, "temperature": 1.5}, "from 0 to 1"),
    ({"provider": "anthropic", "model": "claude-sonnet-5", "top_p": 0.9}, "deprecated"),
    ({"provider": "openai", "model": REASONING, "temperature": 0.7}, "only the default temperature"),
    ({"provider": "openai", "model": "gpt-4o", "reasoning_effort": "low"}, "reasoning_effort is for reasoning"),
    ({"provider": "anthropic", "model": CLAUDE, "structured_output": "json_schema"}, "take `tool` or `prompt`"),
    ({"provider": "local", "model": "x", "structured_output": "prompt"}, "grammar"),
])
def test_params_reject_what_the_provider_refuses_before_any_call(project, entry, complaint):
    params = project.write_params(models={"a": entry, "b": {"provider": "local", "model": "x"}},
                                  roles={"generator": "b", "user": "b", "evaluator": "b"}, targets=["a"])
    with pytest.raises(ConfigError, match=complaint) as err:
        load_params(params)
    assert "models.a" in str(err.value)
