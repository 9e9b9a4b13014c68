"""List prices from a maintained table: the `genai-prices` package, pinned in pyproject.toml.

A model whose params give no `price_per_mtok_in/out` is priced from the table, as its
provider bills it on the day the prices apply to: input, input read from a prompt cache,
input written to one (5-minute or 1-hour), output, the batch API's prices and the prices
of long prompts (Gemini 2.5 Pro bills every token of a prompt above 200k tokens at its
higher rate). A cost is what the table says the provider bills for the usage it returned:
its resolved prices under its own rules (`TablePrice.cost`, checked equal to its
`calc_price`).

Only the data shipped inside the installed package is read: the snapshot is built here from
the package's own `genai_prices.data`, never from `genai_prices.calc_price`, which would
take a snapshot a background updater (`genai_prices.UpdatePrices`) fetched from the network
if anything in the process had started one. Prices change only when the pinned version does,
and every cost file names the version and the date its prices apply to.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from functools import cache
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from genai_prices.data_snapshot import DataSnapshot
    from genai_prices.types import ModelInfo, ModelPrice, Provider

TABLE = "genai-prices"
BATCH_CONTEXT = {"processing": "batch"}  # the table's request context for batch API usage
PER = 1_000_000
CacheTtl = Literal["5m", "1h"]


def table_name() -> str:
    """The table and its installed version, as cost files record it ("genai-prices 0.2.3")."""
    return f"{TABLE} {version(TABLE)}"


@cache
def _snapshot() -> DataSnapshot:
    """The price data the installed package ships (never a network update)."""
    from genai_prices.data import providers
    from genai_prices.data_snapshot import DataSnapshot

    return DataSnapshot(providers=providers, from_auto_update=False)


def _noon(on: date) -> datetime:
    """The moment a date's prices are looked up at (a price change takes effect on a UTC date)."""
    return datetime.combine(on, time(12), tzinfo=UTC)


@dataclass(frozen=True, eq=False)
class TablePrice:
    """One model's entry of the table for one provider, priced as of one date (one instance
    per lookup: `lookup` and the rates it resolves are cached)."""

    provider_id: str  # the table's provider id (`ModelApi.price_table_provider`)
    model_id: str  # the table's model id the params' model name matched
    on: date
    model: ModelInfo
    provider: Provider

    @property
    def entry(self) -> str:
        return f"{self.provider_id}/{self.model_id}"

    @property
    def _own(self) -> bool:
        """The provider lists the model itself (not through another provider's entry, whose
        request-specific prices the table does not apply to it)."""
        return any(self.model is m for m in self.provider.models)

    def _prices(self, batch: bool) -> ModelPrice:
        context = BATCH_CONTEXT if batch and self._own else None
        return self.model.get_prices(_noon(self.on), context)

    def has_batch_prices(self) -> bool:
        """Whether the table has batch API prices for this model at this provider on this date."""
        if not self._own:
            return False
        for variant in self.model.price_variants or ():
            if variant.when == BATCH_CONTEXT and (
                    variant.constraint is None or variant.constraint.active(_noon(self.on))):
                return True
        return False

    def cost(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0,
             cache_write_tokens: int = 0, *, ttl: CacheTtl = "5m", batch: bool = False) -> float:
        """USD the provider bills for this usage: `input_tokens` is the whole prompt, of which
        `cached_tokens` were read from the prompt cache and `cache_write_tokens` written to it
        (with `ttl`); `output_tokens` include hidden reasoning. `batch`: at the table's batch
        prices (the caller checks `has_batch_prices`).

        The table's own rules, applied to its resolved prices (its `calc_price` takes about
        a quarter of a millisecond a call, and this is asked for every reply): a token kind
        without a price of its own is priced as its parent kind (a 1-hour write as a write,
        a write or a read as input), and a price with long-prompt tiers takes, for every
        token, the rate of the highest tier the whole prompt passes.
        `tests/llm/test_price_table.py` checks it against `calc_price`."""
        rates = self._rates(batch)

        def rate(*keys: str) -> float:
            for key in keys:
                price = rates.get(key)
                if price is not None:
                    base, tiers = price
                    return next((p for start, p in reversed(tiers) if input_tokens > start), base)
            return 0.0

        write_keys = ("cache_write_1h_mtok", "cache_write_mtok") if ttl == "1h" else ("cache_write_mtok",)
        uncached = input_tokens - cached_tokens - cache_write_tokens
        return (uncached * rate("input_mtok") + cached_tokens * rate("cache_read_mtok", "input_mtok")
                + cache_write_tokens * rate(*write_keys, "input_mtok")
                + output_tokens * rate("output_mtok")) / PER

    def _rates(self, batch: bool) -> dict[str, tuple[float, tuple[tuple[int, float], ...]]]:
        """The token prices that apply (base, and the (start, price) of each long-prompt tier)."""
        return _resolved_rates(self, batch)

    def calc_price(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0,
                   cache_write_tokens: int = 0, *, ttl: CacheTtl = "5m", batch: bool = False) -> float:
        """The same cost by the table's own calculation (`ModelInfo.calc_price`)."""
        from genai_prices import Usage

        usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens,
                                 "cache_read_tokens": cached_tokens, "cache_write_tokens": cache_write_tokens}
        if ttl == "1h" and cache_write_tokens:
            usage["cache_write_1h_tokens"] = cache_write_tokens
        calc = self.model.calc_price(Usage(**usage), self.provider, genai_request_timestamp=_noon(self.on),
                                     price_context=BATCH_CONTEXT if batch else None)
        return float(calc.total_price)

    def rate(self, key: str, batch: bool = False) -> float | None:
        """USD per million tokens of one price of the table (`input_mtok`, `output_mtok`,
        `cache_read_mtok`, `cache_write_mtok`, `cache_write_1h_mtok`) for prompts below any
        long-prompt tier; None where the table has none."""
        value = getattr(self._prices(batch), key, None)
        if value is None:
            return None
        base = value if isinstance(value, Decimal) else value.base
        return float(base)

    def has_tiers(self) -> bool:
        """Whether some price rises for long prompts (`cost` applies it; `rate` shows the base)."""
        from genai_prices.types import TieredPrices

        return any(isinstance(v, TieredPrices) for v in vars(self._prices(False)).values())


TOKEN_PRICES = ("input_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok", "output_mtok")


@cache
def _resolved_rates(entry: TablePrice, batch: bool) -> dict[str, tuple[float, tuple[tuple[int, float], ...]]]:
    from genai_prices.types import TieredPrices

    prices = entry._prices(batch)
    out = {}
    for key in TOKEN_PRICES:
        value = getattr(prices, key, None)
        if isinstance(value, TieredPrices):
            out[key] = (float(value.base), tuple((t.start, float(t.price)) for t in value.tiers))
        elif value is not None:
            out[key] = (float(value), ())
    return out


@cache
def lookup(provider_id: str, model: str, on: date) -> TablePrice | None:
    """The table's entry for `model` at `provider_id` as of `on`; None when the table has no
    such model (its cost stays unknown, never a guess) or no prices for it."""
    try:
        provider, info = _snapshot().find_provider_model(model, None, provider_id, None)
    except LookupError:
        return None
    found = TablePrice(provider_id=provider.id, model_id=info.id, on=on, model=info, provider=provider)
    if found.rate("input_mtok") is None or found.rate("output_mtok") is None:
        return None
    return found


def today() -> date:
    """The UTC date prices are looked up for: the day the calls are made."""
    return datetime.now(UTC).date()
