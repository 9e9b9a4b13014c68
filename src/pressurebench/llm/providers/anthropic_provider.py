"""Anthropic messages; structured output through one forced tool whose input is the answer.

(Or, with `structured_output: prompt`, the schema in the system prompt.) Only
the sampling settings the params set are sent: Anthropic's recent models
refuse temperature together with top_p, which this module's rules reject before
any call, and a temperature above Anthropic's range of 0 to 1 is an error there
too rather than a value silently changed here.

As for OpenAI, the `anthropic` SDK configures the endpoint (base URL, auth, API
version, headers) and `JsonTransport` sends the requests, because the SDK's
per-call CPU (request building, its pool, typed reply models: about 3 ms)
exceeded the exchange itself several times over (see perf/README.md). The
body is the one `messages.create` sends.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, ClassVar

from ..answer_formats import with_schema_instruction
from ..types import FinishReason, ProviderRequest, ProviderResponse, RetryableError
from .http_errors import classify_status, reply_error_message
from .registry import model_api
from .sdk_endpoint_api import SdkEndpointApi

if TYPE_CHECKING:
    import anthropic

# Claude models after Opus 4.6 refuse temperature, top_p and top_k ("`temperature` is
# deprecated for this model"); Opus 4.1 and the 4.5/4.6 models refuse temperature together
# with top_p. (Anthropic's Messages API reference and model deprecations page.)
NO_SAMPLING_NAME = re.compile(
    r"^claude-(?:(?:opus|sonnet|haiku)-4-[7-9]|(?:opus|sonnet|haiku)-[5-9])", re.IGNORECASE
)

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop", "stop_sequence": "stop", "tool_use": "stop", "max_tokens": "length",
    "refusal": "refusal", "pause_turn": "other"}


MAX_BREAKPOINTS = 4  # cache_control blocks a request may carry (Anthropic's prompt caching docs)


def _conversation_positions(request: ProviderRequest) -> list[int] | None:
    """Where the request's `cache_marks` fall among the body's messages (the system messages
    leave for `system`; marks on them are covered by its own breakpoint)."""
    if request.cache_marks is None:
        return None
    position, n = {}, 0
    for i, message in enumerate(request.messages):
        if message["role"] != "system":
            position[i], n = n, n + 1
    return sorted({position[i] for i in request.cache_marks if i in position})


@model_api("anthropic")
class AnthropicProvider(SdkEndpointApi):
    distributions: ClassVar[tuple[str, ...]] = ("anthropic",)
    call_path: ClassVar[str] = "/v1/messages"
    models_path: ClassVar[str] = "/v1/models"
    batch_price_factor: ClassVar[float | None] = 0.5  # Message Batches bill half the direct price
    price_table_provider: ClassVar[str | None] = "anthropic"
    list_price_hosts: ClassVar[tuple[str, ...]] = ("api.anthropic.com",)
    base_url_hint: ClassVar[str | None] = (
        "an Anthropic base_url is the server's root, as https://api.anthropic.com is (the client "
        "adds /v1/messages)"
    )
    # A cache write is billed at 1.25x the input price (5-minute cache) or 2x (1-hour cache),
    # a read at 0.1x (Anthropic's prompt caching docs, "Pricing").
    cache_write_factor: ClassVar[float] = 1.25
    cache_write_factor_1h = 2.0

    # --- params rules -------------------------------------------------------------------

    @property
    def claude_name(self) -> str:
        """The Claude model's own name, as its rules are written for it (a cloud spells it its
        own way: `ClaudeOnCloud`)."""
        return self.spec.model

    def check(self) -> None:
        spec = self.spec
        if NO_SAMPLING_NAME.match(self.claude_name) and (spec.temperature is not None or spec.top_p is not None):
            raise ValueError(
                f"Anthropic deprecated temperature and top_p for {spec.model} (it answers "
                "'`temperature` is deprecated for this model'): leave them out"
            )
        if spec.structured_output in ("json_schema", "json_object"):
            raise ValueError(
                f"structured_output {spec.structured_output} is an OpenAI response_format; "
                "Anthropic models take `tool` or `prompt`"
            )
        if spec.temperature is not None and spec.top_p is not None:
            raise ValueError(
                "Anthropic refuses temperature together with top_p on its recent models "
                "('temperature and top_p cannot both be specified for this model'): set one"
            )
        if spec.price_per_mtok_cache_write is not None and spec.prompt_cache == "off":
            raise ValueError("price_per_mtok_cache_write is set, but prompt_cache is off: nothing is written")
        if spec.temperature is not None and spec.temperature > 1.0:
            raise ValueError("Anthropic takes a temperature from 0 to 1")

    @property
    def structured_mode(self) -> str:
        return self.spec.structured_output or "tool"

    def key_material(self) -> dict:
        """How this model's requests are formed, beyond the request itself (part of cache keys)."""
        return {"structured_output": self.structured_mode, "extra_body": self.spec.extra_body}

    # --- the endpoint ---------------------------------------------------------------------

    def _sdk(self) -> anthropic.AsyncAnthropic:
        """The `anthropic` SDK's client, whose URL and headers the calls are sent with
        (base URL, auth, API version)."""
        import anthropic

        return anthropic.AsyncAnthropic(api_key=self.api_key or "unused", base_url=self.spec.base_url,
                                        default_headers=self.spec.extra_headers or None)

    # --- calls ----------------------------------------------------------------------------

    def seed(self, key: str, sample: int) -> int | None:
        """Anthropic's API takes no seed."""
        return None

    def _forced_tool(self, request: ProviderRequest) -> str | None:
        """The tool whose input is the answer, when this request forces one."""
        if request.schema is not None and self.structured_mode == "tool":
            return request.schema_name or "answer"
        return None

    def body(self, request: ProviderRequest) -> dict:
        """The messages body for `request`: only fields this model accepts."""
        messages = request.messages
        forced_tool = self._forced_tool(request) is not None
        if request.schema is not None and not forced_tool:
            messages = with_schema_instruction(messages, request.schema)
        system = [m["content"] for m in messages if m["role"] == "system"]
        body: dict = {
            "model": self.spec.model,
            "messages": [m for m in messages if m["role"] != "system"],
            "max_tokens": request.max_tokens,
        }
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.top_p is not None:
            body["top_p"] = request.top_p
        if system:
            body["system"] = "\n\n".join(system)
        self._mark_cache_breakpoints(body, _conversation_positions(request))
        if forced_tool:
            tool = self._forced_tool(request)
            body["tools"] = [{
                "name": tool,
                "description": "Give your answer by calling this tool.",
                "input_schema": request.schema,
            }]
            body["tool_choice"] = {"type": "tool", "name": tool}
        body.update(self.spec.extra_body)
        return body

    def _mark_cache_breakpoints(self, body: dict, marked: list[int] | None) -> None:
        """Cache breakpoints where a prefix repeats (unless `prompt_cache: off`): the end of
        the system prompt (the role's instructions, shared by every call of the role), then
        the messages the request's `cache_marks` name (`marked`: their positions among the
        body's messages), or by default the second-to-last message (the history the next call
        of the conversation repeats, whatever varies coming last) and the last one (the next
        call of a growing conversation extends it). Anthropic caches only at breakpoints, at
        most four a request, and only a prefix of the model's minimum length (shorter ones
        are simply not cached); tools come before the system prompt in the prefix."""
        if self.spec.prompt_cache == "off":
            return
        control = {"type": "ephemeral", "ttl": "1h"} if self.spec.prompt_cache == "1h" else {"type": "ephemeral"}
        if "system" in body:
            body["system"] = [{"type": "text", "text": body["system"], "cache_control": control}]
        messages = body["messages"] = [dict(m) for m in body["messages"]]
        chosen = messages[-2:] if marked is None else [messages[i] for i in marked]
        if len(chosen) + ("system" in body) > MAX_BREAKPOINTS:
            raise ValueError(f"Anthropic takes at most {MAX_BREAKPOINTS} cache breakpoints a request")
        for message in chosen:
            content = message["content"]
            if isinstance(content, str):
                message["content"] = [{"type": "text", "text": content, "cache_control": control}]
            elif content:
                message["content"] = [*content[:-1], {**content[-1], "cache_control": control}]

    @property
    def min_cacheable_tokens(self) -> int:
        """The shortest prefix this model caches (Anthropic's prompt caching docs)."""
        return min_cacheable_tokens(self.claude_name)

    def cached_prefix(self, prefix_tokens: int) -> int:
        """A prefix ending at a breakpoint of the earlier call is read whole, if long enough."""
        if self.spec.prompt_cache == "off" or prefix_tokens < self.min_cacheable_tokens:
            return 0
        return prefix_tokens

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        body = self.body(request)
        reply = await self._http.post(self.url, body, self.headers, request.timeout_s)
        if not 200 <= reply.status < 300:
            message = reply_error_message(reply.status, reply.body)
            raise classify_status(reply.status, message, reply.headers, self.describe())
        try:
            return _parse(reply.body, self._forced_tool(request))
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise RetryableError(f"{self.describe()}: malformed response: {exc!r}") from None

    # --- Anthropic's Message Batches (llm.batches): create, retrieve, results ---------------

    async def _json(self, method: str, url: str, body: dict | None = None) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        reply = await self._http.send(method, url, self.headers, 120.0, data)
        if not 200 <= reply.status < 300:
            raise classify_status(reply.status, reply_error_message(reply.status, reply.body),
                                  reply.headers, f"{self.describe()} batch")
        return reply.body

    async def batch_submit(self, items: list[tuple[str, ProviderRequest]]) -> str:
        requests = [{"custom_id": key, "params": self.body(request)} for key, request in items]
        created = json.loads(await self._json("POST", f"{self.url}/batches", {"requests": requests}))
        return created["id"]

    async def batch_poll(self, batch_id: str) -> tuple[str, bool, dict]:
        batch = json.loads(await self._json("GET", f"{self.url}/batches/{batch_id}"))
        status = batch["processing_status"]
        return status, status == "ended", batch

    async def batch_results(self, batch_id: str, batch: dict, requests: dict[str, ProviderRequest]
                            ) -> dict[str, ProviderResponse | Exception]:
        """Each succeeded request's message, or its failure, for the `requests` asked for;
        canceled and expired ones are left out."""
        out: dict[str, ProviderResponse | Exception] = {}
        for line in (await self._json("GET", batch["results_url"])).decode().splitlines():
            row = json.loads(line)
            key, result = row["custom_id"], row["result"]
            if key not in requests:
                continue
            if result["type"] == "succeeded":
                out[key] = _parse(json.dumps(result["message"]).encode(), self._forced_tool(requests[key]))
            elif result["type"] == "errored":
                error = (result.get("error") or {}).get("error") or {}
                status = 400 if error.get("type") == "invalid_request_error" else 500
                out[key] = classify_status(status, error.get("message", "errored"), None, self.describe())
        return out

    async def aclose(self) -> None:
        if "_http" in self.__dict__:
            await self._http.aclose()


def _parse(raw: bytes, tool: str | None) -> ProviderResponse:
    """A message's JSON: the forced tool's input when `tool` is set, else the text blocks."""
    resp = json.loads(raw)
    blocks = resp.get("content") or []
    text = None
    if tool is not None:
        for block in blocks:
            if block.get("type") == "tool_use" and block.get("name") == tool:
                text = json.dumps(block["input"])
                break
    else:
        parts = [b["text"] for b in blocks if b.get("type") == "text"]
        text = "".join(parts) if parts else None
    usage = resp.get("usage") or {}
    # `input_tokens` counts only what follows the last cache breakpoint; the prompt is all three.
    read = usage.get("cache_read_input_tokens") or 0
    written = usage.get("cache_creation_input_tokens") or 0
    return ProviderResponse(
        text=text,
        finish_reason=_FINISH.get(resp.get("stop_reason") or "", "other"),
        input_tokens=(usage.get("input_tokens") or 0) + read + written,
        output_tokens=usage.get("output_tokens") or 0,
        model_version=resp.get("model"),
        cached_input_tokens=read,
        cache_write_tokens=written,
    )


# The shortest prompt prefix each model caches, in tokens (Anthropic's prompt caching docs,
# "Cache limitations": 4096 for Claude Opus 4.5 and 4.6 and Haiku 4.5, 2048 for Sonnet 4.6,
# Opus 4.7 and the Haiku 3 models, 1024 for the other models).
MIN_CACHEABLE = (
    (re.compile(r"^claude-(?:opus-4-[56]|haiku-4-5)"), 4096),
    (re.compile(r"^claude-(?:sonnet-4-6|opus-4-7|3-5-haiku|3-haiku|haiku-3)"), 2048),
)
DEFAULT_MIN_CACHEABLE = 1024


def min_cacheable_tokens(model: str) -> int:
    for pattern, tokens in MIN_CACHEABLE:
        if pattern.match(model):
            return tokens
    return DEFAULT_MIN_CACHEABLE
