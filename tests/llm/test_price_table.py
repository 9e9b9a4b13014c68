"""Prices from the pinned table (`genai-prices`), overridden by the params' prices.

The figures below were read from the table's data (genai_prices/data.py of the pinned
version) and agree with the providers' published list prices for these models: GPT-5.4 mini
$0.75 input, $0.075 cached input, $4.50 output per million tokens (batch: half); Claude
Sonnet 4.6 $3, cache read $0.30, cache write $3.75 (5 minutes) or $6 (1 hour), output $15
(Message Batches: half, cache prices included); Gemini 2.5 Pro $1.25 input, $0.125 cached,
$10 output for prompts up to 200k tokens and $2.50 / $15 above (Batch API: half of input and
output). Prices are looked up for a fixed date so that a later price change in a newer table
cannot move them.
"""

from __future__ import annotations

from datetime import date

import pytest

from pressurebench.llm.prices import table_name
from pressurebench.llm.providers.registry import ModelApi, api_class
from pressurebench.params import ModelSpec

ON = date(2026, 11, 28)
M = 1_000_000


def api(**kw) -> ModelApi:
    spec = ModelSpec(**kw)
    return api_class(spec.provider)(spec, None, ON)


def test_the_pinned_table_is_the_one_installed():
    from importlib.metadata import version

    assert table_name() == f"genai-prices {version('genai-prices')}" == "genai-prices 0.2.3"


def test_a_model_without_params_prices_is_priced_from_the_table_as_billed():
    gpt = api(provider="openai", model="gpt-5.4-mini")
    assert gpt.price_source == table_name() and gpt.table_price.entry == "openai/gpt-5.4-mini"
    # 1M prompt tokens of which 400k read from the prompt cache, 100k output (reasoning included)
    assert gpt.price(M, 100_000, 400_000) == pytest.approx(0.6 * 0.75 + 0.4 * 0.075 + 0.1 * 4.5)
    claude = api(provider="anthropic", model="claude-sonnet-4-6")
    assert claude.price(M, 100_000, 400_000, 300_000) == pytest.approx(
        0.3 * 3 + 0.4 * 0.3 + 0.3 * 3.75 + 0.1 * 15)
    hour = api(provider="anthropic", model="claude-sonnet-4-6", prompt_cache="1h")
    assert hour.price(M, 0, 0, 300_000) == pytest.approx(0.7 * 3 + 0.3 * 6)
    assert (claude.cached_input_price, claude.cache_write_price, hour.cache_write_price) == (0.3, 3.75, 6.0)


def test_batched_calls_cost_the_tables_batch_prices():
    gpt = api(provider="openai", model="gpt-5.4-mini", batch=True)
    assert gpt.price(M, M, 500_000) == pytest.approx(0.5 * 0.375 + 0.5 * 0.0375 + 2.25)
    claude = api(provider="anthropic", model="claude-sonnet-4-6", batch=True)
    assert claude.price(M, M, 0, 200_000) == pytest.approx(0.8 * 1.5 + 0.2 * 1.875 + 7.5)


def test_the_params_prices_override_the_table():
    gpt = api(provider="openai", model="gpt-5.4-mini", price_per_mtok_in=1.0, price_per_mtok_out=2.0)
    assert gpt.price_source == "params" and gpt.table_price is None
    assert gpt.price(M, M) == pytest.approx(3.0)
    record = gpt.price_record()
    assert (record.source, record.table_entry, record.on, record.cached_input) == ("params", None, None, None)


def test_half_a_params_price_is_refused_rather_than_mixed_with_the_table():
    with pytest.raises(ValueError, match="override the price table only together"):
        ModelSpec(provider="openai", model="gpt-5.4-mini", price_per_mtok_in=1.0)


def test_a_model_the_table_lacks_has_an_unknown_cost_never_a_guess():
    missing = api(provider="openai", model="gpt-nonexistent-7")
    assert missing.price(1000, 1000) is None and missing.price_source is None
    assert missing.price_record().source is None


def test_another_base_url_is_priced_from_the_table_only_when_the_params_say_it_bills_list_prices():
    local = {"provider": "openai", "model": "gpt-5.4-mini", "base_url": "http://localhost:8000/v1"}
    assert api(**local).price(M, 0) is None  # a self-hosted server bills nothing the table knows
    assert api(**local, price_table=True).price(M, 0) == pytest.approx(0.75)
    assert api(provider="openai", model="gpt-5.4-mini", price_table=False).price(M, 0) is None
    at_openai = api(provider="openai", model="gpt-5.4-mini", base_url="https://api.openai.com/v1")
    assert at_openai.price(M, 0) == pytest.approx(0.75)


def test_a_price_change_applies_from_its_date():
    """Claude Sonnet 4.6 billed prompts above 200k tokens at a higher rate until the table's
    change of 2026-03-13, and at one rate since."""
    spec = ModelSpec(provider="anthropic", model="claude-sonnet-4-6")
    before = api_class("anthropic")(spec, None, date(2026, 3, 1))
    after = api_class("anthropic")(spec, None, date(2026, 3, 20))
    assert before.price(300_000, 0) == pytest.approx(0.3 * 6)
    assert after.price(300_000, 0) == pytest.approx(0.3 * 3)


def test_the_table_is_read_from_the_installed_package_never_an_update(monkeypatch):
    """A snapshot a `genai_prices.UpdatePrices` background task fetched replaces the package's
    own data for `genai_prices.calc_price`; the prices here never take it."""
    from genai_prices import data_snapshot

    monkeypatch.setattr(data_snapshot, "_custom_snapshot", data_snapshot.DataSnapshot(
        providers=[], from_auto_update=True))
    assert api(provider="openai", model="gpt-5.4-mini").price(M, 0) == pytest.approx(0.75)


def test_a_capped_run_needs_a_price_the_table_can_give(tmp_path):
    """With the table, a cap bounds a model the params do not price; a model nobody prices
    is still refused under a cap."""
    import yaml

    from pressurebench.errors import ConfigError
    from pressurebench.params import load_params
    from support import tiny_params

    data = tiny_params()
    for spec in data["models"].values():
        spec.pop("base_url", None)
        spec.update(provider="openai", model="gpt-5.4-mini")
        for key in [k for k in spec if k.startswith("price_")]:
            del spec[key]
    data.setdefault("run", {})["max_cost_usd"] = 5.0
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data))
    load_params(path)
    first = next(iter(data["models"]))
    data["models"][first]["model"] = "gpt-nonexistent-7"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="cannot bound its calls"):
        load_params(path)


def test_check_lists_the_prices_it_will_use_and_names_the_models_it_cannot_price(project, capsys):
    from pressurebench.commands.cli import main

    models = {
        "gen": {"provider": "openai", "model": "gpt-5.4-mini", "max_tokens": 400},
        "user": {"provider": "anthropic", "model": "claude-sonnet-4-6"},
        "judge": {"provider": "openai", "model": "judge-model"},
        "target-a": {"provider": "openai", "model": "target-a", "price_per_mtok_in": 1.0,
                     "price_per_mtok_out": 2.0},
        "target-b": {"provider": "openai", "model": "gpt-5.4-mini", "base_url": "http://127.0.0.1:9/v1"},
    }
    project.write_params(models=models)
    assert main(["check", "--offline"]) == 0
    out = capsys.readouterr().out
    table = table_name()
    assert (f"price  model 'gen' (gpt-5.4-mini): $0.75 in, $0.075 cached in, $4.5 out per million "
            f"tokens, from {table} (openai/gpt-5.4-mini, prices of ") in out
    assert ("price  model 'user' (claude-sonnet-4-6): $3 in, $0.3 cached in, $3.75 cache write, "
            f"$15 out per million tokens, from {table} (anthropic/claude-sonnet-4-6") in out
    assert ("price  model 'target-a' (target-a): $1 in, $2 out per million tokens, from the "
            "params; cached input priced as input") in out
    assert ("warn  model 'judge' (judge-model): no price: the params give no price_per_mtok_in/out "
            "and the price table has no 'judge-model' at openai; its cost is unknown (never 0)") in out
    assert ("warn  model 'target-b' (gpt-5.4-mini): no price: the params give no price_per_mtok_in/out, "
            "and its base_url is not the provider's own API (set price_table: true") in out


def test_the_three_provider_study_without_prices_gets_an_estimate_from_the_table():
    """params/examples/three-providers-gemini-judge.yaml names GPT-5.4 mini, Claude Sonnet 4.6
    and Gemini 2.5 Pro with no prices: every line of its estimate is priced by the table."""
    from pressurebench.commands.cost_forecast import estimate, totals
    from pressurebench.params import load_params
    from support import REPO

    params = load_params(REPO / "params" / "examples" / "three-providers-gemini-judge.yaml")
    lines = estimate(params, REPO)
    assert {x.model_id for x in lines} == set(params.models)
    assert all(x.cost_usd is not None and x.cost_usd > 0 for x in lines)
    assert totals(lines)[3] == pytest.approx(sum(x.cost_usd for x in lines))


def test_a_cap_bounds_calls_priced_by_the_table(mock_server, monkeypatch, tmp_path):
    """The spending cap reserves each call's bound at the table's prices and stops before one
    that could pass it; the ledger holds what the table billed for the calls made."""
    import asyncio
    import json

    from pressurebench.llm import ModelClient
    from pressurebench.llm.spending import SpendingCapReached

    mock_server.models = ("gemini-2.5-pro",)
    monkeypatch.setenv("PB_GEMINI_KEY", "test-key")
    spec = ModelSpec(provider="google", model="gemini-2.5-pro", base_url=mock_server.gemini_base_url,
                     api_key_env="PB_GEMINI_KEY", price_table=True, max_tokens=200,
                     thinking_budget=128)
    # one call's bound: its prompt (bounded) and 328 output tokens at $10 per million
    cap = 0.005

    async def go():
        async with ModelClient({"m": spec}, tmp_path / "cache", max_cost_usd=cap) as client:
            results = []
            for i in range(20):
                results.append(await client.chat("m", [{"role": "user", "content": f"question {i}"}]))
            return results

    with pytest.raises(SpendingCapReached):
        asyncio.run(go())
    spent = json.loads((tmp_path / "cache" / "spending.json").read_text())["spent_usd"]
    billed = mock_server.gemini.billed["gemini-2.5-pro"]
    assert 0 < spent <= cap
    assert spent == pytest.approx((billed["uncached"] * 1.25 + billed["output"] * 10) / 1e6)


@pytest.mark.parametrize(("provider", "model"), [
    ("openai", "gpt-5.4-mini"), ("anthropic", "claude-sonnet-4-6"), ("google", "gemini-2.5-pro"),
    ("google", "gemini-2.5-flash"), ("anthropic-bedrock", "global.anthropic.claude-sonnet-4-6"),
    ("azure-openai", "gpt-5.4-mini"), ("anthropic", "claude-haiku-4-5"),
])
def test_the_cost_is_the_tables_own_calculation(provider, model):
    """`TablePrice.cost` applies the table's rules to its resolved prices; it equals the
    table's `calc_price` over short and long prompts, cache reads and writes of both lifetimes
    and batch prices, for each of these models as of two dates."""
    from pressurebench.llm.prices import lookup

    table_provider = api_class(provider).price_table_provider
    for on in (ON, date(2026, 3, 1)):
        entry = lookup(table_provider, model, on)
        assert entry is not None
        for usage in [(1000, 200, 0, 0), (50_000, 900, 20_000, 5000), (250_000, 4000, 100_000, 30_000),
                      (1_200_000, 10, 1_000_000, 0)]:
            for ttl in ("5m", "1h"):
                for batch in (False, True):
                    assert entry.cost(*usage, ttl=ttl, batch=batch) == pytest.approx(
                        entry.calc_price(*usage, ttl=ttl, batch=batch), rel=1e-12), (usage, ttl, batch, on)
