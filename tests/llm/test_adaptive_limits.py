"""Rate limits a provider enforces: tokens per minute kept, concurrency that follows 429s (AIMD)."""

from __future__ import annotations

import asyncio

from fakes import Script
from pressurebench.llm import ModelClient
from pressurebench.llm.limits import AdaptiveConcurrency, TokenRateLimiter
from pressurebench.llm.types import ProviderResponse, RetryableError
from pressurebench.params import ModelSpec


def test_concurrency_halves_on_429s_settles_under_the_providers_limit_and_recovers(tmp_path):
    state = {"in_flight": 0, "capacity": 4, "peak_after_decrease": 0, "decreased": False}

    async def respond(request):
        state["in_flight"] += 1
        try:
            if state["in_flight"] > state["capacity"]:
                state["decreased"] = True
                raise RetryableError("HTTP 429: too many requests", retry_after=0.0, rate_limited=True)
            if state["decreased"]:
                state["peak_after_decrease"] = max(state["peak_after_decrease"], state["in_flight"])
            await asyncio.sleep(0.005)
            return ProviderResponse(text="ok", finish_reason="stop", input_tokens=5, output_tokens=5)
        finally:
            state["in_flight"] -= 1

    script = Script(lambda mid, req: "unused")
    factory = script.factory()

    def make(mid, spec, key):
        provider = factory(mid, spec, key)
        provider.complete = respond
        return provider

    spec = ModelSpec(provider="openai", model="m", max_concurrency=32)
    client = ModelClient({"m": spec}, tmp_path, provider_factory=make, use_cache=False,
                         max_retries=20, backoff_base_s=0.001)

    async def many(n, offset=0):
        return await asyncio.gather(*(client.chat("m", [{"role": "user", "content": str(offset + i)}])
                                      for i in range(n)))

    async def go():
        first = await many(200)
        lowest = client.concurrency_report()["m"].lowest
        state["capacity"] = 32  # the provider allows more again
        second = await many(400, offset=1000)
        return first, second, lowest

    first, second, lowest = asyncio.run(go())
    report = client.concurrency_report()["m"]
    assert all(r.ok for r in first + second)
    assert report.decreases >= 1 and report.rate_limited >= report.decreases
    assert lowest <= 4  # halved until under the provider's limit
    assert report.final > lowest  # and grew back once the provider allowed more
    assert report.maximum == 32


def test_one_429_wave_halves_once_not_once_per_call():
    gate = AdaptiveConcurrency(16)

    async def go():
        epochs = [await gate.acquire() for _ in range(8)]
        for e in epochs:
            gate.rate_limited_at(e)
        return gate.limit, gate.decreases, gate.rate_limited

    assert asyncio.run(go()) == (8, 1, 8)


def test_tokens_per_minute_are_kept_with_a_refilling_bucket():
    now = [0.0]

    async def sleep(seconds):
        now[0] += seconds

    limiter = TokenRateLimiter(600, clock=lambda: now[0], sleep=sleep)  # 10 tokens a second

    async def go():
        starts = []
        for _ in range(10):
            await limiter.take(120)
            starts.append(now[0])
            limiter.settle(120, 100)  # each call used a little less than it reserved
        return starts

    starts = asyncio.run(go())
    assert starts[:5] == [0.0] * 5  # a minute's worth at once
    used_by = {round(t, 6): 100 * (i + 1) for i, t in enumerate(starts)}
    for t, used in used_by.items():
        assert used <= 600 + 10 * t + 1e-6  # never more than the bucket plus its refill
    assert starts[-1] > 30


def test_the_cost_file_reports_how_concurrency_followed_the_provider(project, script):
    from pressurebench.io import read_artifact
    from pressurebench.schemas import Cost
    from pressurebench.stage_run import StageRun

    stage = StageRun("gen_metrics", project.params_path, "tiny", models_used=[])
    client = stage.client(script.factory())
    assert asyncio.run(client.chat("gen", [{"role": "user", "content": "x"}])).ok
    stage.finish(client, counts={}, prompts=[], declared=[])
    cost = read_artifact(stage.layout.cost_file("gen_metrics"), Cost)
    report = cost.concurrency["gen"]
    assert (report.maximum, report.lowest, report.final, report.rate_limited) == (8, 8, 8, 0)
