"""The providers' own HTTP path sends what the official SDKs send, and fails the way they did."""

from __future__ import annotations

import asyncio
import json

import anthropic
import openai
import pytest
from aiohttp import web

from pressurebench.llm.providers.anthropic_provider import AnthropicProvider
from pressurebench.llm.providers.http_errors import reply_error_message
from pressurebench.llm.providers.http_transport import env_proxy
from pressurebench.llm.providers.openai_provider import OpenAIProvider
from pressurebench.llm.types import ProviderAuthError, ProviderRequest, RetryableError
from pressurebench.params import ModelSpec
from pressurebench.schemas import UserTurn

# Per-request telemetry and connection headers: set by each HTTP stack, not by the API contract.
TRANSPORT_HEADERS = {
    "host", "content-length", "accept-encoding", "connection", "x-stainless-async",
    "x-stainless-timeout", "x-stainless-read-timeout", "x-stainless-retry-count",
}

OPENAI_REPLY = {
    "id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-x-2024-08-06",
    "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": "hi", "refusal": None}}],
    "usage": {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9},
}
ANTHROPIC_REPLY = {
    "id": "m1", "type": "message", "role": "assistant", "model": "claude-x-20250929",
    "content": [{"type": "tool_use", "id": "t1", "name": "UserTurn",
                 "input": {"thought": "t", "message": "m", "end_conversation": False}}],
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 7, "output_tokens": 2},
}
REQUEST = ProviderRequest(
    messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "héllo"}],
    temperature=0.4, max_tokens=64, top_p=0.9, seed=11,
    schema=UserTurn.model_json_schema(), schema_name="UserTurn", timeout_s=10,
)


class Capture:
    """A loopback server that records each request's headers and JSON body and answers `reply`."""

    def __init__(self, reply: dict, status: int = 200):
        self.reply, self.status = reply, status
        self.seen: list[tuple[dict[str, str], dict]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.seen.append(
            ({k.lower(): v for k, v in request.headers.items()}, await request.json())
        )
        return web.json_response(self.reply, status=self.status)

    async def __aenter__(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    async def __aexit__(self, *exc) -> None:
        await self._runner.cleanup()


def contract(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k not in TRANSPORT_HEADERS}


def test_openai_request_matches_the_sdk():
    capture = Capture(OPENAI_REPLY)

    async def go():
        async with capture as base:
            spec = ModelSpec(provider="openai", model="gpt-x", base_url=f"{base}/v1",
                             extra_headers={"X-Team": "lab"})
            provider = OpenAIProvider(spec, "sk-test")
            ours = await provider.complete(REQUEST)
            await provider.aclose()
            async with openai.AsyncOpenAI(api_key="sk-test", base_url=f"{base}/v1",
                                          default_headers={"X-Team": "lab"}, max_retries=0) as sdk:
                await sdk.chat.completions.create(
                    model="gpt-x", messages=REQUEST.messages, temperature=0.4, max_tokens=64,
                    top_p=0.9, seed=11, timeout=10,
                    response_format={"type": "json_schema",
                                     "json_schema": {"name": "UserTurn", "schema": REQUEST.schema}},
                )
            return ours

    ours = asyncio.run(go())
    (our_headers, our_body), (sdk_headers, sdk_body) = capture.seen
    assert our_body == sdk_body
    assert contract(our_headers) == contract(sdk_headers)
    assert our_headers["authorization"] == "Bearer sk-test" and our_headers["x-team"] == "lab"
    assert (ours.text, ours.finish_reason, ours.input_tokens, ours.output_tokens, ours.model_version) == (
        "hi", "stop", 7, 2, "gpt-x-2024-08-06"
    )


def test_anthropic_request_matches_the_sdk():
    capture = Capture(ANTHROPIC_REPLY)

    async def go():
        async with capture as base:
            spec = ModelSpec(provider="anthropic", model="claude-x", base_url=base)
            provider = AnthropicProvider(spec, "ak-test")
            ours = await provider.complete(REQUEST)
            await provider.aclose()
            async with anthropic.AsyncAnthropic(api_key="ak-test", base_url=base, max_retries=0) as sdk:
                tool = {"name": "UserTurn", "description": "Give your answer by calling this tool.",
                        "input_schema": REQUEST.schema}
                # The SDK's typed cache breakpoints (TextBlockParam.cache_control), where
                # prompt_cache: auto puts them: the system prompt and the last two messages.
                cache = {"type": "ephemeral"}
                messages = [{**m, "content": [{"type": "text", "text": m["content"], "cache_control": cache}]}
                            for m in REQUEST.messages[1:]]
                await sdk.messages.create(
                    model="claude-x", messages=messages,
                    system=[{"type": "text", "text": "Be brief.", "cache_control": cache}],
                    max_tokens=64, tools=[tool], tool_choice={"type": "tool", "name": "UserTurn"},
                    extra_body={"temperature": 0.4, "top_p": 0.9}, timeout=10,
                )
            return ours

    ours = asyncio.run(go())
    (our_headers, our_body), (sdk_headers, sdk_body) = capture.seen
    assert our_body == sdk_body
    assert contract(our_headers) == contract(sdk_headers)
    assert json.loads(ours.text) == {"thought": "t", "message": "m", "end_conversation": False}
    assert (ours.finish_reason, ours.input_tokens, ours.model_version) == ("stop", 7, "claude-x-20250929")


def test_the_sdk_environment_still_chooses_the_endpoint(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://gateway.internal:9000/v1")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-lab")
    provider = OpenAIProvider(ModelSpec(provider="openai", model="gpt-x"), "sk-test")
    assert provider.url == "http://gateway.internal:9000/v1/chat/completions"
    assert provider.headers["OpenAI-Organization"] == "org-lab"


@pytest.mark.parametrize(
    "status, body, error, fragment",
    [
        (401, {"error": {"message": "Incorrect API key"}}, ProviderAuthError, "HTTP 401: Incorrect API key"),
        (503, "upstream overloaded", RetryableError, "HTTP 503: upstream overloaded"),
        (200, {"object": "chat.completion", "choices": []}, RetryableError, "malformed response"),
    ],
)
def test_status_and_shape_errors_are_classified(status, body, error, fragment):
    async def go():
        capture = Capture({})

        async def handle(request):
            if isinstance(body, str):
                return web.Response(text=body, status=status)
            return web.json_response(body, status=status)

        capture.handle = handle
        async with capture as base:
            provider = OpenAIProvider(ModelSpec(provider="openai", model="m", base_url=base), "k")
            try:
                await provider.complete(REQUEST)
            finally:
                await provider.aclose()

    with pytest.raises(error, match=fragment):
        asyncio.run(go())


def test_one_provider_serves_successive_event_loops():
    """run_sync may run each stage's loop in turn; the pool must follow the loop, not break."""
    capture = Capture(OPENAI_REPLY)
    spec = ModelSpec(provider="openai", model="gpt-x", base_url="placeholder")

    async def go(provider):
        async with capture as base:
            provider.url = f"{base}/chat/completions"
            return await provider.complete(REQUEST)

    provider = OpenAIProvider(spec, "k")
    assert asyncio.run(go(provider)).text == "hi"
    assert asyncio.run(go(provider)).text == "hi"
    asyncio.run(provider.aclose())
    assert len(capture.seen) == 2


def test_connection_failure_is_retryable():
    async def go():
        provider = OpenAIProvider(
            ModelSpec(provider="openai", model="m", base_url="http://127.0.0.1:9/v1"), "k"
        )
        try:
            await provider.complete(REQUEST)
        finally:
            await provider.aclose()

    with pytest.raises(RetryableError, match="connection error"):
        asyncio.run(go())


def test_proxies_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.lab:3128")
    monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
    assert env_proxy("https://api.example.com/v1/chat/completions") == "http://proxy.lab:3128"
    assert env_proxy("http://127.0.0.1:8000/v1/chat/completions") is None


def test_error_message_prefers_the_providers_own():
    assert reply_error_message(429, b'{"error": {"message": "slow down"}}') == "slow down"
    assert reply_error_message(502, b"<html>Bad gateway</html>") == "<html>Bad gateway</html>"
    assert reply_error_message(500, b"") == "no body (HTTP 500)"


def test_https_calls_trust_what_the_providers_sdks_trust(monkeypatch):
    """The transport's trust store is the SDKs' HTTP library's default (httpx2, installed with
    the openai and anthropic SDKs): the same certificates, with and without SSL_CERT_FILE."""
    import ssl

    httpx2 = pytest.importorskip("httpx2")
    from pressurebench.llm.providers.http_transport import ssl_context

    def certificates(context: ssl.SSLContext) -> list:
        return sorted(c["serialNumber"] for c in context.get_ca_certs())

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    ours = ssl_context()
    assert ours.verify_mode == ssl.CERT_REQUIRED and ours.check_hostname
    assert ours.cert_store_stats() == httpx2.create_ssl_context().cert_store_stats()
    assert certificates(ours) == certificates(httpx2.create_ssl_context())
    cafile = ssl.get_default_verify_paths().openssl_cafile
    monkeypatch.setenv("SSL_CERT_FILE", cafile)
    assert certificates(ssl_context()) == certificates(httpx2.create_ssl_context())
