"""Gemini through Google's own API and its official SDK, `google-genai`.

The SDK builds and sends every request: the conversation as `contents` of the roles
`user` and `model` (system messages become the `system_instruction`), a structured answer
through the response schema (`response_mime_type: application/json` with
`response_schema`, which the SDK converts from the JSON schema), the thinking configuration
(`thinking_budget` for Gemini 2.5, `thinking_level` for Gemini 3), and `base_url` through
its `HttpOptions` (a local server, a proxy; `GOOGLE_GEMINI_BASE_URL` also serves). Usage
is read from `usage_metadata`: the prompt (cached content included), the candidates and
the thoughts, which are billed as output. Batched models go through Gemini's Batch Mode
(inlined requests, half the price), and `pressurebench check` asks the model list.
"""

from __future__ import annotations

import copy
import re
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from ..answer_formats import with_schema_instruction
from ..types import (
    FinishReason,
    ProviderAuthError,
    ProviderRequest,
    ProviderResponse,
    RejectedError,
    RetryableError,
)
from .http_errors import classify_status
from .registry import ModelApi, model_api

if TYPE_CHECKING:
    from google.genai import Client
    from google.genai.types import ContentDict, GenerateContentConfig, GenerateContentResponse

API_HOST = "generativelanguage.googleapis.com"
# Gemini 2.5 Pro thinks within 128 to 32768 tokens and cannot stop thinking (Gemini API
# thinking guide); Gemini 2.5 models take a thinking budget, not a level, and no model takes
# both (the API answers 400).
PRO_25 = re.compile(r"^(?:models/)?gemini-2\.5-pro", re.IGNORECASE)
GEMINI_25 = re.compile(r"^(?:models/)?gemini-2\.5", re.IGNORECASE)
PRO_25_BUDGET = (128, 32768)
DYNAMIC_BUDGET = -1

_FINISH: dict[str, FinishReason] = {"STOP": "stop", "MAX_TOKENS": "length", "SAFETY": "content_filter",
           "RECITATION": "content_filter", "BLOCKLIST": "content_filter",
           "PROHIBITED_CONTENT": "content_filter", "SPII": "content_filter",
           "MODEL_ARMOR": "content_filter"}
# Batch states that end a batch (Gemini Batch Mode, `BatchState`; the SDK names them JOB_STATE_*).
ENDED = ("JOB_STATE_SUCCEEDED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED", "JOB_STATE_EXPIRED")


@model_api("google")
class GoogleProvider(ModelApi):
    settings: ClassVar[tuple[str, ...]] = ("thinking_budget", "thinking_level")
    distributions: ClassVar[tuple[str, ...]] = ("google-genai",)
    batch_price_factor: ClassVar[float | None] = 0.5  # Batch Mode bills half the direct price
    # Inlined requests of one batch: at most 20 MB (Gemini Batch Mode guide), with room for
    # the envelope of each request.
    batch_max_bytes: ClassVar[int | None] = 18 * 1024 * 1024
    price_table_provider: ClassVar[str | None] = "google"
    list_price_hosts: ClassVar[tuple[str, ...]] = (API_HOST,)
    base_url_hint: ClassVar[str | None] = (
        "a Gemini base_url is the server's root, as https://generativelanguage.googleapis.com is "
        "(the client adds the API version and /models)"
    )

    # --- params rules -------------------------------------------------------------------

    def check(self) -> None:
        spec = self.spec
        if spec.structured_output not in (None, "json_schema", "prompt"):
            raise ValueError(
                f"structured_output {spec.structured_output}: Gemini models take `json_schema` "
                "(its response schema) or `prompt`"
            )
        if spec.thinking_budget is not None and spec.thinking_level is not None:
            raise ValueError("set thinking_budget or thinking_level, not both (Gemini refuses both)")
        if spec.thinking_level is not None and GEMINI_25.match(spec.model):
            raise ValueError(f"{spec.model} takes thinking_budget, not thinking_level")
        budget = spec.thinking_budget
        if PRO_25.match(spec.model) and budget is not None and budget != DYNAMIC_BUDGET and not (
                PRO_25_BUDGET[0] <= budget <= PRO_25_BUDGET[1]):
            raise ValueError(
                f"{spec.model} thinks within {PRO_25_BUDGET[0]} to {PRO_25_BUDGET[1]} tokens and "
                f"cannot stop thinking: thinking_budget {budget} is refused (-1 lets it decide)"
            )
        if spec.extra_body:
            raise ValueError("extra_body: Gemini requests are built by the google-genai SDK")
        if spec.prompt_cache == "1h":
            raise ValueError("prompt_cache: 1h is Anthropic's 1-hour cache; Gemini caches by itself")
        if spec.price_per_mtok_cache_write is not None:
            raise ValueError("price_per_mtok_cache_write: Gemini bills no cache writes")

    @property
    def structured_mode(self) -> str:
        return self.spec.structured_output or "json_schema"

    @property
    def thinking_room(self) -> int:
        """Tokens the output limit adds for thinking: the budget, or `reasoning_tokens` where the
        model decides; none with thinking off. Thoughts count against `max_output_tokens`."""
        budget = self.spec.thinking_budget
        if budget == 0:
            return 0
        return budget if budget is not None and budget > 0 else self.spec.reasoning_tokens

    def token_limit(self, answer_tokens: int) -> int:
        return answer_tokens + self.thinking_room

    def identity_extras(self) -> tuple:
        s = self.spec
        return (self.structured_mode, s.thinking_budget, s.thinking_level, self.thinking_room)

    def key_material(self) -> dict:
        """How this model's requests are formed, beyond the request itself (part of cache keys)."""
        s = self.spec
        return {"structured_output": self.structured_mode, "thinking_budget": s.thinking_budget,
                "thinking_level": s.thinking_level, "thinking_room": self.thinking_room}

    # --- the SDK and the endpoint ---------------------------------------------------------

    @cached_property
    def client(self) -> Client:
        """The SDK's client: the key, `base_url` and the params' headers; no retries of its own
        (the model client retries)."""
        from google import genai
        from google.genai import types

        options = types.HttpOptions(base_url=self.spec.base_url,
                                    headers=dict(self.spec.extra_headers) or None)
        return genai.Client(api_key=self.api_key or "unused", http_options=options)

    def model_list_endpoint(self) -> tuple[str, dict[str, str]]:
        """`GET <base>/<version>/models` with the SDK's own base URL, version and headers."""
        options = self.client._api_client._http_options  # the SDK resolves base URL and env
        url = f"{str(options.base_url).rstrip('/')}/{options.api_version}/models"
        return url, {k: v for k, v in (options.headers or {}).items() if k.lower() != "content-type"}

    def model_page_url(self, url: str, cursor: str) -> str:
        """The next page of the model list (`pageToken`, Gemini's `models.list`)."""
        from urllib.parse import urlencode

        return f"{url}?{urlencode({'pageSize': 1000, 'pageToken': cursor})}"

    # --- requests -------------------------------------------------------------------------

    def contents(self, request: ProviderRequest) -> tuple[str | None, list[ContentDict]]:
        """(system instruction, contents): system messages leave for the instruction; the
        assistant speaks as `model`."""
        messages = request.messages
        if request.schema is not None and self.structured_mode == "prompt":
            messages = with_schema_instruction(messages, request.schema)
        system = [m["content"] for m in messages if m["role"] == "system"]
        contents: list[ContentDict] = [
            {"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]}
            for m in messages if m["role"] != "system"]
        return ("\n\n".join(system) or None), contents

    def config(self, request: ProviderRequest) -> GenerateContentConfig:
        """The generation config: only what the params set, the response schema, thinking."""
        from google.genai import types

        spec = self.spec
        system, _ = self.contents(request)
        fields: dict[str, Any] = {"max_output_tokens": self.token_limit(request.max_tokens)}
        if system is not None:
            fields["system_instruction"] = system
        if request.temperature is not None:
            fields["temperature"] = request.temperature
        if request.top_p is not None:
            fields["top_p"] = request.top_p
        if request.seed is not None:
            fields["seed"] = request.seed
        if request.schema is not None and self.structured_mode == "json_schema":
            # The SDK rewrites the schema in place ($defs inlined): the request's stays as it is.
            fields["response_mime_type"] = "application/json"
            fields["response_schema"] = copy.deepcopy(request.schema)
        if spec.thinking_budget is not None or spec.thinking_level is not None:
            fields["thinking_config"] = types.ThinkingConfig(
                thinking_budget=spec.thinking_budget,
                thinking_level=spec.thinking_level.upper() if spec.thinking_level else None)
        fields["http_options"] = types.HttpOptions(timeout=int(request.timeout_s * 1000))
        return types.GenerateContentConfig(**fields)

    def body(self, request: ProviderRequest) -> dict:
        """What a batch holds for `request` (its size bounds a batch, `llm.batches`)."""
        _, contents = self.contents(request)
        return {"contents": contents, "config": self.config(request).model_dump(mode="json", exclude_none=True)}

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        _, contents = self.contents(request)
        async with _SdkErrors(self.describe()):
            reply = await self.client.aio.models.generate_content(
                model=self.spec.model, contents=contents, config=self.config(request))
        try:
            return _parse(reply)
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise RetryableError(f"{self.describe()}: malformed response: {exc!r}") from None

    # --- Gemini Batch Mode (llm.batches): inlined requests, get, inlined responses ----------

    async def batch_submit(self, items: list[tuple[str, ProviderRequest]]) -> str:
        from google.genai import types

        requests = [types.InlinedRequest(contents=self.contents(r)[1], config=self.config(r),
                                         metadata={"key": key}) for key, r in items]
        async with _SdkErrors(f"{self.describe()} batch"):
            job = await self.client.aio.batches.create(
                model=self.spec.model, src=types.BatchJobSource(inlined_requests=requests),
                config=types.CreateBatchJobConfig(display_name=f"pressurebench {len(items)} requests"))
        if not job.name:
            raise RetryableError(f"{self.describe()} batch: created without a name")
        return job.name

    async def batch_poll(self, batch_id: str) -> tuple[str, bool, dict]:
        async with _SdkErrors(f"{self.describe()} batch"):
            job = await self.client.aio.batches.get(name=batch_id)
        state = job.state.value if job.state is not None else "JOB_STATE_UNSPECIFIED"
        return state, state in ENDED, job.model_dump(mode="json", exclude_none=True)

    async def batch_results(self, batch_id: str, batch: dict, requests: dict[str, ProviderRequest]
                            ) -> dict[str, ProviderResponse | Exception]:
        """Each answered request's response or failure, for the `requests` asked for; requests
        of an expired or cancelled batch without a result are left out (asked again)."""
        from google.genai import types

        job = types.BatchJob.model_validate(batch)
        if job.state is not None and job.state.value == "JOB_STATE_FAILED":
            reason = job.error.message if job.error is not None else None
            raise RejectedError(f"{self.describe()}: batch {batch_id} failed: {reason or 'no reason given'}")
        out: dict[str, ProviderResponse | Exception] = {}
        for item in (job.dest.inlined_responses if job.dest is not None else None) or []:
            key = (item.metadata or {}).get("key")
            if key not in requests:
                continue
            if item.response is not None:
                out[key] = _parse(item.response)
            elif item.error is not None:
                out[key] = classify_status(item.error.code or 500, item.error.message or "failed",
                                           None, self.describe())
        return out

    async def aclose(self) -> None:
        if "client" in self.__dict__:
            await self.client.aio.aclose()


class _SdkErrors:
    """The SDK's failures as the model client's: an HTTP error by its status (a 429's
    retry-after honoured), a broken connection or timeout as retryable."""

    def __init__(self, who: str):
        self.who = who

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if exc is None:
            return False
        import aiohttp
        import httpx2
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            headers = getattr(exc.response, "headers", None)
            message = exc.message or exc.status or str(exc)
            if exc.code == 400 and "API_KEY_INVALID" in str(exc.details):
                # Gemini answers a wrong key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
                raise ProviderAuthError(f"{self.who}: HTTP 400: {message}") from None
            raise classify_status(exc.code, message, headers, self.who) from None
        if isinstance(exc, (TimeoutError, OSError, aiohttp.ClientError, httpx2.TransportError)):
            detail = " ".join(str(exc).split())[:300]
            raise RetryableError(f"{self.who}: connection error: {type(exc).__name__}: {detail}") from None
        return False


def _parse(reply: GenerateContentResponse) -> ProviderResponse:
    """A GenerateContentResponse: the first candidate's text parts (thought summaries left
    out), usage from `usage_metadata` (the prompt counts its cached content; thoughts are
    output apart from the candidates)."""
    usage = reply.usage_metadata
    thoughts = (usage.thoughts_token_count or 0) if usage else 0
    candidates = (usage.candidates_token_count or 0) if usage else 0
    text: str | None = None
    finish: FinishReason = "other"
    if reply.candidates:
        candidate = reply.candidates[0]
        parts = candidate.content.parts if candidate.content and candidate.content.parts else []
        texts = [p.text for p in parts if p.text and not p.thought]
        text = "".join(texts) if texts else None
        reason = candidate.finish_reason.value if candidate.finish_reason is not None else ""
        finish = _FINISH.get(reason, "other")
    elif reply.prompt_feedback is not None and reply.prompt_feedback.block_reason is not None:
        finish = "content_filter"
    return ProviderResponse(
        text=text,
        finish_reason=finish,
        input_tokens=(usage.prompt_token_count or 0) if usage else 0,
        output_tokens=candidates + thoughts,
        model_version=reply.model_version,
        reasoning_tokens=thoughts,
        cached_input_tokens=(usage.cached_content_token_count or 0) if usage else 0,
    )
