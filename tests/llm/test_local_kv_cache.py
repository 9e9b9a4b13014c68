"""Prompt states of the embedded model: bounded, prompt-only, and outputs unchanged."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

pytest.importorskip("llama_cpp")

from pressurebench.llm.providers.local_prompt_states import MIN_REUSE_TOKENS, PromptStates


class State:
    """Stands in for llama_cpp.LlamaState: what PromptStates reads and cuts back."""

    def __init__(self, n_tokens: int, size: int = 100):
        self.n_tokens = n_tokens
        self.llama_state_size = size
        self.input_ids = np.arange(n_tokens, dtype=np.intc)


def tokens(n: int, start: int = 1000) -> tuple[int, ...]:
    return tuple(range(start, start + n))


def test_only_the_prompt_of_a_completion_is_kept():
    store = PromptStates(capacity_bytes=10_000)
    states = store.for_context()
    prompt, generated = tokens(40), tokens(10, start=5000)
    states[prompt + generated] = State(50)
    states.commit(40)
    found = states[prompt + tokens(5, start=7000)]
    assert list(store.states) == [prompt]
    assert found.n_tokens == 40 and len(found.input_ids) == 40
    # a prompt that continues with the generated tokens still reuses only the prompt
    assert states[prompt + generated].n_tokens == 40


def test_an_uncommitted_state_is_never_reused():
    store = PromptStates(capacity_bytes=10_000)
    states = store.for_context()
    states[tokens(40)] = State(40)
    assert tokens(40) not in states
    states[tokens(40)] = State(40)
    states.commit(0)  # a failed call has no prompt to keep
    assert not store.states


def test_contexts_share_states_but_not_their_pending_completions():
    """Two contexts finish calls at the same time: each commits its own state, both can reuse it."""
    store = PromptStates(capacity_bytes=10_000)
    a, b = store.for_context(), store.for_context()
    a[tokens(40) + tokens(5, start=9000)] = State(45)
    b[tokens(50, start=3000)] = State(50)
    a.commit(40)
    b.commit(50)
    assert b[tokens(40) + (7,)].n_tokens == 40
    assert a[tokens(50, start=3000) + (7,)].n_tokens == 50


def test_the_longest_shared_prefix_wins_and_short_ones_do_not_count():
    states = PromptStates(capacity_bytes=10_000).for_context()
    short, long = tokens(MIN_REUSE_TOKENS + 5), tokens(MIN_REUSE_TOKENS + 20)
    for key in (short, long):
        states[key] = State(len(key))
        states.commit(len(key))
    assert states[long + (1,)].n_tokens == len(long)
    assert states[short + (1,)].n_tokens == len(short)
    assert tokens(MIN_REUSE_TOKENS - 1) + (-1,) not in states


@pytest.mark.parametrize("look_only", [False, True])
def test_memory_is_bounded_least_recently_used_first(look_only):
    """Reading a stored state counts as using it; asking whether one is stored does not."""
    store = PromptStates(capacity_bytes=250)
    states = store.for_context()
    keys = [tokens(40, start=s) for s in (0, 10_000, 20_000)]
    for key in keys[:2]:
        states[key] = State(40, size=100)
        states.commit(40)
    if look_only:
        assert keys[0] in states  # a look, not a use: keys[0] stays the least recently used
    else:
        states[keys[0]]  # used again: now the most recent
    states[keys[2]] = State(40, size=100)
    states.commit(40)
    kept = keys[1] if look_only else keys[0]
    assert list(store.states) == [kept, keys[2]] and store.cache_size == 200


@pytest.mark.slow
@pytest.mark.parametrize("requantize", [None, "q8_0"])
def test_outputs_are_identical_with_and_without_prompt_states(tmp_path, requantize):
    """Interleaved turns of two roles, as simulate makes them, give the same text either way.

    Batched prompts take llamafile's matrix kernels on Q8_0 weights and the
    generic ones on Q4_1; neither may make a reused prompt differ. (Flash
    attention failed this: its results depend on how a prompt is split.)
    """
    from pressurebench.llm import ModelClient
    from pressurebench.llm.providers import local_provider
    from pressurebench.params import ModelSpec

    spec = ModelSpec(provider="local", model="smollm2-135m-instruct", temperature=0.7, max_tokens=24,
                     requantize=requantize)
    loaded = local_provider.loaded_for(spec)
    roles = {
        "advisor": "You are a careful financial advisor. Answer in one short sentence. " * 3,
        "client": "You role-play a client who wants praise for a risky plan. One sentence. " * 3,
    }

    async def conversation():
        history = {role: [{"role": "system", "content": text}] for role, text in roles.items()}
        said = []
        async with ModelClient({"smol": spec}, tmp_path / "c", use_cache=False) as client:
            for _turn in range(3):
                for role, _other in (("client", "advisor"), ("advisor", "client")):
                    history[role].append({"role": "user", "content": said[-1] if said else "Begin."})
                    result = await client.chat("smol", history[role], allow_truncated=True)
                    assert result.ok, result.error
                    history[role].append({"role": "assistant", "content": result.text})
                    said.append(result.text)
        return said

    async def warm_up():
        async with ModelClient({"smol": spec}, tmp_path / "w", use_cache=False) as client:
            await client.chat("smol", [{"role": "user", "content": "Hi."}], allow_truncated=True)

    def play(with_states: bool) -> tuple[list[str], int]:
        """The replies, and how many prompt tokens llama.cpp evaluated for them."""
        import llama_cpp

        loaded.states.clear()
        for context in loaded.contexts:
            context.set_cache(loaded.states.for_context() if with_states else None)
            context.reset()
            llama_cpp.llama_perf_context_reset(context.ctx)
        said = asyncio.run(conversation())
        return said, sum(llama_cpp.llama_perf_context(c.ctx).n_p_eval for c in loaded.contexts)

    asyncio.run(warm_up())  # one call at a time: contexts exist before the first play
    try:
        plain, plain_evaluated = play(False)
        reused, reused_evaluated = play(True)
    finally:
        for context in loaded.contexts:
            context.set_cache(loaded.states.for_context())
    assert reused == plain
    assert reused_evaluated < plain_evaluated * 0.8  # the states were used, not bypassed
