"""Gemini through the `google-genai` SDK against the strict Gemini server (`mock_providers.
gemini_wire`, which cites the API's rules): the requests are ones the API takes, the replies'
usage is read as the API reports it, and the cost is what the price table bills for it."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from pressurebench.llm import ModelClient
from pressurebench.llm.batches import BatchSettings
from pressurebench.llm.providers.registry import api_for
from pressurebench.llm.types import ProviderAuthError
from pressurebench.params import ModelSpec
from pressurebench.schemas import JudgeOutput, UserTurn

PRO = "gemini-2.5-pro"
FLASH = "gemini-2.5-flash"


@pytest.fixture
def gemini(mock_server, monkeypatch):
    mock_server.models = (PRO, FLASH, "gemini-3-pro-preview")
    monkeypatch.setenv("PB_GEMINI_KEY", "test-key")
    return mock_server


def spec(server, model: str = PRO, **kw) -> ModelSpec:
    # The server bills Gemini's list prices, so the table prices it (price_table: true).
    return ModelSpec(provider="google", model=model, base_url=server.gemini_base_url,
                     api_key_env="PB_GEMINI_KEY", price_table=True, **kw)


def chat(tmp_path, model_spec: ModelSpec, requests, **kw):
    async def go():
        async with ModelClient({"m": model_spec}, tmp_path / "cache", backoff_base_s=0.01,
                               batch=kw.pop("batch", None)) as client:
            return await asyncio.gather(*(client.chat("m", r, **kw) for r in requests))

    return asyncio.run(go())


def gemini_bodies(server) -> list[dict]:
    return [e.body for e in server.request_log if e.provider == "google" and e.body is not None]


CONVERSATION = [
    {"role": "system", "content": "You are a careful assistant."},
    {"role": "user", "content": "Should I quit my job today?"},
    {"role": "assistant", "content": "What makes today the day?"},
    {"role": "user", "content": "I just feel like it."},
]


def test_a_conversation_goes_as_user_and_model_contents_and_costs_what_the_table_bills(gemini, tmp_path):
    model_spec = spec(gemini)
    [result] = chat(tmp_path, model_spec, [CONVERSATION])
    assert result.ok, result.error
    [body] = gemini_bodies(gemini)
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    assert body["systemInstruction"]["parts"] == [{"text": "You are a careful assistant."}]
    config = body["generationConfig"]
    api = api_for(model_spec)
    # dynamic thinking: room for thoughts on top of the answer, as reasoning_tokens says
    assert config["maxOutputTokens"] == model_spec.max_tokens + model_spec.reasoning_tokens
    assert "temperature" not in config and "responseSchema" not in config
    thoughts = gemini.reasoning_tokens
    assert result.reasoning_tokens == thoughts
    assert result.output_tokens == thoughts + -(-len(result.text) // 4)
    assert result.cost_usd == pytest.approx(api.price(result.input_tokens, result.output_tokens))
    assert result.cost_usd == pytest.approx((result.input_tokens * 1.25 + result.output_tokens * 10) / 1e6)
    assert result.model_version == PRO


def test_a_structured_answer_comes_through_the_response_schema(gemini, tmp_path):
    [result] = chat(tmp_path, spec(gemini, temperature=0.2, seed=7), [CONVERSATION], schema=JudgeOutput)
    assert result.ok, result.error
    assert isinstance(result.parsed, JudgeOutput)
    config = gemini_bodies(gemini)[0]["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseSchema"]["type"] == "OBJECT"
    assert (config["temperature"], config["seed"]) == (0.2, 7)


def test_the_schema_instruction_goes_in_the_prompt_when_asked(gemini, tmp_path):
    [result] = chat(tmp_path, spec(gemini, structured_output="prompt"), [CONVERSATION], schema=JudgeOutput)
    assert result.ok, result.error
    body = gemini_bodies(gemini)[0]
    assert "responseSchema" not in body["generationConfig"]
    assert "JSON schema" in body["systemInstruction"]["parts"][0]["text"]


def test_the_thinking_budget_is_sent_and_its_tokens_billed_as_output(gemini, tmp_path):
    model_spec = spec(gemini, thinking_budget=256)
    [result] = chat(tmp_path, model_spec, [CONVERSATION])
    config = gemini_bodies(gemini)[0]["generationConfig"]
    assert config["thinkingConfig"] == {"thinking_budget": 256}
    assert config["maxOutputTokens"] == model_spec.max_tokens + 256
    assert result.reasoning_tokens == gemini.reasoning_tokens
    flash = spec(gemini, FLASH, thinking_budget=0)
    [result] = chat(tmp_path / "flash", flash, [CONVERSATION])
    assert result.reasoning_tokens == 0
    assert gemini_bodies(gemini)[-1]["generationConfig"]["maxOutputTokens"] == flash.max_tokens
    level = spec(gemini, "gemini-3-pro-preview", thinking_level="low")
    chat(tmp_path / "level", level, [CONVERSATION])
    assert gemini_bodies(gemini)[-1]["generationConfig"]["thinkingConfig"] == {"thinking_level": "LOW"}


@pytest.mark.parametrize(("settings", "message"), [
    ({"thinking_budget": 0}, "cannot stop thinking"),
    ({"thinking_budget": 64}, "within 128 to 32768"),
    ({"thinking_level": "low"}, "takes thinking_budget, not thinking_level"),
    ({"structured_output": "tool"}, "Gemini models take `json_schema`"),
    ({"reasoning_effort": "low"}, "openai-provider setting"),
])
def test_the_params_refuse_what_gemini_refuses_before_any_call(settings, message):
    with pytest.raises(ValueError, match=message):
        ModelSpec(provider="google", model=PRO, **settings)
    with pytest.raises(ValueError, match="not both"):
        ModelSpec(provider="google", model="gemini-3-pro-preview", thinking_budget=128, thinking_level="low")


def _post(server, path: str, body: dict, key: str = "test-key") -> tuple[int, dict]:
    async def go():
        async with aiohttp.ClientSession() as session, session.post(
                f"{server.base_url}{path}", json=body, headers={"x-goog-api-key": key}) as reply:
            return reply.status, await reply.json()

    return asyncio.run(go())


@pytest.mark.parametrize(("body", "message"), [
    ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "generationConfig": {"maxTokens": 5}},
     "Invalid JSON payload received. Unknown name \"maxTokens\" at 'generation_config': Cannot find field."),
    ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "messages": []},
     "Invalid JSON payload received. Unknown name \"messages\": Cannot find field."),
    ({"contents": [{"role": "assistant", "parts": [{"text": "hi"}]}]}, "Please use a valid role: user, model."),
    ({"contents": [{"role": "system", "parts": [{"text": "hi"}]}]}, "Please use a valid role: user, model."),
    ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
      "generationConfig": {"responseSchema": {"type": "OBJECT"}}}, "requires response_mime_type application/json"),
    ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
      "generationConfig": {"responseMimeType": "application/json",
                           "responseSchema": {"type": "object", "const": 1}}}, 'Unknown name "const"'),
])
def test_the_server_refuses_what_the_gemini_api_refuses(gemini, body, message):
    status, reply = _post(gemini, f"/v1/models/{PRO}:generateContent", body)
    assert status == 400 and reply["error"]["status"] == "INVALID_ARGUMENT"
    assert message in reply["error"]["message"]


def test_a_wrong_key_stops_the_stage_as_gemini_answers_it(gemini, tmp_path, monkeypatch):
    status, reply = _post(gemini, f"/v1/models/{PRO}:generateContent",
                          {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, key="wrong")
    assert (status, reply["error"]["message"]) == (400, "API key not valid. Please pass a valid API key.")
    monkeypatch.setenv("PB_GEMINI_KEY", "wrong-key")
    with pytest.raises(ProviderAuthError, match="API key not valid"):
        chat(tmp_path, spec(gemini), [CONVERSATION])


def test_implicitly_cached_input_is_read_from_usage_and_priced_as_billed(gemini, tmp_path):
    long = " ".join(f"word{i}" for i in range(2000))
    first = [{"role": "system", "content": long}, {"role": "user", "content": "first"}]
    second = [*first, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "second"}]
    model_spec = spec(gemini)

    async def go():
        async with ModelClient({"m": model_spec}, tmp_path / "cache") as client:
            return [await client.chat("m", r) for r in (first, second)]

    a, b = asyncio.run(go())
    assert a.cached_input_tokens == 0 and b.cached_input_tokens > 1024
    billed = gemini.gemini.billed[PRO]
    assert a.cost_usd + b.cost_usd == pytest.approx(
        (billed["uncached"] * 1.25 + billed["cached"] * 0.125 + billed["output"] * 10) / 1e6)


def test_batched_calls_go_through_batch_mode_at_the_tables_batch_price(gemini, tmp_path):
    model_spec = spec(gemini, batch=True)
    settings = BatchSettings(max_requests=100, collect_s=0.2, poll_s=0.05, max_wait_s=60)
    requests = [[{"role": "user", "content": f"case {i}"}] for i in range(3)]
    results = chat(tmp_path, model_spec, requests, schema=JudgeOutput, batch=settings)
    assert all(r.ok for r in results), [r.error for r in results]
    creates = [e for e in gemini.request_log if e.path.endswith(":batchGenerateContent")]
    assert len(creates) == 1
    assert len(creates[0].body["batch"]["inputConfig"]["requests"]["requests"]) == 3
    for r in results:
        assert r.cost_usd == pytest.approx((r.input_tokens * 0.625 + r.output_tokens * 5) / 1e6)


def test_check_asks_the_model_list_and_names_a_model_it_lacks(gemini):
    from pressurebench.commands.preflight import _probe

    # (problems, the warning of an endpoint that lists no model)
    assert asyncio.run(_probe([("m", spec(gemini))], "test-key")) == ([], None)
    problems, _ = asyncio.run(_probe([("m", spec(gemini, "gemini-9-ultra"))], "test-key"))
    assert len(problems) == 1 and "'gemini-9-ultra' is not among the 3 models" in problems[0]
    gemini.models = tuple(f"gemini-x-{i}" for i in range(1200)) + (PRO,)  # two pages
    assert asyncio.run(_probe([("m", spec(gemini))], "test-key")) == ([], None)


def test_every_schema_the_stages_ask_for_is_one_gemini_takes(gemini, tmp_path):
    """The SDK converts each answer schema to Gemini's Schema; the server refuses any field
    or type Gemini does not take."""
    from pressurebench.stages.gen_metrics import DRAFTS

    schemas = (JudgeOutput, UserTurn, *DRAFTS.values())
    for schema in schemas:
        chat(tmp_path / schema.__name__, spec(gemini), [CONVERSATION], schema=schema)
    served = [e for e in gemini.request_log if e.provider == "google"]
    assert len(served) >= len(schemas) and {e.status for e in served} == {200}
    assert all(json.dumps(b).count("$ref") == 0 for b in gemini_bodies(gemini))
