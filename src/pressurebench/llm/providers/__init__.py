"""Provider adapters: each turns a ProviderRequest into a ProviderResponse or a typed error."""

from __future__ import annotations

from typing import Protocol

from ...params import ModelSpec
from ..types import ProviderRequest, ProviderResponse


class Provider(Protocol):
    """What the client asks of a provider. Whatever differs between providers lives here:
    what besides the request decides an answer (cache key material), how a call is
    seeded, and what the provider reports as the model's version (in its responses)."""

    def key_material(self) -> dict: ...

    def seed(self, key: str, sample: int) -> int | None: ...

    async def complete(self, request: ProviderRequest) -> ProviderResponse: ...

    async def aclose(self) -> None: ...

    def describe(self) -> str: ...


class ProviderBase:
    """Defaults for a provider: nothing beyond the request decides an answer, and the
    registry's seed (when set) moves with the sample index so samples differ."""

    spec: ModelSpec

    def key_material(self) -> dict:
        return {}

    def seed(self, key: str, sample: int) -> int | None:
        return None if self.spec.seed is None else self.spec.seed + sample

    async def aclose(self) -> None:
        return None


def make_provider(model_id: str, spec: ModelSpec, api_key: str | None) -> Provider:
    if spec.provider == "openai":
        from .openai_provider import OpenAIProvider

        return OpenAIProvider(spec, api_key)
    if spec.provider == "anthropic":
        from .anthropic_provider import AnthropicProvider

        return AnthropicProvider(spec, api_key)
    from .local_provider import LocalProvider

    return LocalProvider(spec)
