"""A stage's recorded calls: replayed in front of the cache, rewritten with exactly the calls a
run used, in canonical bytes, never with a credential, and refused when damaged."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest

from pressurebench.errors import ConfigError, PressurebenchError
from pressurebench.llm import ModelClient
from pressurebench.llm.batches import BatchSettings
from pressurebench.llm.cache import cache_key
from pressurebench.llm.call_record import CallRecord
from pressurebench.params import ModelSpec
from pressurebench.schemas import JudgeOutput

SECRET = "sk-test-0123456789abcdef"


def canonical(value) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False).encode()


def spec(**kw) -> ModelSpec:
    return ModelSpec(provider="openai", model="gpt-4o-mini", api_key_env="PB_RECORD_KEY", **kw)


def ask(client: ModelClient, prompts: list[str], schema=None):
    async def go():
        async with client:
            return await asyncio.gather(*(
                client.chat("m", [{"role": "user", "content": p}], schema=schema) for p in prompts
            ))

    return asyncio.run(go())


def client_for(tmp_path, script, record, cache="cache", **kw) -> ModelClient:
    return ModelClient({"m": spec(**kw)}, tmp_path / cache, provider_factory=script.factory(),
                       record=record)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("PB_RECORD_KEY", SECRET)


def test_a_record_replays_every_call_on_an_empty_cache_and_is_rewritten_byte_identical(tmp_path, script):
    script.responder = lambda mid, req: f"reply to {req.messages[-1]['content']}"
    record = tmp_path / "simulate.calls.jsonl"
    first = ask(client := client_for(tmp_path, script, record), ["b", "a", "c", "a"])
    assert client.write_record() == 3  # "a" twice is one call
    lines = record.read_bytes().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["key"] for r in rows] == sorted(r["key"] for r in rows)
    # Each key is the cache key of its request, and the hash of the request's bytes as written.
    assert all(cache_key({k: v for k, v in r["request"].items() if k != "format"}) == r["key"]
               for r in rows)
    assert all(hashlib.sha256(canonical(r["request"])).hexdigest() == r["key"] for r in rows)
    assert all(line == canonical(json.loads(line)) for line in lines)
    assert {r["response"]["text"] for r in rows} == {"reply to a", "reply to b", "reply to c"}

    # Another machine: no local cache, only the record. Nothing is sent, the replies are equal.
    sent = len(script.calls)
    replay = client_for(tmp_path, script, record, cache="elsewhere")
    again = ask(replay, ["b", "a", "c", "a"])
    assert len(script.calls) == sent
    assert [r.text for r in again] == [r.text for r in first] and all(r.cached for r in again)
    assert replay.cache_stats() == {"hits": 4, "misses": 0, "repaired": 0, "replayed_from_record": 4}
    before = record.read_bytes()
    replay.write_record()
    assert record.read_bytes() == before


def test_the_record_wins_over_a_different_reply_in_the_local_cache(tmp_path, script):
    """The local cache may hold another reply for the same request (the embedded model on
    another CPU): the study's record decides."""
    script.responder = lambda mid, req: "the recorded reply"
    record = tmp_path / "evaluate.calls.jsonl"
    ask(client := client_for(tmp_path, script, record, cache="theirs"), ["q"])
    client.write_record()
    script.responder = lambda mid, req: "this machine's reply"
    ask(client_for(tmp_path, script, None, cache="mine"), ["q"])

    mine = client_for(tmp_path, script, record, cache="mine")
    assert [r.text for r in ask(mine, ["q"])] == ["the recorded reply"]


def test_a_run_records_exactly_the_calls_it_used(tmp_path, script):
    """Replayed, taken from the local cache or sent: all recorded; a call of the previous run
    this run did not make is dropped."""
    script.responder = lambda mid, req: f"reply to {req.messages[-1]['content']}"
    record = tmp_path / "simulate.calls.jsonl"
    ask(first := client_for(tmp_path, script, record), ["old", "kept"])
    first.write_record()
    ask(client_for(tmp_path, script, None), ["from the cache"])

    second = client_for(tmp_path, script, record)
    sent = len(script.calls)
    ask(second, ["kept", "from the cache", "new"])
    assert [c.request.messages[-1]["content"] for c in script.calls[sent:]] == ["new"]
    assert second.write_record() == 3
    texts = {json.loads(line)["response"]["text"] for line in record.read_text().splitlines()}
    assert texts == {"reply to kept", "reply to from the cache", "reply to new"}


def test_failed_replies_are_not_recorded(tmp_path, script):
    script.responder = lambda mid, req: "" if req.messages[-1]["content"] == "empty" else "fine"
    record = tmp_path / "simulate.calls.jsonl"
    results = ask(client := client_for(tmp_path, script, record), ["empty", "ok"])
    assert [r.ok for r in results] == [False, True]
    assert client.write_record() == 1


def test_no_credential_reaches_a_record(tmp_path, script):
    """The API key and the extra headers are no part of a request's material; a request that
    carries a key anyway (pasted into a prompt, or into `extra_body`) is refused by the record."""
    record = tmp_path / "simulate.calls.jsonl"
    header = "Bearer hdr-secret-987654321"
    ask(client := client_for(tmp_path, script, record, extra_headers={"Authorization": header}), ["q"])
    client.write_record()
    text = record.read_text()
    assert text and SECRET not in text and header not in text

    leaky = tmp_path / "leaky.calls.jsonl"
    ask(client := client_for(tmp_path, script, leaky), [f"my key is {SECRET}"])
    with pytest.raises(PressurebenchError, match=r"\$PB_RECORD_KEY"):
        client.write_record()
    assert not leaky.exists() and not list(tmp_path.glob(".leaky*"))


def write_record(tmp_path, script, prompts) -> tuple:
    record = tmp_path / "evaluate.calls.jsonl"
    ask(client := client_for(tmp_path, script, record), prompts)
    client.write_record()
    return record, record.read_text().splitlines()


def edit_request(line: str) -> str:
    row = json.loads(line)
    row["request"]["messages"][0]["content"] = "edited"
    return canonical(row).decode()


@pytest.mark.parametrize("damage, complaint", [
    (edit_request, "not the hash of its request"),
    (lambda line: line[:-2], "cut short"),
])
def test_a_damaged_recorded_call_is_refused_naming_its_line(tmp_path, script, damage, complaint):
    record, lines = write_record(tmp_path, script, ["a", "b"])
    lines[1] = damage(lines[1])
    record.write_text("\n".join(lines) + "\n")
    client = client_for(tmp_path, script, record, cache="empty")
    with pytest.raises(ConfigError, match=rf"evaluate\.calls\.jsonl: line 2: .*{complaint}"):
        ask(client, ["a", "b"])


@pytest.mark.parametrize("damage, complaint", [
    (lambda lines: [*lines, lines[0]], r"line 3: .*recorded twice"),
    (lambda lines: [lines[0], "{}"], r"line 2: not a recorded call"),
])
def test_a_damaged_record_is_refused_when_opened(tmp_path, script, damage, complaint):
    record, lines = write_record(tmp_path, script, ["a", "b"])
    record.write_text("\n".join(damage(lines)) + "\n")
    with pytest.raises(ConfigError, match=complaint):
        CallRecord(record)


def test_a_record_line_that_is_no_valid_call_is_refused_naming_the_field(tmp_path, script):
    record, lines = write_record(tmp_path, script, ["a"])
    row = json.loads(lines[0])
    row["response"]["finish_reason"] = "maybe"
    record.write_text(canonical(row).decode() + "\n")
    with pytest.raises(ConfigError, match=r"line 1\.response\.finish_reason"):
        ask(client_for(tmp_path, script, record, cache="empty"), ["a"])


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batch_mode_calls_are_recorded_and_replay_without_a_batch(mock_server, tmp_path, monkeypatch,
                                                                  provider):
    monkeypatch.setenv("PB_RECORD_KEY", mock_server.api_key)
    base = mock_server.openai_base_url if provider == "openai" else mock_server.anthropic_base_url
    model = "gpt-4o-mini" if provider == "openai" else "claude-haiku-4-5"
    batch_spec = ModelSpec(provider=provider, model=model, base_url=base, api_key_env="PB_RECORD_KEY",
                           batch=True)
    fast = BatchSettings(max_requests=100, collect_s=0.2, poll_s=0.05, max_wait_s=60)
    record = tmp_path / "evaluate.calls.jsonl"
    prompts = [f"transcript {i}" for i in range(5)]

    client = ModelClient({"m": batch_spec}, tmp_path / "cache", batch=fast, record=record)
    first = ask(client, prompts, schema=JudgeOutput)
    assert all(r.ok for r in first) and any("batches" in p for p in mock_server.path_counts)
    assert client.write_record() == 5
    assert mock_server.api_key not in record.read_text()

    mock_server.reset()
    replay = ModelClient({"m": batch_spec}, tmp_path / "other", batch=fast, record=record)
    again = ask(replay, prompts, schema=JudgeOutput)
    assert mock_server.total_requests == 0
    assert [r.parsed for r in again] == [r.parsed for r in first]


def test_a_replayed_call_keeps_what_it_cost_and_took_when_it_was_made(tmp_path, script):
    """The record and the cache keep each reply's cost and time: a run that replays every
    call pays nothing, and still knows what its calls cost and took."""
    script.responder = lambda mid, req: f"reply to {req.messages[-1]['content']}"
    record = tmp_path / "simulate.calls.jsonl"
    prices = {"price_per_mtok_in": 2.0, "price_per_mtok_out": 8.0}
    made = ask(first := client_for(tmp_path, script, record, **prices), ["a", "b", "c"])
    first.write_record()
    assert all(r.cost_usd > 0 and r.recorded_cost_usd == r.cost_usd for r in made)
    assert all(r.recorded_latency_s > 0 for r in made)
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    assert sorted(r["response"]["cost_usd"] for r in rows) == sorted(r.cost_usd for r in made)

    for cache, with_record in (("elsewhere", record), ("cache", None)):  # record, local cache
        replay = client_for(tmp_path, script, with_record, cache=cache, **prices)
        again = ask(replay, ["a", "b", "c"])
        assert all(r.cached and r.cost_usd == 0.0 for r in again)
        assert [r.recorded_cost_usd for r in again] == [r.cost_usd for r in made]
        assert [r.recorded_latency_s for r in again] == [r.recorded_latency_s for r in made]
        usage, recorded = replay.usage()["m"], replay.recorded_usage()["m"]
        assert usage.cost_usd == 0.0 and usage.cached_calls == 3
        assert recorded.cost_usd == pytest.approx(sum(r.cost_usd for r in made))
        assert recorded.timed_calls == 3
        assert recorded.latency_s == pytest.approx(sum(r.recorded_latency_s for r in made))
