"""OpenAI chat completions, and every server that speaks them (vLLM, Ollama, llama.cpp, ...)."""

from __future__ import annotations

import httpx2
import openai

from ...params import ModelSpec
from ..types import ProviderRequest, ProviderResponse, RetryableError
from .http_errors import classify_status, status_error_message

_FINISH = {"stop": "stop", "length": "length", "content_filter": "content_filter", "tool_calls": "stop"}


def http_limits() -> httpx2.Limits:
    """No client-side cap: concurrency is bounded by the model's own semaphore instead."""
    return httpx2.Limits(max_connections=None, max_keepalive_connections=None, keepalive_expiry=30)


class OpenAIProvider:
    def __init__(self, spec: ModelSpec, api_key: str | None):
        self.spec = spec
        self._client = openai.AsyncOpenAI(
            api_key=api_key or "unused",
            base_url=spec.base_url,
            max_retries=0,  # retries are ours: one policy for every provider
            timeout=spec.timeout_s,
            default_headers=spec.extra_headers or None,
            http_client=openai.DefaultAsyncHttpxClient(limits=http_limits(), timeout=spec.timeout_s),
        )

    def describe(self) -> str:
        return f"openai {self.spec.model}" + (f" at {self.spec.base_url}" if self.spec.base_url else "")

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        kwargs: dict = {
            "model": self.spec.model,
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": request.timeout_s,
        }
        if request.top_p is not None:
            kwargs["top_p"] = request.top_p
        if request.seed is not None:
            kwargs["seed"] = request.seed
        if request.schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.schema_name or "answer", "schema": request.schema},
            }
        try:
            resp = await self._client.chat.completions.create(**kwargs)
        except openai.APIStatusError as exc:
            raise classify_status(exc.status_code, status_error_message(exc), exc.response.headers, self.describe()) from None
        except openai.APITimeoutError:
            raise RetryableError(f"{self.describe()}: timed out after {request.timeout_s:g}s") from None
        except openai.APIConnectionError as exc:
            raise RetryableError(f"{self.describe()}: connection error: {exc}") from None
        except (openai.APIResponseValidationError, ValueError) as exc:
            raise RetryableError(f"{self.describe()}: malformed response: {exc}") from None
        if not getattr(resp, "choices", None):
            raise RetryableError(f"{self.describe()}: malformed response: no choices")
        choice = resp.choices[0]
        message = choice.message
        refusal = getattr(message, "refusal", None)
        finish = "refusal" if refusal else _FINISH.get(choice.finish_reason or "", "other")
        usage = resp.usage
        return ProviderResponse(
            text=message.content,
            finish_reason=finish,
            input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            output_tokens=getattr(usage, "completion_tokens", 0) or 0,
            model_version=resp.model,
            refusal=refusal,
        )

    async def aclose(self) -> None:
        await self._client.close()

