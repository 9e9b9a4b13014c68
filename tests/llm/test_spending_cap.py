"""`run.max_cost_usd`: a run stops within one call of the cap, and continues when it is raised."""

from __future__ import annotations

import asyncio
import json

import pytest

from pressurebench.errors import ConfigError
from pressurebench.llm import ModelClient
from pressurebench.llm.providers.registry import api_for
from pressurebench.llm.spending import SpendingCapReached, SpendingLedger, call_cost_bound
from pressurebench.params import ModelSpec, load_params

KEY_ENV = "PB_CAP_KEY"
PRICES = {"price_per_mtok_in": 1000.0, "price_per_mtok_out": 4000.0}  # dear, so a few calls add up


def spec(server) -> ModelSpec:
    return ModelSpec(provider="openai", model="gpt-4o", base_url=server.openai_base_url,
                     api_key_env=KEY_ENV, max_tokens=50, max_concurrency=4, **PRICES)


def run_calls(tmp_path, server, cap: float, n: int = 30):
    """`n` distinct calls under `cap`: (answered results, whether the cap stopped them)."""
    client = ModelClient({"m": spec(server)}, tmp_path / "cache", max_cost_usd=cap, max_retries=0)
    answered = []

    async def one(i):
        result = await client.chat("m", [{"role": "user", "content": f"question {i:03d} " * 4}])
        answered.append(result)

    async def go():
        async with client:
            await asyncio.gather(*(one(i) for i in range(n)))

    try:
        asyncio.run(go())
    except SpendingCapReached as exc:
        return answered, str(exc), client
    return answered, None, client


def test_the_cap_stops_within_one_call_and_a_raised_cap_continues_without_paying_twice(
    mock_server, monkeypatch, tmp_path
):
    monkeypatch.setenv(KEY_ENV, mock_server.api_key)
    bound = call_cost_bound(api_for(spec(mock_server)), [{"role": "user", "content": "question 000 " * 4}], 50)
    cap = 10.5 * bound
    answered, stopped, client = run_calls(tmp_path, mock_server, cap)
    assert stopped and "spending cap reached" in stopped and "raise the cap" in stopped
    spent = client.spending.spent
    assert spent <= cap  # never past the cap on list prices
    assert cap - spent <= 4 * bound + bound  # stopped within the calls in flight plus one
    made = mock_server.path_counts["/v1/chat/completions"]
    assert 0 < made < 30
    assert json.loads((tmp_path / "cache" / "spending.json").read_text())["spent_usd"] == pytest.approx(spent)

    answered, stopped, client = run_calls(tmp_path, mock_server, cap=1000 * bound)
    assert stopped is None and all(r.ok for r in answered) and len(answered) == 30
    assert max(mock_server.body_hash_counts.values()) == 1  # nothing asked (or paid for) twice
    assert mock_server.path_counts["/v1/chat/completions"] == 30


def test_spending_persists_in_the_cache_directory(tmp_path):
    ledger = SpendingLedger(tmp_path, cap_usd=1.0)
    ledger.reserve(0.4)
    ledger.settle(0.4, 0.3)
    again = SpendingLedger(tmp_path, cap_usd=1.0)
    assert again.spent == pytest.approx(0.3)
    again.reserve(0.7)
    with pytest.raises(SpendingCapReached):
        again.reserve(0.01)


def test_a_cap_needs_a_price_for_every_model_it_bounds(project):
    path = project.write_params(run={"max_cost_usd": 5.0})
    with pytest.raises(ConfigError, match="has no price_per_mtok_in/out") as err:
        load_params(path)
    assert "models." in str(err.value)


def test_calls_made_without_a_cap_count_against_a_cap_set_later(mock_server, monkeypatch, tmp_path):
    """A study spends first without `run.max_cost_usd`, then sets one: the cap counts the
    whole spend, as the record keeps every paid call whatever the params say."""
    monkeypatch.setenv(KEY_ENV, mock_server.api_key)
    client = ModelClient({"m": spec(mock_server)}, tmp_path / "cache", max_retries=0)

    async def uncapped():
        async with client:
            return await asyncio.gather(*(
                client.chat("m", [{"role": "user", "content": f"first {i:03d} " * 4}])
                for i in range(10)
            ))

    results = asyncio.run(uncapped())
    paid = sum(r.cost_usd for r in results)
    assert paid > 0
    record = json.loads((tmp_path / "cache" / "spending.json").read_text())
    assert record["spent_usd"] == pytest.approx(paid)

    bound = call_cost_bound(api_for(spec(mock_server)),
                            [{"role": "user", "content": "question 000 " * 4}], 50)
    cap = paid + 3.5 * bound  # room for three more calls, not thirty
    _, stopped, capped = run_calls(tmp_path, mock_server, cap)
    assert stopped and "spending cap reached" in stopped
    assert capped.spending.spent <= cap
    assert mock_server.path_counts["/v1/chat/completions"] <= 10 + 3


def test_a_free_model_without_a_cap_writes_no_spending_record(tmp_path):
    """Only a paid call touches the record when there is no cap (a write per call costs)."""
    ledger = SpendingLedger(tmp_path / "cache", cap_usd=None)
    assert not ledger.capped
    assert not (tmp_path / "cache" / "spending.json").exists()
