"""OpenAI chat completions, and every server that speaks them (vLLM, Ollama, llama.cpp, ...).

The `openai` SDK configures the endpoint (base URL, auth and headers, the
environment variables it honours) but `JsonTransport` sends the requests: at
hundreds of calls in flight the SDK spent 5–6 ms of CPU per call (typed-dict
transforms of every message, httpx's pool, pydantic reply models) against
about 0.5 ms for the exchange itself, which kept runs from using the
concurrency a provider allows (see perf/README.md). The body is the one
`chat.completions.create` sends.

What a model accepts differs by family and server, and the request follows the
params (`ModelSpec`) under this module's rules, checked before any call: reasoning models get
`max_completion_tokens` with room
for their hidden reasoning, `reasoning_effort`, and no sampling temperature;
other servers get the token limit in the field they read; structured answers
are asked for as `json_schema` (strict at OpenAI's own API), `json_object`, a
forced tool call or in the prompt (`llm.answer_formats`).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, ClassVar
from urllib.parse import urlsplit

from ..answer_formats import strict_schema, with_schema_instruction
from ..prompt_cache import prompt_cache_key
from ..types import (
    FinishReason,
    ProviderRequest,
    ProviderResponse,
    RejectedError,
    RetryableError,
)
from .http_errors import classify_status, reply_error_message
from .registry import model_api
from .sdk_endpoint_api import SdkEndpointApi

if TYPE_CHECKING:
    import openai

# OpenAI's reasoning models (the o-series, the gpt-5 family) take `max_completion_tokens`
# (not `max_tokens`), only the default temperature and top_p, and `reasoning_effort`; their
# hidden reasoning tokens count against `max_completion_tokens`. Recognised by name, unless
# the params say otherwise (`reasoning:`).
REASONING_NAME = re.compile(r"^(?:.*/)?(?:o\d+(?:-|$)|gpt-5)", re.IGNORECASE)
API_HOST = "api.openai.com"
# OpenAI caches every prompt of 1024 tokens or more, in steps of 128 tokens of an exact prefix.
CACHE_MIN_TOKENS = 1024
CACHE_STEP_TOKENS = 128

_FINISH: dict[str, FinishReason] = {
    "stop": "stop", "length": "length", "content_filter": "content_filter", "tool_calls": "stop"}
TOOL_DESCRIPTION = "Give your answer by calling this function."


@model_api("openai")
class OpenAIProvider(SdkEndpointApi):
    settings: ClassVar[tuple[str, ...]] = ("reasoning", "reasoning_effort", "token_limit_param", "strict_schema")
    distributions: ClassVar[tuple[str, ...]] = ("openai",)
    call_path: ClassVar[str] = "/chat/completions"
    models_path: ClassVar[str] = "/models"
    batch_price_factor: ClassVar[float | None] = 0.5  # the Batch API bills half the direct price
    price_table_provider: ClassVar[str | None] = "openai"
    list_price_hosts: ClassVar[tuple[str, ...]] = (API_HOST,)
    base_url_hint: ClassVar[str | None] = (
        "an OpenAI-compatible base_url ends in the API's version path, as "
        "https://api.openai.com/v1 or http://localhost:8000/v1 do"
    )

    # --- params rules -------------------------------------------------------------------

    def check(self) -> None:
        spec = self.spec
        if self.is_reasoning:
            for name in ("temperature", "top_p"):
                value = getattr(spec, name)
                if value is not None and value != 1.0:
                    raise ValueError(
                        f"OpenAI reasoning models take only the default {name} (1), not {value}: "
                        f"leave {name} out (or set `reasoning: false` for a model that is not one)"
                    )
        if spec.prompt_cache == "1h":
            raise ValueError(
                "prompt_cache: 1h is Anthropic's 1-hour cache; OpenAI caches by itself "
                "(`auto`, or `off` to send no prompt_cache_key)"
            )
        if spec.price_per_mtok_cache_write is not None:
            raise ValueError("price_per_mtok_cache_write: OpenAI bills no cache writes")
        if spec.reasoning_effort is not None and not self.is_reasoning:
            raise ValueError(
                "reasoning_effort is for reasoning models; set `reasoning: true` if this is one"
            )

    @property
    def is_reasoning(self) -> bool:
        """A reasoning model (by the params' word, else by its name)."""
        if self.spec.reasoning is not None:
            return self.spec.reasoning
        return bool(REASONING_NAME.match(self.spec.model))

    @property
    def at_openai(self) -> bool:
        """Served by OpenAI's own API (not a compatible server such as vLLM or Ollama)."""
        return self.spec.base_url is None or urlsplit(self.spec.base_url).hostname == API_HOST

    @property
    def strict(self) -> bool:
        """OpenAI strict structured outputs for `json_schema` and `tool` answers."""
        if self.structured_mode not in ("json_schema", "tool"):
            return False
        return self.spec.strict_schema if self.spec.strict_schema is not None else self.at_openai

    def cached_prefix(self, prefix_tokens: int) -> int:
        """OpenAI caches prompts from 1024 tokens on, in 128-token steps (its prompt caching
        guide); other servers bill no cached input."""
        if not self.at_openai or prefix_tokens < CACHE_MIN_TOKENS:
            return 0
        return CACHE_MIN_TOKENS + (prefix_tokens - CACHE_MIN_TOKENS) // CACHE_STEP_TOKENS * CACHE_STEP_TOKENS

    @property
    def token_limit_field(self) -> str:
        """The request field that carries the token limit."""
        if self.spec.token_limit_param is not None:
            return self.spec.token_limit_param
        return "max_completion_tokens" if self.at_openai or self.is_reasoning else "max_tokens"

    def token_limit(self, answer_tokens: int) -> int:
        """Reasoning models get room to reason on top of the answer's tokens."""
        return answer_tokens + (self.spec.reasoning_tokens if self.is_reasoning else 0)

    def identity_extras(self) -> tuple:
        spec = self.spec
        extra_body = json.dumps(spec.extra_body, sort_keys=True) if spec.extra_body else None
        return (self.structured_mode, self.strict, self.token_limit_field, self.is_reasoning,
                spec.reasoning_effort, spec.reasoning_tokens if self.is_reasoning else None, extra_body)

    def key_material(self) -> dict:
        """How this model's requests are formed, beyond the request itself (part of cache keys)."""
        spec = self.spec
        return {
            "structured_output": self.structured_mode,
            "strict": self.strict,
            "token_limit_field": self.token_limit_field,
            "reasoning": self.is_reasoning,
            "reasoning_effort": spec.reasoning_effort,
            "reasoning_tokens": spec.reasoning_tokens if self.is_reasoning else None,
            "extra_body": spec.extra_body,
        }

    # --- the endpoint ---------------------------------------------------------------------

    def _sdk(self) -> openai.AsyncOpenAI:
        """The `openai` SDK's client, whose URL and headers the calls are sent with
        (base URL, auth, its variables)."""
        import openai

        return openai.AsyncOpenAI(api_key=self.api_key or "unused", base_url=self.spec.base_url,
                                  default_headers=self.spec.extra_headers or None)

    # --- calls ----------------------------------------------------------------------------

    def body(self, request: ProviderRequest) -> dict:
        """The chat-completions body for `request`: only fields this model accepts."""
        spec = self.spec
        messages = request.messages
        body: dict = {"model": spec.model}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.top_p is not None:
            body["top_p"] = request.top_p
        body[self.token_limit_field] = self.token_limit(request.max_tokens)
        if spec.reasoning_effort is not None:
            body["reasoning_effort"] = spec.reasoning_effort
        if request.seed is not None:
            body["seed"] = request.seed
        schema, name = request.schema, request.schema_name or "answer"
        mode = self.structured_mode if schema is not None else None
        strict = self.strict
        # (`schema is not None` again in each branch: a mode is set only with a schema.)
        if mode == "json_schema" and schema is not None:
            format_spec: dict = {"name": name, "schema": strict_schema(schema) if strict else schema}
            if strict:
                format_spec["strict"] = True
            body["response_format"] = {"type": "json_schema", "json_schema": format_spec}
        elif mode == "json_object" and schema is not None:
            # llama.cpp's server constrains json_object to a `schema` given beside it; the
            # schema is in the prompt too, for servers that only guarantee some JSON object.
            body["response_format"] = {"type": "json_object", "schema": schema}
            messages = with_schema_instruction(messages, schema)
        elif mode == "tool" and schema is not None:
            function: dict = {
                "name": name, "description": TOOL_DESCRIPTION,
                "parameters": strict_schema(schema) if strict else schema,
            }
            if strict:
                function["strict"] = True
            body["tools"] = [{"type": "function", "function": function}]
            body["tool_choice"] = {"type": "function", "function": {"name": name}}
        elif mode == "prompt" and schema is not None:
            messages = with_schema_instruction(messages, schema)
        body["messages"] = messages
        if request.cache_group is not None and spec.prompt_cache != "off":
            body["prompt_cache_key"] = prompt_cache_key(request.cache_group)
        body.update(spec.extra_body)
        return body

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        reply = await self._http.post(self.url, self.body(request), self.headers, request.timeout_s)
        if not 200 <= reply.status < 300:
            message = reply_error_message(reply.status, reply.body)
            raise classify_status(reply.status, message, reply.headers, self.describe())
        try:
            return _parse(reply.body)
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise RetryableError(f"{self.describe()}: malformed response: {exc!r}") from None

    # --- OpenAI's Batch API (llm.batches): JSONL file, batch, retrieve, output and error files ---

    def _url(self, path: str) -> str:
        return self.url.removesuffix("/chat/completions") + path

    async def _json(self, method: str, path: str, data=None, headers=None) -> dict:
        reply = await self._http.send(method, self._url(path), headers or self.headers, 120.0, data)
        if not 200 <= reply.status < 300:
            raise classify_status(reply.status, reply_error_message(reply.status, reply.body),
                                  reply.headers, f"{self.describe()} batch")
        return json.loads(reply.body)

    async def batch_submit(self, items: list[tuple[str, ProviderRequest]]) -> str:
        """Upload the requests as a JSONL file and create a batch on it; the batch's id."""
        import aiohttp

        lines = "".join(
            json.dumps({"custom_id": key, "method": "POST", "url": "/v1/chat/completions",
                        "body": self.body(request)}, ensure_ascii=False) + "\n"
            for key, request in items
        )
        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field("file", lines.encode(), filename="requests.jsonl", content_type="application/jsonl")
        upload_headers = {k: v for k, v in self.headers.items() if k.lower() != "content-type"}
        uploaded = await self._json("POST", "/files", form, upload_headers)
        created = await self._json("POST", "/batches", json.dumps({
            "input_file_id": uploaded["id"], "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        }).encode())
        return created["id"]

    async def batch_poll(self, batch_id: str) -> tuple[str, bool, dict]:
        """(status, whether it has ended, the batch object)."""
        batch = await self._json("GET", f"/batches/{batch_id}")
        status = batch["status"]
        return status, status in ("completed", "failed", "expired", "cancelled"), batch

    async def batch_results(self, batch_id: str, batch: dict, requests: dict[str, ProviderRequest]
                            ) -> dict[str, ProviderResponse | Exception]:
        """Each answered request's response, or its failure; expired requests are left out."""
        out: dict[str, ProviderResponse | Exception] = {}
        if batch["status"] == "failed":
            reason = "; ".join(e.get("message", "") for e in (batch.get("errors") or {}).get("data", []))
            raise RejectedError(f"{self.describe()}: batch {batch_id} failed: {reason or 'no reason given'}")
        for file_id in (batch.get("output_file_id"), batch.get("error_file_id")):
            if not file_id:
                continue
            reply = await self._http.send("GET", self._url(f"/files/{file_id}/content"), self.headers, 120.0)
            for line in reply.body.decode().splitlines():
                row = json.loads(line)
                response, error = row.get("response"), row.get("error")
                if error and error.get("code") == "batch_expired":
                    continue
                if response is None:
                    out[row["custom_id"]] = RetryableError(f"{self.describe()}: {error}")
                elif response["status_code"] == 200:
                    out[row["custom_id"]] = _parse(json.dumps(response["body"]).encode())
                else:
                    message = reply_error_message(response["status_code"], json.dumps(response["body"]).encode())
                    out[row["custom_id"]] = classify_status(response["status_code"], message, None, self.describe())
        return out

    async def aclose(self) -> None:
        if "_http" in self.__dict__:
            await self._http.aclose()


def _parse(raw: bytes) -> ProviderResponse:
    """A chat completion's JSON; anything not shaped like one raises for `complete` to report.

    A forced tool call's arguments are the answer. `completion_tokens` already
    counts hidden reasoning (billed as output); how much of it was reasoning is kept apart.
    """
    resp = json.loads(raw)
    choices = resp.get("choices")
    if not choices:
        raise ValueError("no choices")
    choice = choices[0]
    message = choice["message"]
    refusal = message.get("refusal")
    text = message.get("content")
    calls = message.get("tool_calls") or []
    if calls:
        text = calls[0]["function"]["arguments"]
    finish: FinishReason = "refusal" if refusal else _FINISH.get(choice.get("finish_reason") or "", "other")
    usage = resp.get("usage") or {}
    details = usage.get("completion_tokens_details") or {}
    prompt_details = usage.get("prompt_tokens_details") or {}
    return ProviderResponse(
        text=text,
        finish_reason=finish,
        input_tokens=usage.get("prompt_tokens") or 0,
        output_tokens=usage.get("completion_tokens") or 0,
        model_version=resp.get("model"),
        refusal=refusal,
        reasoning_tokens=details.get("reasoning_tokens") or 0,
        # of prompt_tokens, read from OpenAI's prompt cache
        cached_input_tokens=prompt_details.get("cached_tokens") or 0,
    )
