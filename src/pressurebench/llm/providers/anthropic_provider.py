"""Anthropic messages; structured output through one forced tool whose input is the answer."""

from __future__ import annotations

import json

import anthropic

from ...params import ModelSpec
from ..types import ProviderRequest, ProviderResponse, RetryableError
from .http_errors import classify_status, status_error_message
from .openai_provider import http_limits

_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "stop", "max_tokens": "length",
           "refusal": "refusal", "pause_turn": "other"}


class AnthropicProvider:
    def __init__(self, spec: ModelSpec, api_key: str | None):
        self.spec = spec
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key or "unused",
            base_url=spec.base_url,
            max_retries=0,
            timeout=spec.timeout_s,
            default_headers=spec.extra_headers or None,
            http_client=anthropic.DefaultAsyncHttpxClient(limits=http_limits(), timeout=spec.timeout_s),
        )

    def describe(self) -> str:
        return f"anthropic {self.spec.model}" + (f" at {self.spec.base_url}" if self.spec.base_url else "")

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        system = [m["content"] for m in request.messages if m["role"] == "system"]
        messages = [m for m in request.messages if m["role"] != "system"]
        kwargs: dict = {
            "model": self.spec.model,
            "messages": messages,
            "max_tokens": request.max_tokens,
            "timeout": request.timeout_s,
        }
        # The 2.x SDK has no sampling keyword arguments; the API still takes them in the body.
        sampling = {"temperature": min(request.temperature, 1.0)}
        if request.top_p is not None:
            sampling["top_p"] = request.top_p
        kwargs["extra_body"] = sampling
        if system:
            kwargs["system"] = "\n\n".join(system)
        tool = request.schema_name or "answer"
        if request.schema is not None:
            kwargs["tools"] = [{
                "name": tool,
                "description": "Give your answer by calling this tool.",
                "input_schema": request.schema,
            }]
            kwargs["tool_choice"] = {"type": "tool", "name": tool}
        try:
            resp = await self._client.messages.create(**kwargs)
        except anthropic.APIStatusError as exc:
            raise classify_status(exc.status_code, status_error_message(exc), exc.response.headers, self.describe()) from None
        except anthropic.APITimeoutError:
            raise RetryableError(f"{self.describe()}: timed out after {request.timeout_s:g}s") from None
        except anthropic.APIConnectionError as exc:
            raise RetryableError(f"{self.describe()}: connection error: {exc}") from None
        except (anthropic.APIResponseValidationError, ValueError) as exc:
            raise RetryableError(f"{self.describe()}: malformed response: {exc}") from None
        text = None
        blocks = getattr(resp, "content", None) or []
        if request.schema is not None:
            for block in blocks:
                if getattr(block, "type", None) == "tool_use" and block.name == tool:
                    text = json.dumps(block.input)
                    break
        else:
            parts = [b.text for b in blocks if getattr(b, "type", None) == "text"]
            text = "".join(parts) if parts else None
        usage = resp.usage
        return ProviderResponse(
            text=text,
            finish_reason=_FINISH.get(resp.stop_reason or "", "other"),
            input_tokens=getattr(usage, "input_tokens", 0) or 0,
            output_tokens=getattr(usage, "output_tokens", 0) or 0,
            model_version=resp.model,
        )

    async def aclose(self) -> None:
        await self._client.close()

