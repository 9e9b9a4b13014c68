"""Provider prompt caching: the requests ask for it as each provider's wire format says, the
replies' usage is read as each reports it, and the cost is the bill.

The rules, as the mock server enforces them (`mock_providers.prompt_caching`):
- Anthropic (https://platform.claude.com/docs/en/build-with-claude/prompt-caching): a prefix is
  cached only at a `cache_control` breakpoint ({"type": "ephemeral"}, optional "ttl" of "5m" or
  "1h"), at most 4 a request, from the model's minimum length on (1024 tokens for most models,
  4096 for Claude Haiku 4.5); a read costs 0.1x the input price, a write 1.25x (5 minutes) or 2x
  (1 hour); usage reports `cache_read_input_tokens`, `cache_creation_input_tokens` and
  `input_tokens`, which counts only the tokens after the last breakpoint.
- OpenAI (https://developers.openai.com/api/docs/guides/prompt-caching): prompts of 1024 tokens
  or more are cached by themselves in 128-token steps of an exact prefix; `prompt_cache_key`
  keeps requests of one key on one cache; `usage.prompt_tokens_details.cached_tokens` is part of
  `prompt_tokens`.
The installed SDKs take the fields: `anthropic.types.TextBlockParam.cache_control`,
`MessageCreateParams.cache_control`, `openai.types.chat.CompletionCreateParams.prompt_cache_key`.
"""

from __future__ import annotations

import asyncio
import typing

import pytest

from mock_providers.prompt_caching import Prompt, PromptCaches, least_input_bill
from pressurebench.llm import ModelClient
from pressurebench.llm.providers.registry import api_for
from pressurebench.llm.spending import call_cost_bound
from pressurebench.llm.types import ProviderRequest
from pressurebench.params import ModelSpec
from pressurebench.schemas import JudgeOutput

SONNET = "claude-sonnet-4-5"  # caches from 1024 tokens on
LONG = " ".join(f"word{i}" for i in range(1200))  # about 2,100 mock tokens


def spec(server, provider: str, model: str, **kw) -> ModelSpec:
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    prices = {"price_per_mtok_in": 3.0, "price_per_mtok_out": 15.0}
    return ModelSpec(provider=provider, model=model, base_url=base, api_key_env="PB_TEST_KEY",
                     **(prices | kw))


def calls(server, monkeypatch, tmp_path, model_spec: ModelSpec, requests, **chat_kw):
    """Each request in turn (the next one sent once the last is answered)."""
    monkeypatch.setenv("PB_TEST_KEY", "test-key")

    async def go():
        async with ModelClient({"m": model_spec}, tmp_path / "cache", backoff_base_s=0.01) as client:
            return [await client.chat("m", r, **chat_kw) for r in requests]

    return asyncio.run(go())


def conversation(turns: int) -> list[list[dict]]:
    """The target's requests of a conversation whose system prompt is long."""
    history: list[dict] = [{"role": "system", "content": LONG}]
    requests = []
    for turn in range(1, turns + 1):
        history.append({"role": "user", "content": f"question {turn} " + "detail " * 60})
        requests.append(list(history))
        history.append({"role": "assistant", "content": f"answer {turn} " + "reply " * 80})
    return requests


# --- the SDKs take the fields --------------------------------------------------------


def test_the_installed_sdks_define_the_cache_fields():
    import anthropic.types as at
    from openai.types.chat import completion_create_params as oc

    assert "cache_control" in typing.get_type_hints(at.TextBlockParam)
    assert "cache_control" in typing.get_type_hints(at.message_create_params.MessageCreateParamsBase)
    assert "prompt_cache_key" in typing.get_type_hints(oc.CompletionCreateParamsBase)
    assert {"cache_read_input_tokens", "cache_creation_input_tokens"} <= set(at.Usage.model_fields)


# --- Anthropic -----------------------------------------------------------------------


def test_anthropic_requests_mark_the_system_prompt_and_the_last_two_messages(mock_server, monkeypatch, tmp_path):
    requests = conversation(2)
    calls(mock_server, monkeypatch, tmp_path, spec(mock_server, "anthropic", SONNET), requests)
    body = mock_server.request_log[-1].body
    assert body["system"] == [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]
    marked = [i for i, m in enumerate(body["messages"])
              if isinstance(m["content"], list) and "cache_control" in m["content"][-1]]
    assert marked == [len(body["messages"]) - 2, len(body["messages"]) - 1]
    assert [m["content"] for m in body["messages"][:-2]] == [m["content"] for m in requests[-1][1:-2]]


def test_a_growing_anthropic_conversation_reads_what_the_turn_before_wrote(mock_server, monkeypatch, tmp_path):
    results = calls(mock_server, monkeypatch, tmp_path, spec(mock_server, "anthropic", SONNET),
                    conversation(3))
    first, second, third = results
    assert first.cached_input_tokens == 0 and first.cache_write_tokens > 1000
    assert second.cached_input_tokens >= first.input_tokens - 200
    assert third.cached_input_tokens > second.cached_input_tokens
    for r in results:  # input_tokens is the whole prompt: uncached, read and written
        assert r.input_tokens >= r.cached_input_tokens + r.cache_write_tokens
    billed = mock_server.prompt_caches.billed[("anthropic", SONNET)]
    assert sum(r.input_tokens for r in results) == billed.prompt
    assert sum(r.cached_input_tokens for r in results) == billed.cached


def test_marked_messages_carry_the_breakpoints_and_the_last_turn_writes_nothing(mock_server, monkeypatch,
                                                                                 tmp_path):
    """With `cache_marks` (`llm.prompt_cache.cache_marks`) the breakpoints go on the system
    prompt and the marked messages only. A growing conversation marks its last message while
    the next turn extends it, and the last turn marks where the turn before ended: it reads that
    prefix and writes nothing (`cache_creation_input_tokens` 0), so its new tokens are billed
    once at the input price instead of written at 1.25x for no later request."""
    from pressurebench.llm.prompt_cache import cache_marks

    monkeypatch.setenv("PB_TEST_KEY", "test-key")
    requests = conversation(4)

    async def go():
        async with ModelClient({"m": spec(mock_server, "anthropic", SONNET)}, tmp_path / "cache") as client:
            return [await client.chat("m", r, cache_marks=cache_marks(
                extended_at=None if k == len(requests) else len(r) - 1,
                continues=len(r) - 3 if k > 1 else None)) for k, r in enumerate(requests, start=1)]

    results = asyncio.run(go())
    bodies = [entry.body for entry in mock_server.request_log]
    marked = [[i for i, m in enumerate(b["messages"])
               if isinstance(m["content"], list) and "cache_control" in m["content"][-1]] for b in bodies]
    assert marked == [[0], [2], [4], [4]]  # indices among the messages, the system prompt apart
    assert all("cache_control" in b["system"][0] for b in bodies)
    last = results[-1]
    assert last.cache_write_tokens == 0 and last.cached_input_tokens == results[-2].input_tokens
    default, api = PromptCaches(), api_for(spec(mock_server, "anthropic", SONNET))
    for r in requests:  # the same requests with the default breakpoints (the last two messages)
        default.anthropic(api.body(ProviderRequest(messages=r, max_tokens=10)))
    marked_bill = mock_server.prompt_caches.billed[("anthropic", SONNET)]
    unmarked_bill = default.billed[("anthropic", SONNET)]
    assert marked_bill.prompt == unmarked_bill.prompt
    assert marked_bill.written_5m < unmarked_bill.written_5m


def test_anthropic_cost_is_the_bill(mock_server, monkeypatch, tmp_path):
    """Reads at 0.1x and writes at 1.25x the input price, as Anthropic's pricing table has it."""
    model = spec(mock_server, "anthropic", SONNET, price_per_mtok_cached_in=0.3)
    results = calls(mock_server, monkeypatch, tmp_path, model, conversation(4))
    b = mock_server.prompt_caches.billed[("anthropic", SONNET)]
    bill = (b.uncached * 3.0 + b.cached * 0.3 + b.written_5m * 3.75 + b.output * 15.0) / 1e6
    assert sum(r.cost_usd for r in results) == pytest.approx(bill, rel=1e-12)
    assert b.cached > 0 and b.written_5m > 0


def test_the_one_hour_cache_is_asked_for_and_priced_at_twice_the_input(mock_server, monkeypatch, tmp_path):
    model = spec(mock_server, "anthropic", SONNET, prompt_cache="1h", price_per_mtok_cached_in=0.3)
    results = calls(mock_server, monkeypatch, tmp_path, model, conversation(2))
    assert mock_server.request_log[-1].body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    b = mock_server.prompt_caches.billed[("anthropic", SONNET)]
    assert b.written_1h > 0 and b.written_5m == 0
    bill = (b.uncached * 3.0 + b.cached * 0.3 + b.written_1h * 6.0 + b.output * 15.0) / 1e6
    assert sum(r.cost_usd for r in results) == pytest.approx(bill, rel=1e-12)


def test_turns_more_than_5_minutes_apart_are_cheaper_with_the_1_hour_cache():
    """A 5-minute entry is gone when a turn comes 10 minutes after the one before (as in batches
    that take that long): every write at 1.25x finds no read, dearer than no caching; the
    1-hour cache writes at 2x and the next turns read at 0.1x (Anthropic's prompt caching docs,
    "Pricing" and "1-hour cache duration"). Seconds apart, as in a direct run, the 5-minute
    cache (`auto`) is the cheaper one. The bills, in tokens at the input price, are quoted in
    docs/prompt-caching.md."""

    def bill(prompt_cache: str, gap_s: float) -> float:
        now = [0.0]
        caches = PromptCaches(clock=lambda: now[0])
        api = api_for(ModelSpec(provider="anthropic", model=SONNET, prompt_cache=prompt_cache))
        for r in conversation(4):
            caches.anthropic(api.body(ProviderRequest(messages=r, max_tokens=10)))
            now[0] += gap_s
        b = caches.billed[("anthropic", SONNET)]
        return round(b.uncached + 0.1 * b.cached + 1.25 * b.written_5m + 2.0 * b.written_1h)

    assert (bill("auto", 10), bill("1h", 10), bill("off", 10)) == (4859, 7277, 11510)
    assert (bill("auto", 600), bill("1h", 600), bill("off", 600)) == (14388, 7277, 11510)


def test_prompt_cache_off_sends_no_breakpoint(mock_server, monkeypatch, tmp_path):
    calls(mock_server, monkeypatch, tmp_path, spec(mock_server, "anthropic", SONNET, prompt_cache="off"),
          conversation(2))
    body = mock_server.request_log[-1].body
    assert "cache_control" not in str(body)
    assert mock_server.prompt_caches.billed[("anthropic", SONNET)].cached == 0


def test_a_prompt_below_the_models_minimum_is_not_cached(mock_server, monkeypatch, tmp_path):
    """Claude Haiku 4.5 caches from 4096 tokens on; shorter prefixes are sent at full price."""
    results = calls(mock_server, monkeypatch, tmp_path, spec(mock_server, "anthropic", "claude-haiku-4-5"),
                    conversation(2))
    assert all(r.cached_input_tokens == 0 and r.cache_write_tokens == 0 for r in results)
    assert all(r.input_tokens > 2000 for r in results)


def test_structured_anthropic_calls_cache_the_tool_and_system(mock_server, monkeypatch, tmp_path):
    requests = [[{"role": "system", "content": LONG}, {"role": "user", "content": f"case {i}"}]
                for i in range(2)]
    results = calls(mock_server, monkeypatch, tmp_path, spec(mock_server, "anthropic", SONNET), requests,
                    schema=JudgeOutput)
    assert all(r.ok for r in results)
    assert results[1].cached_input_tokens > 2000


@pytest.mark.parametrize(("body", "error"), [
    ({"cache_control": {"type": "persistent"}}, "Input should be 'ephemeral'"),
    ({"cache_control": {"type": "ephemeral", "ttl": "2h"}}, "Input should be '5m' or '1h'"),
    ({"cache_control": {"type": "ephemeral", "scope": "x"}}, "Extra inputs are not permitted"),
])
def test_the_mock_refuses_what_anthropic_refuses_in_cache_control(mock_server, body, error):
    import httpx

    request = {"model": SONNET, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], **body}
    reply = httpx.post(mock_server.anthropic_base_url + "/v1/messages", json=request,
                       headers={"x-api-key": "test-key", "anthropic-version": "2023-06-01"})
    assert reply.status_code == 400 and error in reply.text


def test_the_mock_refuses_a_fifth_breakpoint_and_a_1h_one_after_a_5m_one():
    caches = PromptCaches()
    block = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    five = {"model": SONNET, "messages": [{"role": "user", "content": [block] * 5}]}
    with pytest.raises(ValueError, match="A maximum of 4 blocks"):
        caches.anthropic(five)
    late = {"model": SONNET, "system": [block], "messages": [{"role": "user", "content": [
        {**block, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]}
    with pytest.raises(ValueError, match="must not come after"):
        caches.anthropic(late)


def test_the_mock_reads_at_most_20_blocks_back_and_caches_automatically_at_the_top_level():
    caches = PromptCaches()
    blocks = [{"type": "text", "text": LONG}] + [{"type": "text", "text": f"b{i}"} for i in range(25)]
    first = {"model": SONNET, "cache_control": {"type": "ephemeral"},
             "messages": [{"role": "user", "content": blocks[:2]}]}
    assert caches.anthropic(first)["cache_creation_input_tokens"] > 1024
    near = {**first, "messages": [{"role": "user", "content": blocks[:21]}]}
    assert caches.anthropic(near)["cache_read_input_tokens"] > 1024
    far = {**first, "messages": [{"role": "user", "content": blocks[1:2] + blocks}]}
    assert caches.anthropic(far)["cache_read_input_tokens"] == 0


# --- OpenAI --------------------------------------------------------------------------


def test_openai_requests_carry_a_prompt_cache_key_per_group(mock_server, monkeypatch, tmp_path):
    model = spec(mock_server, "openai", "gpt-4o-mini")
    calls(mock_server, monkeypatch, tmp_path, model, conversation(1), cache_group="target:c1")
    calls(mock_server, monkeypatch, tmp_path, model, [conversation(1)[0][:1] + [
        {"role": "user", "content": "other"}]], cache_group="target:c2")
    keys = [r.body.get("prompt_cache_key") for r in mock_server.request_log]
    assert len(set(keys)) == 2 and all(k.startswith("pb-") and len(k) <= 64 for k in keys)
    assert "c1" not in keys[0]
    calls(mock_server, monkeypatch, tmp_path / "off",
          spec(mock_server, "openai", "gpt-4o-mini", prompt_cache="off"), conversation(1), cache_group="target:c3")
    assert "prompt_cache_key" not in mock_server.request_log[-1].body


def test_openai_cached_tokens_are_counted_in_128_token_steps_and_priced_apart(mock_server, monkeypatch, tmp_path):
    model = spec(mock_server, "openai", "gpt-5-mini", price_per_mtok_cached_in=0.3)
    results = calls(mock_server, monkeypatch, tmp_path, model, conversation(3), cache_group="target:c")
    assert results[0].cached_input_tokens == 0
    for r in results[1:]:
        assert r.cached_input_tokens >= 1024 and (r.cached_input_tokens - 1024) % 128 == 0
        assert r.input_tokens > r.cached_input_tokens and r.cache_write_tokens == 0
    b = mock_server.prompt_caches.billed[("openai", "gpt-5-mini")]
    bill = (b.uncached * 3.0 + b.cached * 0.3 + b.output * 15.0) / 1e6
    assert sum(r.cost_usd for r in results) == pytest.approx(bill, rel=1e-12)


def test_openai_prompts_under_1024_tokens_are_not_cached():
    caches = PromptCaches()
    short = [{"role": "user", "content": "x" * 4000}]
    body = {"model": "gpt-4o-mini", "messages": short}
    assert caches.openai(body, short) == (1003, 0)
    assert caches.openai(body, short) == (1003, 0)
    long = [{"role": "user", "content": "x" * 4200}]
    caches.openai({**body, "messages": long}, long)
    assert caches.openai({**body, "messages": long}, long) == (1053, 1024)


def test_a_prompt_cache_key_per_conversation_keeps_each_growing_prompt_on_its_machine():
    """OpenAI routes by "a hash of the initial prefix of the prompt" (about the first 256 tokens)
    combined with the `prompt_cache_key`, and past about 15 requests a minute for one prefix and
    key "some may overflow and get routed to additional machines" (OpenAI's prompt caching guide,
    "Cache routing"). 20 conversations opening with the same 300 tokens of instructions, asked
    turn by turn within a minute: with one key for all (or none) their requests overflow and a
    turn rarely finds the machine its previous turn was cached on; with a key per conversation
    (`llm.prompt_cache.cache_group`) every turn from the third reads the one before."""
    from pressurebench.llm.prompt_cache import prompt_cache_key

    def turn(conv: int, k: int) -> list[dict]:
        return [{"role": "system", "content": "i" * 1200},
                *({"role": "user", "content": f"conv {conv} turn {t} " + "w" * 2400} for t in range(1, k + 1))]

    def cached(key_of) -> list[int]:
        caches = PromptCaches(clock=lambda: 0.0)
        out = []
        for k in range(1, 5):
            for conv in range(20):
                body = {"model": "gpt-5-mini", "messages": turn(conv, k), "prompt_cache_key": key_of(conv)}
                out.append(caches.openai(body, body["messages"])[1])
        return out

    per_conversation = cached(lambda conv: prompt_cache_key(f"judge:c{conv}"))
    assert all(n == 0 for n in per_conversation[:40]) and all(n >= 1024 for n in per_conversation[40:])
    shared = cached(lambda conv: prompt_cache_key("judge m01"))
    assert sum(shared) < sum(per_conversation) / 2


def test_the_mock_refuses_a_prompt_cache_key_that_is_not_a_string(mock_server):
    import httpx

    reply = httpx.post(mock_server.openai_base_url + "/chat/completions",
                       json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}],
                             "prompt_cache_key": 7}, headers={"Authorization": "Bearer test-key"})
    assert reply.status_code == 400 and "prompt_cache_key" in reply.text


# --- the least bill any layout could reach (perf/prompt_caching.py's bound) ------------


def test_the_least_bill_reads_the_most_a_prompt_shares_with_one_earlier_one_from_the_minimum_on():
    """A prefix read comes from one earlier request, from the provider's minimum on (1024
    tokens; OpenAI then in 128-token steps), and on Anthropic what is read was written once
    at 1.25x: first (A 1000, B 100), then (A, B, C 200) reads 1100, then (D 50, A) shares
    only A's 1000 tokens, under the minimum, with either."""
    blocks = {"A": 1000, "B": 100, "C": 200, "D": 50}

    def prompts(provider: str, model: str) -> list[Prompt]:
        return [Prompt(provider, model, tuple((b, blocks[b]) for b in names))
                for names in ("AB", "ABC", "DA")]

    claude = least_input_bill(prompts("anthropic", SONNET), read_factor=0.1, write_factor=1.25)
    assert (claude.prompt, claude.read, claude.written) == (3450, 1100, 1100)
    assert claude.cost == pytest.approx(3450 - 1100 + 0.1 * 1100 + 0.25 * 1100)
    gpt = least_input_bill(prompts("openai", "gpt-5-mini"), read_factor=0.1, write_factor=1.0)
    assert (gpt.read, gpt.written) == (1024, 0)
    assert gpt.cost == pytest.approx(3450 - 1024 + 0.1 * 1024)
    haiku = least_input_bill(prompts("anthropic", "claude-haiku-4-5"), read_factor=0.1, write_factor=1.25)
    assert haiku.cost == 3450  # Claude Haiku 4.5 caches from 4096 tokens on


@pytest.mark.parametrize(("provider", "model"), [("anthropic", SONNET), ("openai", "gpt-5-mini")])
def test_no_bill_of_a_growing_conversation_is_below_the_least_bill(mock_server, monkeypatch, tmp_path,
                                                                    provider, model):
    calls(mock_server, monkeypatch, tmp_path, spec(mock_server, provider, model), conversation(5),
          cache_group="target:c")
    b = mock_server.prompt_caches.billed[(provider, model)]
    write = 1.25 if provider == "anthropic" else 1.0
    least = least_input_bill(mock_server.prompt_caches.prompts, read_factor=0.1, write_factor=write)
    assert least.prompt == b.prompt
    assert b.prompt > least.cost
    assert b.uncached + 0.1 * b.cached + 1.25 * b.written_5m >= least.cost


# --- prices ---------------------------------------------------------------------------


def test_one_formula_prices_input_cached_input_and_cache_writes_apart():
    api = api_for(ModelSpec(provider="anthropic", model=SONNET, price_per_mtok_in=3.0,
                            price_per_mtok_out=15.0, price_per_mtok_cached_in=0.3))
    assert api.price(1_000_000, 0) == pytest.approx(3.0)
    assert api.price(1_000_000, 0, cached_tokens=1_000_000) == pytest.approx(0.3)
    assert api.price(1_000_000, 0, cache_write_tokens=1_000_000) == pytest.approx(3.75)
    assert api.price(3_000_000, 1_000_000, 1_000_000, 1_000_000) == pytest.approx(3 + 0.3 + 3.75 + 15)


def test_an_unknown_cached_price_is_the_full_input_price_and_said_so():
    api = api_for(ModelSpec(provider="openai", model="gpt-4o-mini", price_per_mtok_in=1.0,
                            price_per_mtok_out=4.0))
    assert not api.cached_price_known
    assert api.price(1_000_000, 0, cached_tokens=500_000) == pytest.approx(1.0)


def test_cache_settings_a_provider_does_not_take_are_refused():
    with pytest.raises(ValueError, match="1-hour cache"):
        ModelSpec(provider="openai", model="gpt-4o-mini", prompt_cache="1h")
    with pytest.raises(ValueError, match="bills no cache writes"):
        ModelSpec(provider="openai", model="gpt-4o-mini", price_per_mtok_cache_write=1.0)


def test_the_spending_bound_covers_a_whole_prompt_written_to_the_cache():
    api = api_for(ModelSpec(provider="anthropic", model=SONNET, price_per_mtok_in=3.0,
                            price_per_mtok_out=15.0))
    messages = [{"role": "user", "content": "x" * 30_000}]
    prompt = 10_000 + 8
    assert call_cost_bound(api, messages, 100) == pytest.approx((prompt * 3.75 + 100 * 15.0) / 1e6)
    off = api_for(ModelSpec(provider="anthropic", model=SONNET, price_per_mtok_in=3.0,
                            price_per_mtok_out=15.0, prompt_cache="off"))
    assert call_cost_bound(off, messages, 100) == pytest.approx((prompt * 3.0 + 100 * 15.0) / 1e6)


# --- batches -------------------------------------------------------------------------


@pytest.mark.parametrize(("provider", "model"), [("anthropic", SONNET), ("openai", "gpt-4o-mini")])
def test_batched_calls_ask_for_caching_and_are_priced_as_billed(mock_server, monkeypatch, tmp_path,
                                                                provider, model):
    """Both batch APIs take the same request bodies, cache fields included, and bill cached
    input inside a batch at the batch discount (Anthropic's Message Batches and OpenAI's Batch
    API docs); one batch's requests that share a prefix read what the first one wrote."""
    from pressurebench.llm.batches import BatchSettings

    monkeypatch.setenv("PB_TEST_KEY", "test-key")
    model_spec = spec(mock_server, provider, model, batch=True, price_per_mtok_cached_in=0.3)
    requests = [[{"role": "system", "content": LONG}, {"role": "user", "content": f"case {i}"}] for i in range(4)]
    settings = BatchSettings(max_requests=100, collect_s=0.2, poll_s=0.05, max_wait_s=60)

    async def go():
        async with ModelClient({"m": model_spec}, tmp_path / "cache", batch=settings) as client:
            return await asyncio.gather(*(client.chat("m", r, cache_group="judge:c") for r in requests))

    results = asyncio.run(go())
    assert all(r.ok for r in results)
    assert sum(r.cached_input_tokens for r in results) > 0
    b = mock_server.prompt_caches.billed[(provider, model)]
    bill = (b.uncached * 3.0 + b.cached * 0.3 + b.written_5m * 3.75 + b.output * 15.0) / 1e6 * 0.5
    assert sum(r.cost_usd for r in results) == pytest.approx(bill, rel=1e-12)


def test_the_documented_settings_are_valid_params():
    """docs/prompt-caching.md's example models, as a user would copy them."""
    import re
    from pathlib import Path

    import yaml

    text = (Path(__file__).resolve().parents[2] / "docs" / "prompt-caching.md").read_text()
    example = yaml.safe_load(re.search(r"```yaml\n(.*?)```", text, re.DOTALL).group(1))
    specs = {mid: ModelSpec(**spec) for mid, spec in example["models"].items()}
    claude, gpt = api_for(specs["claude"]), api_for(specs["gpt"])
    assert claude.writes_cache and claude.cache_write_price == 3.75 and claude.cached_input_price == 0.3
    assert not gpt.writes_cache and gpt.cached_price_known


def test_the_spending_cap_settles_at_the_billed_cost(mock_server, monkeypatch, tmp_path):
    """The ledger holds what the provider bills (cache reads and writes priced apart), not the
    uncached bound reserved while the call was in flight."""
    import json

    monkeypatch.setenv("PB_TEST_KEY", "test-key")
    model = spec(mock_server, "anthropic", SONNET, price_per_mtok_cached_in=0.3)

    async def go():
        async with ModelClient({"m": model}, tmp_path / "cache", max_cost_usd=5.0) as client:
            return [await client.chat("m", r) for r in conversation(4)]

    results = asyncio.run(go())
    assert sum(r.cached_input_tokens for r in results) > 0
    ledger = json.loads((tmp_path / "cache" / "spending.json").read_text())
    assert ledger["spent_usd"] == pytest.approx(sum(r.cost_usd for r in results), rel=1e-12)
    assert ledger["in_flight_usd"] == {}


def test_cache_settings_and_groups_are_no_part_of_a_calls_cache_key(mock_server, monkeypatch, tmp_path):
    """They change what a call costs, never its answer: a changed setting replays every call."""
    requests = conversation(2)
    first = calls(mock_server, monkeypatch, tmp_path, spec(mock_server, "anthropic", SONNET), requests,
                  cache_group="target:a")
    sent = mock_server.total_requests
    again = calls(mock_server, monkeypatch, tmp_path,
                  spec(mock_server, "anthropic", SONNET, prompt_cache="off", price_per_mtok_cached_in=0.3),
                  requests, cache_group="target:b")
    assert mock_server.total_requests == sent
    assert [r.text for r in again] == [r.text for r in first] and all(r.cached for r in again)
