"""The prices a run will use, as `pressurebench check` lists them before anything is spent.

Each model the params use is priced from the params, from the pinned price table
(`llm.prices`), or not at all: a model no source prices is named, since its cost stays
unknown in every estimate and cost file and a spending cap cannot bound its calls.
"""

from __future__ import annotations

from ..llm.providers.registry import ModelApi, api_for
from ..params import Params


def _usd(rate: float | None) -> str:
    return "?" if rate is None else f"${rate:g}"


def describe_prices(api: ModelApi) -> str:
    """One model's prices per million tokens and where they come from."""
    record = api.price_record()
    parts = [f"{_usd(record.input)} in"]
    if record.cached_input is not None:
        parts.append(f"{_usd(record.cached_input)} cached in")
    if record.cache_write is not None:
        parts.append(f"{_usd(record.cache_write)} cache write")
    parts.append(f"{_usd(record.output)} out")
    where = "the params" if record.source == "params" else (
        f"{record.source} ({record.table_entry}, prices of {record.on})")
    notes = []
    if record.batch:
        notes.append("batch API prices" if api.table_price is not None and api.table_price.has_batch_prices()
                     else f"batch API at {api.batch_price_factor:g}x")
    if record.long_prompt_tiers:
        notes.append("long prompts at the table's higher rate")
    if not api.cached_price_known:
        notes.append("cached input priced as input")
    return (f"{', '.join(parts)} per million tokens, from {where}"
            + (f"; {', '.join(notes)}" if notes else ""))


def price_lines(params: Params, model_ids: list[str]) -> tuple[list[str], list[str]]:
    """(one line per priced model, one line per model whose cost will be unknown). Free
    providers (the embedded model, imported targets) are neither."""
    priced, unknown = [], []
    for model_id in model_ids:
        spec = params.models[model_id]
        api = api_for(spec)
        if api.params_priced or api.table_price is not None:
            priced.append(f"model '{model_id}' ({spec.model}): {describe_prices(api)}")
        elif api.price(0, 0) is None:
            why = _why_unpriced(api)
            unknown.append(f"model '{model_id}' ({spec.model}): no price: {why}; its cost is "
                           "unknown (never 0)")
    return priced, unknown


def _why_unpriced(api: ModelApi) -> str:
    """Why neither the params nor the price table price this model."""
    if api.price_table_provider is None or api.spec.price_table is False:
        return "the params give no price_per_mtok_in/out and the price table is not used for it"
    if api.spec.price_table is None and not api.at_list_price_endpoint:
        return ("the params give no price_per_mtok_in/out, and its base_url is not the provider's "
                "own API (set price_table: true if it bills the provider's list prices)")
    return (f"the params give no price_per_mtok_in/out and the price table has no "
            f"'{api.spec.model}' at {api.price_table_provider}")
