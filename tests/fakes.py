"""A scripted in-process provider: stage logic tested without HTTP or a real model.

`ScriptedProvider` records every request it receives and answers with whatever
the test's responder returns (for embedded models with the real provider's cache key
material and seeds): a string (plain text), a dict (structured answer,
serialised as JSON), a ProviderResponse (full control, e.g. truncation), or an
exception instance (raised, e.g. RetryableError).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pressurebench.llm.providers.registry import ModelApi, connect
from pressurebench.llm.types import ProviderRequest, ProviderResponse
from pressurebench.params import ModelSpec

Responder = Callable[[str, ProviderRequest], Any]


@dataclass
class Recorded:
    model_id: str
    request: ProviderRequest


@dataclass
class Script:
    """Shared by every provider instance the factory makes, so a test sees all calls in order."""

    responder: Responder
    calls: list[Recorded] = field(default_factory=list)

    def factory(self):
        """A ProviderFactory for ModelClient(provider_factory=...) / stage functions."""
        script = self

        class ScriptedProvider(ModelApi):
            def __init__(self, model_id: str, spec: ModelSpec):
                super().__init__(spec)
                self.model_id = model_id
                real = connect(model_id, spec, None)
                if real.embedded:  # the real provider's cache key and seeds
                    self.key_material, self.seed = real.key_material, real.seed

            def describe(self) -> str:
                return f"scripted {self.model_id}"

            async def complete(self, request: ProviderRequest) -> ProviderResponse:
                script.calls.append(Recorded(self.model_id, request))
                out = script.responder(self.model_id, request)
                if isinstance(out, BaseException):
                    raise out
                if isinstance(out, ProviderResponse):
                    return out
                text = json.dumps(out) if isinstance(out, dict) else out
                return ProviderResponse(
                    text=text, finish_reason="stop", input_tokens=10, output_tokens=5,
                    model_version=f"{self.spec.model}-scripted",
                )

        return lambda model_id, spec, api_key: ScriptedProvider(model_id, spec)

    def calls_to(self, model_id: str) -> list[ProviderRequest]:
        return [c.request for c in self.calls if c.model_id == model_id]
