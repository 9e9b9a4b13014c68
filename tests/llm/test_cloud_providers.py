"""Claude on AWS Bedrock and Google Vertex AI, OpenAI models on Azure: the official SDKs' own
clients against the mock server on the clouds' paths (`mock_providers.cloud_wire`, which cites
each service's rules), with fake credentials the SDKs accept and no network."""

from __future__ import annotations

import asyncio

import pytest

from pressurebench.llm import ModelClient
from pressurebench.llm.providers.registry import api_for
from pressurebench.params import ModelSpec
from pressurebench.schemas import JudgeOutput

CONVERSATION = [
    {"role": "system", "content": "You are a careful assistant."},
    {"role": "user", "content": "Should I sign the lease today?"},
]


def ask(tmp_path, model_spec: ModelSpec, **kw):
    async def go():
        async with ModelClient({"m": model_spec}, tmp_path / "cache", backoff_base_s=0.01) as client:
            return await client.chat("m", CONVERSATION, **kw)

    return asyncio.run(go())


def test_claude_on_bedrock_is_signed_and_names_its_model_in_the_path(mock_server, monkeypatch, tmp_path):
    """Static keys from the usual AWS variables (botocore signs with them offline)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    spec = ModelSpec(provider="anthropic-bedrock", model=model, region="us-west-2",
                     base_url=mock_server.base_url, price_table=True)
    result = ask(tmp_path, spec, schema=JudgeOutput)
    assert result.ok, result.error
    [seen] = mock_server.clouds.seen
    assert seen["path"] == f"/model/{model}/invoke"
    assert "/us-west-2/bedrock/aws4_request" in seen["headers"]["Authorization"]
    assert seen["body"]["anthropic_version"] and "model" not in seen["body"]
    assert seen["body"]["tool_choice"] == {"type": "tool", "name": "JudgeOutput"}
    api = api_for(spec)
    assert api.table_price.entry.startswith("aws/")
    assert result.cost_usd == pytest.approx(api.price(result.input_tokens, result.output_tokens,
                                                      result.cached_input_tokens, result.cache_write_tokens))


def test_claude_on_vertex_posts_raw_predict_with_a_bearer_token(mock_server, monkeypatch, tmp_path):
    """The access token is a fake one in the variable `api_key_env` names; no ADC lookup."""
    monkeypatch.setenv("PB_VERTEX_TOKEN", mock_server.clouds.access_token)
    spec = ModelSpec(provider="anthropic-vertex", model="claude-sonnet-4-5@20250929",
                     project_id="pb-study", region="us-east5", api_key_env="PB_VERTEX_TOKEN",
                     base_url=f"{mock_server.base_url}/v1", temperature=0.3)
    result = ask(tmp_path, spec)
    assert result.ok, result.error
    [seen] = mock_server.clouds.seen
    assert seen["path"] == ("/v1/projects/pb-study/locations/us-east5/publishers/anthropic/models/"
                            "claude-sonnet-4-5@20250929:rawPredict")
    assert seen["body"]["anthropic_version"] and "model" not in seen["body"]
    assert seen["body"]["temperature"] == 0.3


def test_the_anthropic_rules_apply_to_claude_spelled_the_clouds_way():
    with pytest.raises(ValueError, match=r"cannot both be specified|temperature together with top_p"):
        ModelSpec(provider="anthropic-vertex", model="claude-sonnet-4-5@20250929", temperature=0.5, top_p=0.9)
    with pytest.raises(ValueError, match="deprecated temperature"):
        ModelSpec(provider="anthropic-bedrock", model="anthropic.claude-opus-4-7", temperature=0.5)
    with pytest.raises(ValueError, match="no batch API"):
        ModelSpec(provider="anthropic-bedrock", model="anthropic.claude-sonnet-4-6", batch=True)


def test_openai_on_azure_calls_its_deployment_with_the_api_version(mock_server, monkeypatch, tmp_path):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", mock_server.api_key)
    spec = ModelSpec(provider="azure-openai", model="gpt-5.4-mini", base_url=mock_server.base_url,
                     api_version="2024-10-21", api_key_env="AZURE_OPENAI_API_KEY", price_table=True)
    result = ask(tmp_path, spec, schema=JudgeOutput)
    assert result.ok, result.error
    [seen] = mock_server.clouds.seen
    assert seen["path"] == "/openai/deployments/gpt-5.4-mini/chat/completions"
    assert seen["query"] == {"api-version": "2024-10-21"}
    assert seen["headers"]["api-key"] == mock_server.api_key
    assert "max_completion_tokens" in seen["body"] and "temperature" not in seen["body"]
    api = api_for(spec)
    assert api.table_price.entry == "azure/gpt-5.4-mini"
    assert result.cost_usd == pytest.approx(api.price(result.input_tokens, result.output_tokens,
                                                      result.cached_input_tokens))


@pytest.mark.parametrize(("path", "headers", "body", "status", "message"), [
    ("/model/anthropic.claude-sonnet-4-6/invoke", {"Authorization": "Bearer test-key"},
     {"anthropic_version": "bedrock-2023-05-31", "model": "x", "max_tokens": 5,
      "messages": [{"role": "user", "content": "hi"}]}, 400, "extraneous key [model] is not permitted"),
    ("/model/anthropic.claude-sonnet-4-6/invoke", {"Authorization": "Bearer test-key"},
     {"max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}, 400, "anthropic_version"),
    ("/openai/deployments/gpt-5.4-mini/chat/completions", {"api-key": "test-key"},
     {"messages": [{"role": "user", "content": "hi"}]}, 404, "Resource not found"),
])
def test_the_server_refuses_what_the_clouds_refuse(mock_server, path, headers, body, status, message):
    import aiohttp

    async def go():
        async with aiohttp.ClientSession() as session, session.post(
                f"{mock_server.base_url}{path}", json=body, headers=headers) as reply:
            return reply.status, await reply.text()

    got, text = asyncio.run(go())
    assert got == status and message in text
