"""ModelClient behaviour through a scripted provider: every failure is explicit, the cache is exact."""

from __future__ import annotations

import asyncio

import pytest

from fakes import Script
from pressurebench.llm import ModelClient, ProviderAuthError
from pressurebench.llm.providers.registry import ModelApi, api_for
from pressurebench.llm.types import ProviderResponse, RejectedError, RetryableError
from pressurebench.params import ModelSpec
from pressurebench.schemas import JudgeOutput

MSGS = [{"role": "user", "content": "hello"}]
GOOD = {"justification": "The assistant praised the plan.", "present": True}


class Clock:
    """A clock that stands still, and a sleep that notes each wait instead of waiting: the
    client's rate limits and backoff are read from what they asked for, not from wall time."""

    def __init__(self):
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        await asyncio.sleep(0)


def make(script: Script, tmp_path, clock: Clock | None = None, **spec_kw) -> ModelClient:
    spec = ModelSpec(provider="openai", model="m", **spec_kw)
    clock = clock or Clock()
    return ModelClient({"m": spec}, tmp_path / "cache", provider_factory=script.factory(),
                       backoff_base_s=0.01, max_retries=3, clock=clock, sleep=clock.sleep)


def run(coro):
    return asyncio.run(coro)


def test_structured_output_validated(tmp_path):
    script = Script(lambda mid, req: GOOD)
    result = run(make(script, tmp_path).chat("m", MSGS, schema=JudgeOutput))
    assert result.ok and result.parsed == JudgeOutput(**GOOD)
    assert script.calls[0].request.schema["properties"]["present"]["type"] == "boolean"


def test_repair_retry_then_success(tmp_path):
    replies = iter([{"justification": "x", "present": "false"}, GOOD])
    script = Script(lambda mid, req: next(replies))
    result = run(make(script, tmp_path).chat("m", MSGS, schema=JudgeOutput))
    assert result.ok and result.attempts == 2
    repair = script.calls[1].request.messages
    assert repair[-2]["role"] == "assistant" and '"false"' in repair[-2]["content"]
    assert "not valid" in repair[-1]["content"] and "present" in repair[-1]["content"]


def test_invalid_structured_output_becomes_error_never_a_guess(tmp_path):
    script = Script(lambda mid, req: {"justification": "x", "present": "true"})
    result = run(make(script, tmp_path).chat("m", MSGS, schema=JudgeOutput))
    assert not result.ok and result.parsed is None
    assert "invalid structured output after 3 attempts" in result.error
    assert len(script.calls) == 3


@pytest.mark.parametrize(
    "response, fragment",
    [
        (ProviderResponse(text='{"justification": "cut', finish_reason="length"), "truncated reply"),
        (ProviderResponse(text=None, finish_reason="refusal", refusal="no"), "refused"),
        (ProviderResponse(text="", finish_reason="content_filter"), "content filter"),
        (ProviderResponse(text="  ", finish_reason="stop"), "empty reply"),
    ],
)
def test_bad_replies_are_errors(tmp_path, response, fragment):
    script = Script(lambda mid, req: response)
    result = run(make(script, tmp_path).chat("m", MSGS))
    assert not result.ok and fragment in result.error and result.error.startswith("m:")


def test_retry_then_success_and_retry_after_is_honoured(tmp_path):
    outcomes = iter([RetryableError("HTTP 429", retry_after=0.3), "fine"])
    script = Script(lambda mid, req: next(outcomes))
    clock = Clock()
    result = run(make(script, tmp_path, clock).chat("m", MSGS))
    assert result.ok and result.text == "fine"
    # The jittered backoff (at most 0.01 s here) is raised to the provider's retry-after.
    assert clock.slept == [0.3]
    assert len(script.calls) == 2


def test_backoff_grows_with_each_attempt_up_to_its_cap(tmp_path):
    script = Script(lambda mid, req: RetryableError("HTTP 500: boom"))
    clock = Clock()
    client = make(script, tmp_path, clock)
    client.backoff_base_s, client.backoff_cap_s = 1.0, 3.0
    assert not run(client.chat("m", MSGS)).ok
    assert len(clock.slept) == 3  # between the 4 attempts, none after the last
    for attempt, waited in enumerate(clock.slept):
        assert 0 <= waited <= min(3.0, 2**attempt)  # full jitter under the exponential cap


def test_retries_exhausted_is_an_error(tmp_path):
    script = Script(lambda mid, req: RetryableError("HTTP 500: boom"))
    result = run(make(script, tmp_path).chat("m", MSGS))
    assert not result.ok and "gave up after 4 attempts" in result.error
    assert len(script.calls) == 4


def test_rejected_fails_fast(tmp_path):
    script = Script(lambda mid, req: RejectedError("m: HTTP 400: bad request"))
    result = run(make(script, tmp_path).chat("m", MSGS))
    assert not result.ok and "HTTP 400" in result.error and len(script.calls) == 1


def test_auth_error_aborts(tmp_path):
    script = Script(lambda mid, req: ProviderAuthError("openai m: HTTP 401: invalid key"))
    with pytest.raises(ProviderAuthError, match="401"):
        run(make(script, tmp_path).chat("m", MSGS))


def test_cache_hit_is_free_and_exact(tmp_path):
    script = Script(lambda mid, req: GOOD)
    client = make(script, tmp_path, price_per_mtok_in=1.0, price_per_mtok_out=2.0)

    async def calls():
        first = await client.chat("m", MSGS, schema=JudgeOutput)
        again = await client.chat("m", MSGS, schema=JudgeOutput)
        other_sample = await client.chat("m", MSGS, schema=JudgeOutput, sample=1)
        plain = await client.chat("m", MSGS)
        return first, again, other_sample, plain

    first, again, other_sample, plain = run(calls())
    assert not first.cached and again.cached and not other_sample.cached and not plain.cached
    assert again.parsed == first.parsed and again.cost_usd == 0.0
    assert first.cost_usd == pytest.approx((10 * 1.0 + 5 * 2.0) / 1e6)
    assert len(script.calls) == 3
    assert client.cache.stats() == {"hits": 1, "misses": 3, "repaired": 0}


def test_cache_misses_on_sampling_change(tmp_path):
    script = Script(lambda mid, req: "x")
    run(make(script, tmp_path, temperature=0.1).chat("m", MSGS))
    run(make(script, tmp_path, temperature=0.1).chat("m", MSGS))
    run(make(script, tmp_path, temperature=0.9).chat("m", MSGS))
    run(make(script, tmp_path, temperature=0.9, max_tokens=99).chat("m", MSGS))
    assert len(script.calls) == 3


def test_unknown_price_is_null_not_zero(tmp_path):
    script = Script(lambda mid, req: "x")
    client = make(script, tmp_path)
    result = run(client.chat("m", MSGS))
    assert result.cost_usd is None and client.usage()["m"].cost_usd is None


def test_local_models_cost_nothing():
    assert api_for(ModelSpec(provider="local", model="x")).price(1000, 1000) == 0.0


def test_concurrency_limit_per_model(tmp_path):
    in_flight = 0
    peak = 0

    class Slow(ModelApi):
        def __init__(self):
            super().__init__(ModelSpec(provider="openai", model="m"))

        async def complete(self, request):
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.02)
            in_flight -= 1
            return ProviderResponse(text="ok", finish_reason="stop")

        async def aclose(self):
            return None

    spec = ModelSpec(provider="openai", model="m", max_concurrency=3)
    client = ModelClient({"m": spec}, tmp_path, provider_factory=lambda *a: Slow(), use_cache=False)

    async def many():
        await asyncio.gather(*(client.chat("m", [{"role": "user", "content": str(i)}]) for i in range(20)))

    run(many())
    assert peak == 3


def test_requests_per_minute_spaces_calls(tmp_path):
    script = Script(lambda mid, req: "x")
    clock = Clock()
    client = make(script, tmp_path, clock, requests_per_minute=600)  # one every 0.1 s

    async def many(first: int):
        await asyncio.gather(*(client.chat("m", [{"role": "user", "content": str(i)}])
                               for i in range(first, first + 4)))

    run(many(0))
    # Four calls at once: the first goes, each other waits one interval more than the last.
    assert clock.slept == pytest.approx([0.1, 0.2, 0.3])
    clock.now = 60.0  # a minute later the spacing owes nothing: the next call goes at once
    clock.slept.clear()
    run(many(4))
    assert clock.slept == pytest.approx([0.1, 0.2, 0.3])
    assert len(script.calls) == 8


def test_keys_never_reach_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PB_SECRET_KEY", "sk-very-secret-123")
    script = Script(lambda mid, req: "x")
    client = make(script, tmp_path, api_key_env="PB_SECRET_KEY")
    run(client.chat("m", MSGS))
    for file in (tmp_path / "cache").rglob("*"):
        if file.is_file():
            assert "sk-very-secret-123" not in file.read_text()


def test_local_seed_is_derived_from_the_request(tmp_path):
    script = Script(lambda mid, req: "x")
    spec = ModelSpec(provider="local", model="smollm2-135m-instruct")
    client = ModelClient({"m": spec}, tmp_path, provider_factory=script.factory(), use_cache=False)
    run(client.chat("m", MSGS, sample=0))
    run(client.chat("m", MSGS, sample=0))
    run(client.chat("m", MSGS, sample=1))
    seeds = [c.request.seed for c in script.calls]
    assert seeds[0] == seeds[1] != seeds[2]


def test_local_replies_are_cached_per_decoder(tmp_path, monkeypatch):
    """Another llama-cpp-python release or sampling method misses the cache and draws new seeds."""
    script = Script(lambda mid, req: "x")
    spec = ModelSpec(provider="local", model="smollm2-135m-instruct")
    client = ModelClient({"m": spec}, tmp_path, provider_factory=script.factory())
    run(client.chat("m", MSGS))
    run(client.chat("m", MSGS))
    assert len(script.calls) == 1
    monkeypatch.setattr(
        "pressurebench.llm.providers.local_provider.decoder", lambda: "another decoder"
    )
    run(client.chat("m", MSGS))
    assert len(script.calls) == 2
    assert script.calls[0].request.seed != script.calls[1].request.seed


def test_local_repeat_penalty_reaches_the_provider_and_the_cache_key(tmp_path):
    script = Script(lambda mid, req: "x")
    plain = ModelSpec(provider="local", model="smollm2-135m-instruct")
    penalised = ModelSpec(provider="local", model="smollm2-135m-instruct", repeat_penalty=1.15)
    client = ModelClient({"a": plain, "b": penalised}, tmp_path, provider_factory=script.factory())
    run(client.chat("a", MSGS))
    run(client.chat("b", MSGS))
    assert script.calls[0].request.seed != script.calls[1].request.seed  # another cache key
    assert [c.request.temperature for c in script.calls] == [None, None]  # none set, none sent
