"""Provider adapters: each turns a ProviderRequest into a ProviderResponse or a typed error."""

from __future__ import annotations

from typing import Protocol

from ...params import ModelSpec
from ..types import ProviderRequest, ProviderResponse


class Provider(Protocol):
    async def complete(self, request: ProviderRequest) -> ProviderResponse: ...

    async def aclose(self) -> None: ...

    def describe(self) -> str: ...


def make_provider(model_id: str, spec: ModelSpec, api_key: str | None) -> Provider:
    if spec.provider == "openai":
        from .openai_provider import OpenAIProvider

        return OpenAIProvider(spec, api_key)
    if spec.provider == "anthropic":
        from .anthropic_provider import AnthropicProvider

        return AnthropicProvider(spec, api_key)
    from .local_provider import LocalProvider

    return LocalProvider(spec)
