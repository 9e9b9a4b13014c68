"""Claude through a cloud's own endpoint (AWS Bedrock, Google Vertex AI), by the `anthropic`
SDK's client for that cloud.

The request is Anthropic's Messages body as `AnthropicProvider` builds it (the same rules,
forced tool, cache breakpoints); the cloud's client moves the model into the URL, adds the
cloud's `anthropic_version` and signs the request with the cloud's credentials, which is why
the SDK sends these calls (the direct API's JSON transport has no SigV4 or Google auth). The
clouds bill their own list prices (the price table's `aws` and `google` entries) and their
batch jobs read from and write to buckets, so batched models are not offered here.
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from ..types import ProviderRequest, ProviderResponse, RetryableError
from .anthropic_provider import AnthropicProvider, _parse
from .http_errors import classify_status

if TYPE_CHECKING:
    from anthropic import AsyncAnthropicBedrock, AsyncAnthropicVertex

# A cloud's spelling of a Claude model around its own name: Bedrock's `us.anthropic.` /
# `global.anthropic.` prefixes and `-v1:0` suffix, Vertex's `@<date>` suffix.
CLOUD_SPELLING = re.compile(r"^(?:[a-z]+\.)?(?:anthropic\.)?(claude-[a-z0-9-]*?)(?:-v\d+(?::\d+)?)?(?:@\d{8})?$")


class ClaudeOnCloud(AnthropicProvider):
    """Claude on a cloud: Anthropic's request rules, the cloud's client, endpoint and prices."""

    batch_price_factor: ClassVar[float | None] = None
    base_url_hint: ClassVar[str | None] = None

    @property
    def claude_name(self) -> str:
        found = CLOUD_SPELLING.match(self.spec.model)
        return found.group(1) if found else self.spec.model

    def model_list_endpoint(self) -> tuple[str, dict[str, str]] | None:
        """None: the clouds list their models through other APIs than the one calls use."""
        return None

    @cached_property
    def client(self) -> AsyncAnthropicBedrock | AsyncAnthropicVertex:
        raise NotImplementedError

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        import anthropic

        body = self.body(request)
        # What `messages.create` takes by name goes by name, the rest (the sampling settings the
        # SDK no longer names, `extra_body`) as its extra body: the JSON sent is the same.
        takes = self._create_parameters
        named = {k: v for k, v in body.items() if k in takes}
        extra = {k: v for k, v in body.items() if k not in takes}
        try:
            message = await self.client.messages.create(**named, extra_body=extra or None,
                                                        timeout=request.timeout_s)
        except anthropic.APIStatusError as exc:
            raise classify_status(exc.status_code, _message(exc), exc.response.headers,
                                  self.describe()) from None
        except anthropic.APIConnectionError as exc:
            detail = " ".join(str(exc).split())[:300]
            raise RetryableError(f"{self.describe()}: connection error: {type(exc).__name__}: {detail}") from None
        try:
            return _parse(message.model_dump_json().encode(), self._forced_tool(request))
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise RetryableError(f"{self.describe()}: malformed response: {exc!r}") from None

    @cached_property
    def _create_parameters(self) -> frozenset[str]:
        import inspect

        return frozenset(inspect.signature(self.client.messages.create).parameters)

    async def aclose(self) -> None:
        if "client" in self.__dict__:
            await self.client.close()


def _message(exc: Any) -> str:
    """The cloud's own error message: Anthropic's `error.message`, Bedrock's `message`."""
    body = exc.body if isinstance(exc.body, dict) else {}
    error = body.get("error")
    if not isinstance(error, dict):
        error = body
    return str(error.get("message") or exc.message)
