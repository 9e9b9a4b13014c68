"""The provider registry: each provider is one module that owns everything about it.

A provider module in this folder (its name ends in `_provider`) defines one
`ModelApi` subclass and registers it under its name with `@model_api("name")`,
as inspect_ai registers its model APIs with `@modelapi`. The class holds the
provider's whole contract: the params settings only it takes and the requests
its service refuses (checked before any call), how structured answers are asked
for, what decides its replies (cache keys), its token limit and price rules,
how many calls it takes at once, its batch API, the free request that checks an
endpoint and key before a run, what to tell a user when its process crashes, and
how it sends a call. Nothing outside these modules branches on a provider's
name, so adding a provider is one new module (plus its tests); a class
registered anywhere else (a test, a plugin) works the same way.

Registering imports no SDK: provider modules import theirs when a call is first
made, so validating the params stays fast.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from datetime import date
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar
from urllib.parse import urlsplit

from ...schemas import PriceSource
from ..prices import TablePrice, lookup, table_name, today

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..types import ModelSettings, ProviderRequest, ProviderResponse

# Calls in flight per model id, unless the params set `max_concurrency`.
REMOTE_DEFAULT_CONCURRENCY = 8
# A batched model's calls wait in batches, not connections: as many as a batch holds may be
# pending, so stages start that many.
BATCH_DEFAULT_CONCURRENCY = 50000

_APIS: dict[str, type[ModelApi]] = {}
_BUILTINS_LOADED = False


class ModelApi:
    """One provider: its params rules, cache key material, price and limits, endpoint check and
    crash hint (class attributes and methods on a spec), and the calls themselves (an instance
    made with the key: `connect`).

    The defaults describe a remote API with sampling settings passed through as given.
    """

    name: ClassVar[str] = ""
    # ModelSettings fields only this provider takes: set on another provider's model, an error.
    settings: ClassVar[tuple[str, ...]] = ()
    # Runs inside the stage's process (no endpoint, no key, no rate limits): a native crash
    # there kills the stage, and reports carry the embedded model's caveat.
    embedded: ClassVar[bool] = False
    # The installed distributions that decide its replies, recorded in every stage's manifest.
    distributions: ClassVar[tuple[str, ...]] = ()
    # Its conversations are read from files another tool wrote (`pressurebench import`): it is
    # never called, and its simulate stage converts them instead of simulating.
    conversations_imported: ClassVar[bool] = False
    # Calls in flight by default.
    default_concurrency: ClassVar[int] = REMOTE_DEFAULT_CONCURRENCY
    # What a model without `price_per_mtok_in/out` costs: None is unknown (not free).
    unpriced_cost: ClassVar[float | None] = None
    # Its batch API's price relative to direct calls; None: it has no batch API (and its
    # models take no `batch: true`). A provider with one implements `body`, `batch_submit`,
    # `batch_poll` and `batch_results` (`llm.batches`).
    batch_price_factor: ClassVar[float | None] = None
    # The most request bodies one batch may hold, in bytes, where the provider allows less than
    # `BatchSettings.max_bytes`; None: no lower limit of its own.
    batch_max_bytes: ClassVar[int | None] = None
    # What a base_url for this API looks like, said when its model list answers 404
    # (`pressurebench check`); None: nothing to add.
    base_url_hint: ClassVar[str | None] = None
    # The provider's id in the price table (`llm.prices`); None: the table does not price it.
    price_table_provider: ClassVar[str | None] = None
    # The hosts of the provider's own API, where its list prices are what it bills: a model
    # without params prices served there is priced from the table (`price_table` unset).
    list_price_hosts: ClassVar[tuple[str, ...]] = ()

    def __init__(self, spec: ModelSettings, api_key: str | None = None, price_date: date | None = None):
        self.spec = spec
        self.api_key = api_key
        # The day its table prices apply to: the day its calls are made.
        self.price_date = price_date or today()

    # --- params rules -------------------------------------------------------------------

    def check(self) -> None:
        """Raise ValueError for a request this provider's service would refuse."""

    @property
    def structured_mode(self) -> str | None:
        """How structured answers are asked for (`ModelSettings.structured_output`)."""
        return self.spec.structured_output or "json_schema"

    def request_identity(self) -> tuple:
        """Everything of the spec that goes into its calls' cache keys (`llm.client` and
        `key_material`): two model ids with the same identity send the same requests and
        replay the same cached answers."""
        s = self.spec
        return (s.provider, s.model, s.base_url, s.temperature, s.top_p, s.max_tokens, s.seed,
                *self.identity_extras())

    def identity_extras(self) -> tuple:
        """The provider's own part of `request_identity`."""
        extra_body = json.dumps(self.spec.extra_body, sort_keys=True) if self.spec.extra_body else None
        return (self.structured_mode, extra_body)

    # --- limits and price ---------------------------------------------------------------

    @property
    def concurrency(self) -> int:
        """Calls in flight at once."""
        if self.spec.max_concurrency is not None:
            return self.spec.max_concurrency
        if self.spec.batch:
            return BATCH_DEFAULT_CONCURRENCY
        return self.default_concurrency

    def token_limit(self, answer_tokens: int) -> int:
        """The token limit sent for an answer of `answer_tokens` (room for hidden reasoning added
        where the model reasons before it answers)."""
        return answer_tokens

    # What a cache write costs per input token's price when the params give no price for it
    # (Anthropic: 1.25x for the 5-minute cache, 2x for the 1-hour one); 0: it writes none.
    cache_write_factor: ClassVar[float] = 0.0
    cache_write_factor_1h: ClassVar[float] = 0.0

    def cost_of(self, response: ProviderResponse) -> float | None:
        """What the provider bills for `response` (input, cached input and cache writes priced
        apart): the one place a reply's cost is made (the spending record, a stage's cost and
        the call's recorded cost all read it)."""
        return self.price(response.input_tokens, response.output_tokens,
                          response.cached_input_tokens, response.cache_write_tokens)

    # --- where prices come from: the params, else the price table, else unknown ---------

    @property
    def params_priced(self) -> bool:
        """The params give this model's prices (`price_per_mtok_in` and `_out`): they override
        the table."""
        return self.spec.price_per_mtok_in is not None and self.spec.price_per_mtok_out is not None

    @property
    def endpoint_host(self) -> str | None:
        """The host of `base_url` ("" when it names none); None: no base_url, the provider's
        own API."""
        url = self.spec.base_url
        return None if url is None else urlsplit(url).hostname or ""

    @property
    def at_list_price_endpoint(self) -> bool:
        """Served by the provider's own API (no base_url, or one on its hosts), which bills its
        list prices; a proxy, a gateway or a self-hosted server may bill anything."""
        host = self.endpoint_host
        return host is None or host in self.list_price_hosts

    @cached_property
    def table_price(self) -> TablePrice | None:
        """The price table's entry for this model (`llm.prices`), when it is priced from it:
        no params prices, a provider the table knows, and `price_table` true, or unset and the
        model at the provider's own API. None: not from the table (or the table lacks it)."""
        setting = self.spec.price_table
        if self.params_priced or self.price_table_provider is None or setting is False:
            return None
        if setting is None and not self.at_list_price_endpoint:
            return None
        return lookup(self.price_table_provider, self.spec.model, self.price_date)

    @property
    def price_source(self) -> str | None:
        """Where this model's prices come from: "params", the table and its version, the
        provider itself when it charges nothing (the embedded model), or None (unknown)."""
        if self.params_priced:
            return "params"
        if self.table_price is not None:
            return table_name()
        return f"{self.name} (no charge)" if self.unpriced_cost == 0 else None

    @property
    def batched(self) -> bool:
        """Its calls go through the provider's batch API."""
        return bool(self.spec.batch and self.batch_price_factor is not None)

    def price(self, input_tokens: int, output_tokens: int, cached_tokens: int = 0,
              cache_write_tokens: int = 0) -> float | None:
        """Cost in USD at the params' prices, else at the price table's (`table_price`), else
        `unpriced_cost`: the one pricing formula of every call, estimate and cap. Batched
        calls cost the table's batch prices where it has them, else the batch API's factor.

        `input_tokens` is the whole prompt, of which `cached_tokens` were read from the
        provider's prompt cache and `cache_write_tokens` written to it; each part is priced
        as the provider bills it (`cached_input_price`, `cache_write_price`)."""
        s = self.spec
        table = self.table_price
        if not self.params_priced and table is None:
            return self.unpriced_cost
        if table is None:
            assert s.price_per_mtok_in is not None and s.price_per_mtok_out is not None
            uncached = input_tokens - cached_tokens - cache_write_tokens
            cost = (uncached * s.price_per_mtok_in + cached_tokens * self.cached_input_price
                    + cache_write_tokens * self.cache_write_price
                    + output_tokens * s.price_per_mtok_out) / 1e6
        else:
            batch_prices = self.batched and table.has_batch_prices()
            cost = table.cost(input_tokens, output_tokens, cached_tokens, cache_write_tokens,
                              ttl="1h" if s.prompt_cache == "1h" else "5m", batch=batch_prices)
            if (cache_write_tokens and self.cache_write_factor > 1 and table.rate("cache_write_mtok") is None
                    and table.rate("cache_write_1h_mtok") is None):
                # A write the table does not price is priced as input there; the provider's
                # rule says what it bills above that.
                extra = self.cache_write_price - (table.rate("input_mtok") or 0.0)
                factor = self.batch_price_factor if batch_prices and self.batch_price_factor else 1.0
                cost += cache_write_tokens * extra / 1e6 * factor
            if batch_prices:
                return cost
        return cost * self.batch_price_factor if self.batched and self.batch_price_factor else cost

    def price_record(self) -> PriceSource:
        """Where this model's prices come from and what they are, as cost files and manifests
        record them."""
        table = self.table_price
        known = self.params_priced or table is not None
        return PriceSource(
            source=self.price_source,
            table_entry=table.entry if table is not None else None,
            on=table.on.isoformat() if table is not None else None,
            batch=self.batched,
            input=self.input_price,
            cached_input=self.cached_input_price if known and self.cached_price_known else None,
            cache_write=self.cache_write_price if known and self.writes_cache else None,
            output=self.output_price,
            long_prompt_tiers=table is not None and table.has_tiers(),
        )

    @property
    def _write_key(self) -> str:
        return "cache_write_1h_mtok" if self.spec.prompt_cache == "1h" else "cache_write_mtok"

    @property
    def cached_price_known(self) -> bool:
        """Whether its prices include cached input; if not, it is priced as full input."""
        if self.params_priced:
            return self.spec.price_per_mtok_cached_in is not None
        table = self.table_price
        return table is not None and table.rate("cache_read_mtok") is not None

    def _price(self, from_params: float | None, table_rate: str) -> float | None:
        """The params' price when the params set prices, else the price table's rate."""
        if self.params_priced:
            return from_params
        table = self.table_price
        return table.rate(table_rate) if table is not None else None

    @property
    def input_price(self) -> float | None:
        """USD per million uncached input tokens (the table's base rate for short prompts)."""
        return self._price(self.spec.price_per_mtok_in, "input_mtok")

    @property
    def output_price(self) -> float | None:
        """USD per million output tokens, hidden reasoning included."""
        return self._price(self.spec.price_per_mtok_out, "output_mtok")

    @property
    def cached_input_price(self) -> float:
        """USD per million input tokens read from the prompt cache (the input price when no
        price is known for them: never cheaper than known)."""
        s = self.spec
        if self.params_priced and s.price_per_mtok_cached_in is not None:
            return s.price_per_mtok_cached_in
        table = self.table_price
        if table is not None and (rate := table.rate("cache_read_mtok")) is not None:
            return rate
        return self.input_price or 0.0

    @property
    def cache_write_price(self) -> float:
        """USD per million input tokens written to the prompt cache."""
        s = self.spec
        if self.params_priced and s.price_per_mtok_cache_write is not None:
            return s.price_per_mtok_cache_write
        table = self.table_price
        if table is not None and (rate := table.rate(self._write_key)) is not None:
            return rate
        factor = self.cache_write_factor_1h if s.prompt_cache == "1h" else self.cache_write_factor
        return max(factor, 1.0) * (self.input_price or 0.0)

    def cached_prefix(self, prefix_tokens: int) -> int:
        """Of a prompt prefix an earlier call of the same group sent just before, the tokens the
        provider would read from its prompt cache (`pressurebench estimate`): none by default."""
        return 0

    @property
    def writes_cache(self) -> bool:
        """Whether a call may write the prompt cache at a price of its own (Anthropic)."""
        return self.cache_write_factor > 0 and self.spec.prompt_cache != "off"

    # --- before a run and after a crash ---------------------------------------------------

    def model_list_endpoint(self) -> tuple[str, dict[str, str]] | None:
        """The URL and headers of a free request that shows the endpoint answers and takes the
        key (`pressurebench check`); None when there is no endpoint."""
        return None

    def model_page_url(self, url: str, cursor: str) -> str:
        """The model list's page after `cursor` (Anthropic's `after_id`; OpenAI does not page)."""
        from urllib.parse import urlencode

        return f"{url}?{urlencode({'limit': 1000, 'after_id': cursor})}"

    @classmethod
    def crash_hint(cls, model_ids: list[str]) -> str | None:
        """What to try when a stage running these models died natively; None: nothing to say."""
        return None

    # --- calls --------------------------------------------------------------------------

    def describe(self) -> str:
        return f"{self.name} {self.spec.model}" + (f" at {self.spec.base_url}" if self.spec.base_url else "")

    def key_material(self) -> dict:
        """What decides an answer beyond the request itself (part of every cache key)."""
        return {}

    def seed(self, key: str, sample: int) -> int | None:
        """The seed sent: the params' seed (when set) moves with the sample index so samples differ."""
        return None if self.spec.seed is None else self.spec.seed + sample

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        raise NotImplementedError(f"{type(self).__name__} sends no calls")

    async def aclose(self) -> None:
        return None


def model_api(name: str) -> Callable[[type[ModelApi]], type[ModelApi]]:
    """Class decorator: register a provider under `name` (the params' `provider:`)."""

    def register(cls: type[ModelApi]) -> type[ModelApi]:
        if name in _APIS and _APIS[name] is not cls:
            raise ValueError(f"provider '{name}' is registered twice ({_APIS[name].__module__}, {cls.__module__})")
        cls.name = name
        _APIS[name] = cls
        return cls

    return register


def _load_builtins() -> None:
    """Import every provider module of this folder once; each registers itself."""
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        _BUILTINS_LOADED = True
        for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
            if module.name.endswith("_provider"):
                importlib.import_module(f"{__package__}.{module.name}")


def provider_names() -> list[str]:
    """Every registered provider's name, sorted."""
    _load_builtins()
    return sorted(_APIS)


def setting_owners() -> dict[str, list[str]]:
    """Each provider-specific ModelSettings field, and the providers that take it."""
    owners: dict[str, list[str]] = {}
    for name in provider_names():
        for setting in _APIS[name].settings:
            owners.setdefault(setting, []).append(name)
    return owners


def api_class(name: str) -> type[ModelApi]:
    """The provider registered as `name`; ValueError naming the registered ones otherwise."""
    _load_builtins()
    if name not in _APIS:
        known = ", ".join(f"'{n}'" for n in sorted(_APIS))
        raise ValueError(f"unknown provider '{name}' (registered: {known})")
    return _APIS[name]


def importing_provider() -> str:
    """The name of the provider whose conversations are imported (`pressurebench import`)."""
    _load_builtins()
    return next(name for name, cls in sorted(_APIS.items()) if cls.conversations_imported)


def api_for(spec: ModelSettings) -> ModelApi:
    """The provider of `spec`, for its rules (no key, nothing connected)."""
    return api_class(spec.provider)(spec)


def is_embedded(name: str) -> bool:
    """Whether the provider named `name` runs in-process (False for a name not registered, as
    recorded by an older run)."""
    _load_builtins()
    return name in _APIS and _APIS[name].embedded


def connect(model_id: str, spec: ModelSettings, api_key: str | None) -> ModelApi:
    """The provider that sends `model_id`'s calls (`ModelClient`'s default factory)."""
    return api_class(spec.provider)(spec, api_key)
