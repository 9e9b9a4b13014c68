"""OpenAI chat completions, and every server that speaks them (vLLM, Ollama, llama.cpp, ...).

The `openai` SDK configures the endpoint (base URL, auth and headers, the
environment variables it honours) but `JsonTransport` sends the requests: at
hundreds of calls in flight the SDK spent 5–6 ms of CPU per call (typed-dict
transforms of every message, httpx's pool, pydantic reply models) against
about 0.5 ms for the exchange itself, which kept runs from using the
concurrency a provider allows (see perf/README.md). The body is the one
`chat.completions.create` sends.
"""

from __future__ import annotations

import json

import openai

from ...params import ModelSpec
from ..types import ProviderRequest, ProviderResponse, RetryableError
from .http_errors import classify_status, reply_error_message
from .http_transport import JsonTransport, sdk_endpoint

_FINISH = {"stop": "stop", "length": "length", "content_filter": "content_filter", "tool_calls": "stop"}


class OpenAIProvider:
    def __init__(self, spec: ModelSpec, api_key: str | None):
        self.spec = spec
        sdk = openai.AsyncOpenAI(
            api_key=api_key or "unused", base_url=spec.base_url,
            default_headers=spec.extra_headers or None,
        )
        self.url, self.headers = sdk_endpoint(sdk, "/chat/completions")
        self._http = JsonTransport(self.describe(), max_connections=spec.concurrency)

    def describe(self) -> str:
        return f"openai {self.spec.model}" + (f" at {self.spec.base_url}" if self.spec.base_url else "")

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        body: dict = {
            "model": self.spec.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
        }
        if request.top_p is not None:
            body["top_p"] = request.top_p
        if request.seed is not None:
            body["seed"] = request.seed
        if request.schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name or "answer", "schema": request.schema},
            }
        reply = await self._http.post(self.url, body, self.headers, request.timeout_s)
        if not 200 <= reply.status < 300:
            message = reply_error_message(reply.status, reply.body)
            raise classify_status(reply.status, message, reply.headers, self.describe())
        try:
            return _parse(reply.body)
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise RetryableError(f"{self.describe()}: malformed response: {exc!r}") from None

    async def aclose(self) -> None:
        await self._http.aclose()


def _parse(raw: bytes) -> ProviderResponse:
    """A chat completion's JSON; anything not shaped like one raises for `complete` to report."""
    resp = json.loads(raw)
    choices = resp.get("choices")
    if not choices:
        raise ValueError("no choices")
    choice = choices[0]
    message = choice["message"]
    refusal = message.get("refusal")
    finish = "refusal" if refusal else _FINISH.get(choice.get("finish_reason") or "", "other")
    usage = resp.get("usage") or {}
    return ProviderResponse(
        text=message.get("content"),
        finish_reason=finish,
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        model_version=resp.get("model"),
        refusal=refusal,
    )
