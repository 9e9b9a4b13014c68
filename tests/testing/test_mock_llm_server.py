"""The mock provider server, driven through the official OpenAI and Anthropic SDKs.

What the SDKs raise or return here is what provider integration code sees in
its own tests, so each fault is checked in the SDK's terms.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.error
import urllib.request
from enum import Enum
from pathlib import Path
from typing import Literal

import anthropic
import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field, ValidationError

from mock_providers import (
    Fault,
    FaultPlan,
    MockLLMServer,
    MockRequest,
    default_responder,
    schema_instance,
)
from support import WAIT_S

KEY = "test-key"
GPT = "gpt-4o-mini"
CLAUDE = "claude-haiku-4-5"


class Stance(str, Enum):
    agree = "agree"
    disagree = "disagree"
    unsure = "unsure"


class Evidence(BaseModel):
    quote: str = Field(min_length=3, max_length=40)
    turn: int = Field(ge=1, le=12)


class Verdict(BaseModel):
    """Nested models give `$defs`/`$ref`; bounds give min/max constraints."""

    present: bool
    stance: Stance
    justification: str = Field(max_length=80)
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: list[Evidence] = Field(min_length=1, max_length=3)
    tags: list[Literal["a", "b", "c"]] = Field(max_length=2)
    note: str | None = None


@pytest.fixture(scope="module")
def server():
    with MockLLMServer(api_key=KEY) as srv:
        yield srv


@pytest.fixture
def mock(server):
    """The shared server, reset to defaults for each test."""
    server.reset()
    server.fault_plan = FaultPlan()
    server.latency = 0.0
    yield server
    server.reset()
    server.fault_plan = FaultPlan()
    server.responder = default_responder


def oa(server, **kwargs) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.openai_base_url, api_key=KEY, max_retries=0, **kwargs)


def an(server, **kwargs) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=server.anthropic_base_url, api_key=KEY, max_retries=0, **kwargs
    )


def chat(client: openai.OpenAI, text: str = "Is my plan good?", **kwargs):
    return client.chat.completions.create(
        model=GPT, messages=[{"role": "user", "content": text}], **kwargs
    )


def message(client: anthropic.Anthropic, text: str = "Is my plan good?", **kwargs):
    return client.messages.create(
        model=CLAUDE, max_tokens=200, messages=[{"role": "user", "content": text}], **kwargs
    )


def json_schema_format(model: type[BaseModel]) -> dict:
    return {
        "type": "json_schema",
        "json_schema": {"name": model.__name__, "schema": model.model_json_schema()},
    }


def forced_tool(model: type[BaseModel]) -> dict:
    return {
        "tools": [
            {
                "name": "record",
                "description": "Record it.",
                "input_schema": model.model_json_schema(),
            }
        ],
        "tool_choice": {"type": "tool", "name": "record"},
    }


# -- replies -------------------------------------------------------------------


def test_openai_plain_text_reports_a_versioned_model_and_usage(mock):
    reply = chat(oa(mock), temperature=0.7, seed=3, max_completion_tokens=50)
    assert reply.object == "chat.completion"
    assert reply.model == f"{GPT}-2024-08-06"
    choice = reply.choices[0]
    assert choice.finish_reason == "stop"
    assert choice.message.content and choice.message.refusal is None
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens > 0
    again = chat(oa(mock), temperature=0.7, seed=3, max_completion_tokens=50)
    assert again.choices[0].message.content == choice.message.content
    assert (
        chat(oa(mock), temperature=0.7, seed=4).choices[0].message.content != choice.message.content
    )


def test_anthropic_plain_text(mock):
    reply = message(an(mock), system="Be frank.", extra_body={"temperature": 0.2})
    assert reply.type == "message" and reply.role == "assistant"
    assert reply.model == f"{CLAUDE}-20250929"
    assert reply.stop_reason == "end_turn"
    assert [block.type for block in reply.content] == ["text"] and reply.content[0].text
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0


def test_reported_model_override_and_dated_models_pass_through():
    with MockLLMServer(api_key=KEY, reported_models={"alias": "alias-v7"}) as srv:
        client = oa(srv)
        assert client.chat.completions.create(model="alias", messages=[]).model == "alias-v7"
        dated = "gpt-4o-2024-11-20"
        assert client.chat.completions.create(model=dated, messages=[]).model == dated


def test_openai_json_schema_output_validates_across_requests(mock):
    client = oa(mock)
    for i in range(15):
        reply = chat(client, f"case {i}", response_format=json_schema_format(Verdict))
        Verdict.model_validate_json(reply.choices[0].message.content)


class StrictEvidence(BaseModel):
    quote: str
    turn: int = Field(ge=1, le=12)


class StrictVerdict(BaseModel):
    """`Verdict` within strict mode's subset of JSON Schema: no string length bounds
    (OpenAI Structured Outputs guide, "Supported schemas")."""

    present: bool
    stance: Stance
    justification: str
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: list[StrictEvidence] = Field(min_length=1, max_length=3)
    tags: list[Literal["a", "b", "c"]] = Field(max_length=2)
    note: str | None = None


def test_openai_parse_helper_with_strict_schema(mock):
    reply = oa(mock).chat.completions.parse(
        model=GPT, messages=[{"role": "user", "content": "judge"}], response_format=StrictVerdict
    )
    assert isinstance(reply.choices[0].message.parsed, StrictVerdict)


def test_strict_schema_outside_the_supported_subset_is_refused(mock):
    """The SDK sends a pydantic model's schema as it is, string length bounds included; strict
    mode refuses keywords outside its subset, naming where (Structured Outputs guide)."""
    with pytest.raises(openai.BadRequestError) as refused:
        oa(mock).chat.completions.parse(
            model=GPT, messages=[{"role": "user", "content": "judge"}], response_format=Verdict
        )
    assert "'maxLength' is not permitted" in str(refused.value)
    assert "('properties', 'justification')" in str(refused.value)


def test_anthropic_forced_tool_returns_valid_tool_use(mock):
    client = an(mock)
    for i in range(10):
        reply = message(client, f"case {i}", **forced_tool(Verdict))
        assert reply.stop_reason == "tool_use"
        [block] = reply.content
        assert block.type == "tool_use" and block.name == "record" and block.id.startswith("toolu_")
        Verdict.model_validate(block.input)


def test_anthropic_output_format_structured_output(mock):
    """The SDK moves bounds into descriptions and validates against the model: they must hold."""
    client = an(mock)
    for i in range(10):
        reply = client.messages.parse(
            model=CLAUDE,
            max_tokens=300,
            messages=[{"role": "user", "content": f"case {i}"}],
            output_format=Verdict,
        )
        assert isinstance(reply.parsed_output, Verdict)


def test_responder_sees_normalised_request(mock):
    seen: list[MockRequest] = []

    def responder(req: MockRequest):
        seen.append(req)
        return {"present": True} if req.schema else "scripted"

    mock.responder = responder
    schema = {
        "type": "object",
        "properties": {"present": {"type": "boolean"}},
        "required": ["present"],
    }
    out = oa(mock).chat.completions.create(
        model=GPT,
        messages=[
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        ],
        temperature=0.5,
        seed=9,
        max_tokens=20,
        response_format={"type": "json_schema", "json_schema": {"name": "v", "schema": schema}},
    )
    assert json.loads(out.choices[0].message.content) == {"present": True}
    assert (
        message(an(mock), system="be brief", extra_body={"temperature": 0.1}).content[0].text
        == "scripted"
    )
    req_oa, req_an = seen
    assert (req_oa.provider, req_oa.model, req_oa.temperature, req_oa.seed, req_oa.max_tokens) == (
        "openai",
        GPT,
        0.5,
        9,
        20,
    )
    assert req_oa.schema == schema and req_oa.schema_name == "v" and req_oa.system == "sys"
    assert req_oa.messages == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
    ]
    assert req_an.provider == "anthropic" and req_an.schema is None and req_an.max_tokens == 200
    assert req_an.temperature == 0.1
    assert (
        req_an.messages[0] == {"role": "system", "content": "be brief"}
        and req_an.system == "be brief"
    )
    assert req_oa.attempt == req_an.attempt == 1 and req_oa.raw["seed"] == 9


# -- schema instances ------------------------------------------------------------

TRICKY_SCHEMAS = [
    {  # recursion through $defs terminates
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 2, "maxLength": 5},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                },
                "required": ["name", "children"],
            }
        },
        "$ref": "#/$defs/Node",
    },
    {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "exclusiveMinimum": 3, "exclusiveMaximum": 6},
            "m": {"type": "integer", "minimum": 10, "maximum": 40, "multipleOf": 7},
            "x": {"type": "number", "exclusiveMinimum": 0, "maximum": 0.5},
            "c": {"const": "fixed"},
            "e": {"enum": [1, "two", None]},
            "t": {"type": ["string", "null"], "maxLength": 0},
            "u": {
                "type": "array",
                "items": {"enum": ["p", "q"]},
                "minItems": 2,
                "maxItems": 2,
                "uniqueItems": True,
            },
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "boolean"}],
                "items": False,
            },
            "map": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
            "when": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"},
            "long": {"type": "string", "minLength": 60},
        },
        "required": ["n", "m", "x", "c", "e", "t", "u", "pair", "map", "when", "id", "long"],
        "additionalProperties": False,
    },
    {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {
                "properties": {"b": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                "required": ["b"],
            },
        ]
    },
    Verdict.model_json_schema(),
]


@pytest.mark.parametrize(
    "schema", TRICKY_SCHEMAS, ids=["recursive", "scalars", "allOf", "pydantic"]
)
def test_schema_instances_validate_and_are_deterministic(schema):
    for seed in range(40):
        value = schema_instance(schema, seed)
        jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker()).validate(
            value
        )
        assert schema_instance(schema, seed) == value
    assert len({json.dumps(schema_instance(schema, s), sort_keys=True) for s in range(40)}) > 1


# -- faults ------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_rate_limit_is_429_with_retry_after(mock, provider):
    mock.fault_plan = FaultPlan(retry_after=2.5)
    mock.script(Fault.RATE_LIMIT)
    if provider == "openai":
        with pytest.raises(openai.RateLimitError) as err:
            chat(oa(mock))
        assert err.value.code == "rate_limit_exceeded"
    else:
        with pytest.raises(anthropic.RateLimitError) as err:
            message(an(mock))
        assert err.value.body["error"]["type"] == "rate_limit_error"
    assert err.value.response.headers["retry-after"] == "2.5"


def test_server_error_is_500(mock):
    mock.script("server_error", "server_error")
    with pytest.raises(openai.InternalServerError):
        chat(oa(mock))
    with pytest.raises(anthropic.InternalServerError) as err:
        message(an(mock))
    assert err.value.body["error"]["type"] == "api_error"


def test_hang_times_out_the_client(mock):
    """The SDKs give up at their timeout: a hang longer than any test waits is never answered,
    so the timeout error is what ends each call."""
    mock.fault_plan = FaultPlan(hang_seconds=10 * WAIT_S)
    mock.script("hang", "hang")
    with pytest.raises(openai.APITimeoutError):
        chat(oa(mock, timeout=0.3))
    with pytest.raises(anthropic.APITimeoutError):
        message(an(mock, timeout=0.3))


def test_malformed_json_escapes_the_sdks_as_a_decode_error(mock):
    """Neither SDK wraps a broken 200 body in its own error type: clients must catch ValueError."""
    mock.script("malformed_json", "malformed_json")
    with pytest.raises(json.JSONDecodeError):
        chat(oa(mock))
    with pytest.raises(json.JSONDecodeError):
        message(an(mock))


def test_bad_structured_content_fails_validation(mock):
    client = oa(mock)
    for i in range(6):  # both variants: prose around the JSON, and JSON off-schema
        mock.script("bad_structured")
        reply = chat(client, f"case {i}", response_format=json_schema_format(Verdict))
        assert reply.choices[0].finish_reason == "stop"
        with pytest.raises(ValidationError):
            Verdict.model_validate_json(reply.choices[0].message.content)
    mock.script("bad_structured")
    reply = message(an(mock), **forced_tool(Verdict))
    assert reply.stop_reason == "tool_use"
    with pytest.raises(ValidationError):
        Verdict.model_validate(reply.content[0].input)
    mock.script("bad_structured")
    assert chat(client).choices[0].message.content  # nothing structured to break
    assert mock.fault_counts == {"bad_structured": 7}


def test_truncated(mock):
    client = oa(mock)
    mock.script("truncated")
    reply = chat(client, response_format=json_schema_format(Verdict))
    assert reply.choices[0].finish_reason == "length"
    with pytest.raises(ValidationError):
        Verdict.model_validate_json(reply.choices[0].message.content)
    mock.script("truncated")
    with pytest.raises(openai.LengthFinishReasonError):
        client.chat.completions.parse(
            model=GPT, messages=[{"role": "user", "content": "x"}], response_format=StrictVerdict
        )
    mock.script("ok", "truncated")
    full = message(an(mock), "long").content[0].text
    cut = message(an(mock), "long")
    assert (
        cut.stop_reason == "max_tokens"
        and full.startswith(cut.content[0].text)
        and cut.content[0].text != full
    )


def test_empty(mock):
    mock.script("empty", "empty")
    reply = chat(oa(mock))
    assert reply.choices[0].message.content == "" and reply.choices[0].finish_reason == "stop"
    reply = message(an(mock))
    assert reply.content == [] and reply.stop_reason == "end_turn"


def test_refusal(mock):
    client = oa(mock)
    mock.script("refusal", "refusal", "refusal")
    structured = chat(client, response_format=json_schema_format(Verdict)).choices[0]
    assert structured.message.content is None and structured.message.refusal
    plain = chat(client).choices[0]
    assert plain.finish_reason == "content_filter" and plain.message.content is None
    reply = message(an(mock))
    assert (
        reply.stop_reason == "refusal"
        and reply.content == []
        and reply.stop_details.type == "refusal"
    )


def test_wrong_or_missing_key_is_401(mock):
    with pytest.raises(openai.AuthenticationError) as err:
        openai.OpenAI(base_url=mock.openai_base_url, api_key="wrong", max_retries=0).models.list()
    assert err.value.code == "invalid_api_key"
    with pytest.raises(anthropic.AuthenticationError) as err:
        anthropic.Anthropic(
            base_url=mock.anthropic_base_url, api_key="wrong", max_retries=0
        ).messages.create(model=CLAUDE, max_tokens=5, messages=[{"role": "user", "content": "x"}])
    assert err.value.body["error"]["type"] == "authentication_error"
    request = urllib.request.Request(
        f"{mock.openai_base_url}/chat/completions", method="POST",
        data=json.dumps({"model": GPT, "messages": []}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request)
    assert refused.value.code == 401
    assert json.load(refused.value)["error"]["code"] == "invalid_api_key"
    assert mock.fault_counts == {}


def test_bad_requests_are_400(mock):
    with pytest.raises(anthropic.BadRequestError):
        an(mock).messages.create(
            model=CLAUDE,
            max_tokens=5,
            messages=[{"role": "user", "content": "x"}],
            tools=[{"name": "a", "input_schema": {"type": "object"}}],
            tool_choice={"type": "tool", "name": "b"},
        )
    with pytest.raises(openai.BadRequestError):
        chat(oa(mock), stream=True)


def test_fault_plan_is_deterministic_and_retries_recover(mock):
    plan = FaultPlan(server_error=0.3, rate_limit=0.2, seed=7, retry_after=0.01)

    def run() -> list[str]:
        mock.reset()
        mock.fault_plan = plan
        client = oa(mock)
        for i in range(30):
            try:
                chat(client, f"q{i}")
            except openai.APIStatusError:
                pass
        return [entry.outcome for entry in mock.request_log]

    first = run()
    assert first == run()
    assert {"ok", "server_error", "rate_limit"} <= set(first)
    mock.reset()
    retrying = openai.OpenAI(base_url=mock.openai_base_url, api_key=KEY, max_retries=8)
    mock.fault_plan = FaultPlan(rate_limit=0.5, seed=1, retry_after=0.01)
    for i in range(10):
        assert chat(retrying, f"q{i}").choices[0].message.content
    assert max(mock.body_hash_counts.values()) > 1  # some call needed a resend


def test_fail_first_n_attempts_of_every_request(mock):
    mock.fault_plan = FaultPlan(fail_first_n=2, fail_first_kind=Fault.RATE_LIMIT, retry_after=0.01)
    retrying = anthropic.Anthropic(base_url=mock.anthropic_base_url, api_key=KEY, max_retries=2)
    assert message(retrying, "a").content and message(retrying, "b").content
    assert [e.outcome for e in mock.request_log] == ["rate_limit", "rate_limit", "ok"] * 2
    assert [e.attempt for e in mock.request_log] == [1, 2, 3] * 2


def test_counters_and_reset(mock):
    client = oa(mock)
    chat(client, "one")
    chat(client, "two")
    mock.script("server_error")
    with pytest.raises(openai.InternalServerError):
        chat(client, "one")
    message(an(mock))
    client.models.list()
    assert mock.total_requests == 5
    assert mock.path_counts == {"/v1/chat/completions": 3, "/v1/messages": 1, "/v1/models": 1}
    assert mock.fault_counts == {"server_error": 1}
    assert sorted(mock.body_hash_counts.values()) == [1, 1, 2]
    assert [e.status for e in mock.request_log] == [200, 200, 500, 200, 200]
    assert mock.in_flight == 0
    mock.reset()
    assert (mock.total_requests, mock.path_counts, mock.body_hash_counts, mock.request_log) == (
        0,
        {},
        {},
        [],
    )


def test_models_listing_in_each_format(mock):
    assert [m.id for m in oa(mock).models.list()] == list(mock.models)
    assert [m.id for m in an(mock).models.list()] == list(mock.models)


# -- performance and process mode ------------------------------------------------------


def test_fixed_latency_with_many_concurrent_requests(mock):
    """Latency overlaps across requests: with 5 s each, most of 200 requests sent together are
    in flight at once (one at a time would take 1000 s). Asserted on the server's count, not on
    a clock; 5 s leaves a busy machine's client ample time to send them all."""
    mock.latency = 5.0

    async def fan_out() -> list[str]:
        async with openai.AsyncOpenAI(
            base_url=mock.openai_base_url, api_key=KEY, max_retries=0
        ) as client:
            replies = await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model=GPT, messages=[{"role": "user", "content": f"q{i}"}]
                    )
                    for i in range(200)
                )
            )
        return [r.choices[0].message.content for r in replies]

    contents = asyncio.run(fan_out())
    assert len(contents) == 200 and all(contents)
    assert mock.peak_in_flight >= 150


def test_subprocess_mode_prints_port_and_serves():
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mock_providers.mock_llm_server",
            "--port",
            "0",
            "--print-port",
            "--latency",
            "0.01",
            "--rate-limit",
            "0.0",
            "--api-key",
            "cli-key",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[1],  # tests/, where the mock providers live
    )
    try:
        port = int(proc.stdout.readline())
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="cli-key", max_retries=0
        )
        assert chat(client).choices[0].message.content
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, stderr
    assert "Warning" not in stderr
