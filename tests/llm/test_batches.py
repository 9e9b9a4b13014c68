"""Batch mode against mock servers that speak OpenAI's Batch API and Anthropic's Message Batches.

The rules the mock enforces, and where they come from, are in
`mock_providers.mock_batches`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from mock_providers import FaultPlan
from pressurebench.llm import ModelClient
from pressurebench.llm.batches import Batcher, BatchSettings
from pressurebench.llm.providers.registry import api_for
from pressurebench.llm.types import ProviderRequest
from pressurebench.params import ModelSpec
from pressurebench.schemas import JudgeOutput
from support import WAIT_S

KEY_ENV = "PB_BATCH_KEY"
FAST = BatchSettings(max_requests=100, collect_s=0.2, poll_s=0.05, max_wait_s=60)
N = 12


def spec(server, provider: str, **kw) -> ModelSpec:
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    model = "gpt-4o-mini" if provider == "openai" else "claude-haiku-4-5"
    return ModelSpec(provider=provider, model=model, base_url=base, api_key_env=KEY_ENV, batch=True,
                     price_per_mtok_in=2.0, price_per_mtok_out=8.0, **kw)


def messages(i: int) -> list[dict]:
    return [{"role": "system", "content": "Judge."}, {"role": "user", "content": f"transcript {i}"}]


def run_calls(tmp_path, model_spec, n=N, schema=JudgeOutput, settings=FAST):
    client = ModelClient({"m": model_spec}, tmp_path / "cache", batch=settings, max_retries=0)

    async def go():
        async with client:
            return await asyncio.gather(*(client.chat("m", messages(i), schema=schema) for i in range(n)))

    return asyncio.run(go()), client


@pytest.fixture
def server(mock_server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, mock_server.api_key)
    return mock_server


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_concurrent_calls_go_out_as_one_batch_at_half_price_and_land_in_the_cache(server, tmp_path, provider):
    results, _ = run_calls(tmp_path, spec(server, provider))
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    assert all(isinstance(r.parsed, JudgeOutput) for r in results)
    assert server.batch_desk.created[provider] == 1
    assert "/v1/chat/completions" not in server.path_counts and "/v1/messages" not in server.path_counts
    direct = ModelSpec(**{**spec(server, provider).model_dump(), "batch": False})
    r = results[0]
    assert r.cost_usd == pytest.approx(api_for(direct).price(r.input_tokens, r.output_tokens) / 2)
    again, _ = run_calls(tmp_path, spec(server, provider))
    assert all(r.cached for r in again) and server.batch_desk.created[provider] == 1
    assert not list((tmp_path / "cache" / "batches").rglob("*.json"))  # records go once answered


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_expired_batch_resubmits_only_what_is_missing(server, tmp_path, provider):
    server.batch_expire = 1
    results, _ = run_calls(tmp_path, spec(server, provider))
    assert all(r.ok for r in results)
    sizes = sorted(len(b.items) for b in server.batch_desk.batches.values())
    assert sizes == [N // 2, N]  # the second batch: only the half the first left unanswered
    answered = [cid for b in server.batch_desk.batches.values() for cid in b.answers]
    assert len(answered) == len(set(answered)) == N  # no request answered (paid) twice


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_failures_inside_a_batch_are_error_rows_and_the_rest_answers(server, tmp_path, provider):
    server.fault_plan = FaultPlan(server_error=0.3, seed=3)
    results, _ = run_calls(tmp_path, spec(server, provider), schema=None)
    failed = [r for r in results if not r.ok]
    assert failed and len(failed) < N
    assert all("HTTP 500" in r.error for r in failed)
    assert server.batch_desk.created[provider] == 1


CHILD = textwrap.dedent("""
    import asyncio, sys
    from pressurebench.llm import ModelClient
    from pressurebench.llm.batches import BatchSettings
    from pressurebench.params import ModelSpec
    spec = ModelSpec.model_validate_json(sys.argv[1])
    client = ModelClient({"m": spec}, sys.argv[2], batch=BatchSettings(collect_s=0.2, poll_s=0.05))
    async def go():
        async with client:
            await asyncio.gather(*(client.chat("m", [{"role": "system", "content": "Judge."},
                {"role": "user", "content": f"transcript {i}"}]) for i in range(int(sys.argv[3]))))
    asyncio.run(go())
""")


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_run_killed_while_waiting_resumes_polling_and_submits_nothing_twice(server, tmp_path, provider):
    server.batch_polls = 10**9  # the batch never ends while the first run waits
    model_spec = spec(server, provider)
    child = subprocess.Popen([sys.executable, "-c", CHILD, model_spec.model_dump_json(),
                              str(tmp_path / "cache"), str(N)], env=dict(os.environ))

    def polls() -> int:
        return sum(b.polls for b in list(server.batch_desk.batches.values()))

    # Killed once its batch is recorded and it has polled a few times (waiting for the batch).
    deadline = time.monotonic() + WAIT_S
    while not list((tmp_path / "cache" / "batches").rglob("*.json")) or polls() < 3:
        if time.monotonic() > deadline or child.poll() is not None:
            pytest.fail(f"no batch was recorded and polled 3 times ({polls()} polls)")
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert server.batch_desk.created[provider] == 1
    server.batch_polls = 1
    results, _ = run_calls(tmp_path, model_spec, schema=None)
    assert all(r.ok for r in results)
    assert server.batch_desk.created[provider] == 1  # counted at the mock: submitted once


def test_batches_are_split_to_stay_within_the_providers_size_limits(server, tmp_path):
    small = BatchSettings(max_requests=100, max_bytes=2500, collect_s=0.2, poll_s=0.05, max_wait_s=60)
    results, _ = run_calls(tmp_path, spec(server, "openai"), settings=small)
    assert all(r.ok for r in results)
    sizes = [len(b.items) for b in server.batch_desk.batches.values()]
    assert len(sizes) > 1 and sum(sizes) == N


def test_a_full_batch_is_held_by_the_batcher_until_it_is_submitted(tmp_path):
    """The event loop keeps only a weak reference to a task (asyncio.create_task's docs: "save
    a reference to the result of this function"): the submission a full batch starts is held
    until it ends, so it cannot be collected half-way and leave its calls waiting forever."""

    class Provider:
        batch_max_bytes = None  # no batch size limit of its own

        def __init__(self):
            self.gate = asyncio.Event()

        def body(self, request):
            return {"messages": request.messages}

        async def batch_submit(self, items):
            await self.gate.wait()
            raise RuntimeError("the provider refused the batch")

    async def go():
        provider = Provider()
        batcher = Batcher(provider, "m", tmp_path, BatchSettings(max_requests=2, collect_s=600))
        request = ProviderRequest(messages=[{"role": "user", "content": "x"}], max_tokens=5)
        calls = [asyncio.ensure_future(batcher.call(key, request)) for key in ("a", "b")]
        await asyncio.sleep(0)  # both calls wait; the second filled the batch
        held = len(batcher._submitting)
        provider.gate.set()
        outcomes = await asyncio.gather(*calls, return_exceptions=True)
        await asyncio.sleep(0)
        await batcher.aclose()
        return held, outcomes, len(batcher._submitting)

    held, outcomes, left = asyncio.run(go())
    assert held == 1 and left == 0
    assert all(isinstance(o, RuntimeError) for o in outcomes)
