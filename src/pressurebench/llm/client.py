"""ModelClient: the only way any stage talks to a model.

One place owns retries, limits, structured output, caching and accounting, so
every stage gets the same guarantees: a failed call becomes an explicit error
result with a reason, never an answer that looks valid.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

from pydantic import BaseModel, ValidationError

from ..schemas import ConcurrencyReport, ModelUsage, PriceSource, RecordedUsage
from ..workspace import shared_cache_dir
from .batches import Batcher, BatchSettings
from .budget import structured_budget
from .cache import ResponseCache, cache_key
from .call_record import CallRecord
from .in_flight import CallClaims
from .interrupts import first_interrupt_stops, stopped_message, stopping_notice
from .limits import AdaptiveConcurrency, RateLimiter, TokenRateLimiter
from .providers.registry import ModelApi, api_for, connect
from .spending import SpendingLedger, call_cost_bound, call_token_bound
from .types import (
    ProviderRequest,
    ProviderResponse,
    ProviderStop,
    RejectedError,
    RequestsRefused,
    RetryableError,
    StageInterrupted,
)

if TYPE_CHECKING:  # the params describe the models; validating them asks this package's providers
    from .types import ClientSettings, ModelSettings

T = TypeVar("T")
ProviderFactory = Callable[[str, "ModelSettings", "str | None"], ModelApi]

REPAIR_INSTRUCTION = (
    "Your previous reply was not valid: {error}. Reply again with only a JSON object that "
    "matches the required schema."
)


@dataclass
class CallResult:
    """The outcome of one logical call (including any repair retries)."""

    model_id: str
    ok: bool
    text: str | None = None
    parsed: Any = None
    error: str | None = None
    finish_reason: str | None = None
    model_version: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_input_tokens: int = 0  # of input_tokens, read from the provider's prompt cache
    cache_write_tokens: int = 0  # of input_tokens, written to it
    cost_usd: float | None = 0.0  # what this run paid: nothing for a replayed reply
    latency_s: float = 0.0
    # What the call's replies cost and took when they were made, replayed or not (None / not
    # timed where a stored reply lacks them).
    recorded_cost_usd: float | None = 0.0
    recorded_latency_s: float | None = 0.0
    cached: bool = False
    truncated: bool = False
    attempts: int = 0
    provider_calls: int = 0


@dataclass
class _ModelState:
    spec: ModelSettings
    api: ModelApi  # the provider's rules: price, limits (no key, nothing connected)
    provider: ModelApi | None = None  # what sends the calls, made on the first one
    gate: AdaptiveConcurrency | None = None
    limiter: RateLimiter | None = None
    tokens: TokenRateLimiter | None = None
    usage: ModelUsage = field(default_factory=ModelUsage)
    recorded: RecordedUsage = field(default_factory=RecordedUsage)
    versions: set[str] = field(default_factory=set)
    batcher: Batcher | None = None
    rejections: tuple[str, int] = ("", 0)  # the last refusal's text, and how often in a row
    refused: str | None = None  # set once refusals repeat: every later call stops the stage


def add_cost(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def count_call(usage: ModelUsage, result: CallResult, cost_usd: float | None) -> None:
    """Add one call to `usage`: the call, whether it failed, its tokens and `cost_usd` (what the
    run paid for it, or what it cost when it was made)."""
    usage.calls += 1
    usage.failed_calls += int(not result.ok)
    usage.input_tokens += result.input_tokens
    usage.output_tokens += result.output_tokens
    usage.reasoning_tokens += result.reasoning_tokens
    usage.cached_input_tokens += result.cached_input_tokens
    usage.cache_write_tokens += result.cache_write_tokens
    usage.cost_usd = add_cost(usage.cost_usd, cost_usd)


@lru_cache(maxsize=256)
def schema_for(model: type[BaseModel]) -> dict:
    """Built once per class (it is rebuilt from the model's fields on every call otherwise).

    The dict is shared by every request with this schema: read it, never change it.
    """
    return model.model_json_schema()


class ModelClient:
    """Async client over the model registry. Use as `async with ModelClient(...) as client:`."""

    def __init__(
        self,
        models: Mapping[str, ModelSettings],
        cache_dir: str | Path,
        *,
        repair_retries: int = 2,
        max_retries: int = 5,
        backoff_base_s: float = 1.0,
        backoff_cap_s: float = 60.0,
        provider_factory: ProviderFactory | None = None,
        use_cache: bool = True,
        stop_after_rejections: int = 3,
        max_cost_usd: float | None = None,
        batch: BatchSettings | None = None,
        record: str | Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ):
        self._states = {mid: _ModelState(spec, api_for(spec)) for mid, spec in models.items()}
        self.cache = ResponseCache(cache_dir)
        self.claims = CallClaims(cache_dir)
        self.use_cache = use_cache
        # The stage's recorded calls (`llm.call_record`): read in front of the cache, rewritten
        # with the calls of this run by `write_record`.
        self.record = CallRecord(record) if record is not None and use_cache else None
        self.repair_retries = repair_retries
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self.stop_after_rejections = stop_after_rejections
        # Every paid call is kept in the spending record, with or without a cap, so a cap set
        # later in a study counts what was spent before it; a cap also bounds the calls in flight.
        self.spending = SpendingLedger(cache_dir, max_cost_usd)
        self._factory = provider_factory or connect
        self.cache_dir = Path(cache_dir)
        self.batch_settings = batch or BatchSettings()
        self._calls_in_flight: set[asyncio.Task] = set()
        # The calls whose request is with the provider now (not waiting for a gate or a batch).
        self._sending: set[asyncio.Task] = set()
        self._stopped: ProviderStop | None = None  # once set, no further call is sent
        # The clock the rate limits read and the sleep they and the retries' backoff wait
        # with (a test gives its own).
        self._clock, self._sleep = clock, sleep
        self._stop: asyncio.Event | None = None  # set on a stop: ends the waits between tries
        self._exits = contextlib.ExitStack()

    @classmethod
    def from_params(cls, params: ClientSettings, **kwargs) -> ModelClient:
        """The client of a stage; in a DVC experiment's temporary copy its cache directory is
        the workspace's (`workspace.shared_cache_dir`), so no call is paid for twice."""
        return cls(
            params.models,
            shared_cache_dir(params.run.cache_dir),
            repair_retries=params.run.repair_retries,
            max_retries=params.run.max_retries,
            backoff_base_s=params.run.backoff_base_s,
            stop_after_rejections=params.run.stop_after_rejections,
            max_cost_usd=params.run.max_cost_usd,
            batch=BatchSettings(
                max_requests=params.run.batch_max_requests, collect_s=params.run.batch_collect_s,
                poll_s=params.run.batch_poll_s, max_wait_s=params.run.batch_max_wait_s,
            ),
            **kwargs,
        )

    async def __aenter__(self) -> Self:
        self._stop = asyncio.Event()
        self._exits.enter_context(first_interrupt_stops(self._interrupt))
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        try:
            if isinstance(self._stopped, StageInterrupted):
                if exc_type is not asyncio.CancelledError:  # else a second Ctrl-C: stop now
                    await self._finish_calls_sent()
            elif self._stopped is not None:
                await self._finish_calls_in_flight()
        finally:
            self._exits.close()
            await self.aclose()
        if exc_type is None and isinstance(self._stopped, StageInterrupted):
            # Stopped while its last calls were in flight: still stopped, nothing written.
            raise StageInterrupted(str(self._stopped))

    def _interrupt(self) -> None:
        """The first Ctrl-C (`llm.interrupts`): no further call is sent, the calls already
        sent are let finish and reach the cache, and the stage ends with StageInterrupted."""
        if self._stopped is None:
            self._stopped = StageInterrupted(stopped_message(len(self._sending)))
            print("\n" + stopping_notice(len(self._sending)), file=sys.stderr, flush=True)
        if self._stop is not None:
            self._stop.set()

    async def _finish_calls_sent(self) -> None:
        """After a Ctrl-C, wait for the calls whose request the provider already has: each
        attempt is bounded by its model's timeout, and no call tries again once stopped."""
        pending = self._sending - {asyncio.current_task()}
        if pending:
            timeout = max(s.spec.timeout_s for s in self._states.values()) + 5.0
            await asyncio.wait(pending, timeout=timeout)

    async def _finish_calls_in_flight(self) -> None:
        """After a stop, let the calls already sent finish and reach the cache: they are paid
        for, and a re-run must not ask (and pay) again. Calls not yet sent stop at once."""
        pending = self._calls_in_flight - {asyncio.current_task()}
        if pending:
            timeout = max(s.spec.timeout_s for s in self._states.values()) * (self.max_retries + 1)
            await asyncio.wait(pending, timeout=timeout)

    async def aclose(self) -> None:
        for state in self._states.values():
            if state.batcher is not None:
                await state.batcher.aclose()
                state.batcher = None
            if state.provider is not None:
                await state.provider.aclose()
                state.provider = None

    # --- public API ---------------------------------------------------------

    def spec(self, model_id: str) -> ModelSettings:
        return self._states[model_id].spec

    def api(self, model_id: str) -> ModelApi:
        """The provider rules of `model_id`: its price, token limit and concurrency."""
        return self._states[model_id].api

    async def chat(
        self,
        model_id: str,
        messages: list[dict],
        *,
        schema: type[BaseModel] | None = None,
        sample: int = 0,
        max_tokens: int | None = None,
        allow_truncated: bool = False,
        cache_group: str | None = None,
        cache_marks: tuple[int, ...] | None = None,
    ) -> CallResult:
        """One logical call. Structured calls return a validated `schema` instance in `parsed`.

        Invalid structured output gets `repair_retries` more tries, each telling the
        model what was wrong; then the result is an error. Refused and empty replies
        are errors. A truncated reply is an error too, unless the caller accepts a
        cut-off *text* reply (`allow_truncated`): then it is ok and flagged
        `truncated`, so the caller can record it. A cut-off structured reply is
        always an error, so structured calls get at least the tokens their schema's
        longest valid answer needs (`llm.budget`). `cache_group` names the requests that
        share a prompt prefix with this one (`llm.prompt_cache.cache_group`): the provider
        keeps them on one prompt cache; `cache_marks` says which messages end a prefix that
        another request repeats (`llm.prompt_cache.cache_marks`), where a provider that caches
        at breakpoints marks them. Neither is part of the answer's cache key.
        """
        state = self._states[model_id]
        spec = state.spec
        result = CallResult(model_id=model_id, ok=False)
        convo = list(messages)
        if schema is not None:
            max_tokens = structured_budget(schema_for(schema), max_tokens or spec.max_tokens)
        started = time.perf_counter()
        for attempt in range(self.repair_retries + 1 if schema else 1):
            result.attempts = attempt + 1
            try:
                resp, cached = await self._complete(
                    model_id, state, convo, schema, sample, max_tokens, allow_truncated and not schema,
                    cache_group, cache_marks,
                )
            except (RetryableError, RejectedError) as exc:
                result.error = self._scrub(str(exc))
                break
            except ProviderStop as exc:
                self._stopped = self._stopped or exc
                if self._stop is not None:
                    self._stop.set()
                raise type(exc)(self._scrub(str(exc))) from None
            result.provider_calls += 0 if cached else 1
            result.cached = cached if attempt == 0 else (result.cached and cached)
            result.input_tokens += resp.input_tokens
            result.output_tokens += resp.output_tokens
            result.reasoning_tokens += resp.reasoning_tokens
            result.cached_input_tokens += resp.cached_input_tokens
            result.cache_write_tokens += resp.cache_write_tokens
            made_for = resp.cost_usd if resp.cost_usd is not None else state.api.cost_of(resp)
            result.cost_usd = add_cost(result.cost_usd, 0.0 if cached else made_for)
            result.recorded_cost_usd = add_cost(result.recorded_cost_usd, made_for)
            result.recorded_latency_s = add_cost(result.recorded_latency_s, resp.latency_s)
            result.model_version = resp.model_version
            result.finish_reason = resp.finish_reason
            result.text = resp.text
            result.truncated = resp.finish_reason == "length"
            problem = reply_problem(resp, max_tokens or spec.max_tokens, allow_truncated and not schema)
            if problem:
                result.error = f"{model_id}: {problem}"
                break
            if schema is None:
                result.ok = True
                break
            assert resp.text is not None, "reply_problem reports a reply without text"
            try:
                result.parsed = parse_structured(schema, resp.text)
                result.ok = True
                result.error = None
                break
            except (ValidationError, ValueError) as exc:
                detail = _short_validation_error(exc)
                result.error = (
                    f"{model_id}: invalid structured output after {attempt + 1} "
                    f"attempt{'s' if attempt else ''}: {detail}"
                )
                convo = convo + [
                    {"role": "assistant", "content": resp.text or ""},
                    {"role": "user", "content": REPAIR_INSTRUCTION.format(error=detail)},
                ]
        result.latency_s = time.perf_counter() - started
        self._account(state, result)
        return result

    def usage(self) -> dict[str, ModelUsage]:
        return {mid: s.usage.model_copy() for mid, s in self._states.items() if s.usage.calls}

    def recorded_usage(self) -> dict[str, RecordedUsage]:
        """Per model, what this run's calls cost and took when they were made (replays too)."""
        return {mid: s.recorded.model_copy() for mid, s in self._states.items() if s.recorded.calls}

    def price_sources(self) -> dict[str, PriceSource]:
        """Per model this run called, where its prices came from (`ModelApi.price_record`)."""
        return {mid: s.api.price_record() for mid, s in self._states.items() if s.usage.calls}

    def model_versions(self) -> dict[str, list[str]]:
        return {mid: sorted(s.versions) for mid, s in self._states.items() if s.versions}

    def cache_stats(self) -> dict[str, int]:
        """The cache's counts, with `hits` counting replays from the stage's record too (and
        `replayed_from_record` how many of them)."""
        replayed = self.record.replayed if self.record is not None else 0
        stats = self.cache.stats()
        return stats | {"hits": stats["hits"] + replayed, "replayed_from_record": replayed}

    def write_record(self) -> int:
        """Replace the stage's record with the calls this run used; return how many.

        Refused if the record would hold the value of any model's API key or extra header
        (they are no part of a request's material, so this guards a setting that puts one
        there, such as `extra_body`)."""
        if self.record is None:
            return 0
        secrets = {}
        for mid, state in self._states.items():
            env = state.spec.api_key_env
            if env and len(os.environ.get(env, "")) >= 8:
                secrets[f"${env}"] = os.environ[env]
            for name, value in (state.spec.extra_headers or {}).items():
                if len(value) >= 8:
                    secrets[f"models.{mid}.extra_headers.{name}"] = value
        return self.record.write(secrets)

    # --- internals ----------------------------------------------------------

    def _account(self, state: _ModelState, result: CallResult) -> None:
        u = state.usage
        assert u.cached_calls is not None and u.latency_s is not None, \
            "only imported usage leaves these null, never the client's own"
        count_call(u, result, result.cost_usd)
        u.cached_calls += int(result.cached)
        u.latency_s += result.latency_s
        r = state.recorded
        r.calls += 1
        r.cost_usd = add_cost(r.cost_usd, result.recorded_cost_usd)
        if result.recorded_latency_s is not None and result.finish_reason is not None:
            r.timed_calls += 1
            r.latency_s += result.recorded_latency_s
        if result.model_version:
            state.versions.add(result.model_version)

    def _request(self, provider: ModelApi, spec: ModelSettings, messages, schema, sample, max_tokens,
                 cache_group: str | None = None, cache_marks: tuple[int, ...] | None = None,
                 ) -> tuple[str, ProviderRequest, dict]:
        json_schema = schema_for(schema) if schema else None
        material = {
            "provider": spec.provider,
            "model": spec.model,
            "base_url": spec.base_url,
            "messages": messages,
            "temperature": spec.temperature,
            "top_p": spec.top_p,
            "max_tokens": max_tokens or spec.max_tokens,
            "seed": spec.seed,
            "schema": json_schema,
            "sample": sample,
            **provider.key_material(),
        }
        key = cache_key(material)
        request = ProviderRequest(
            messages=messages,
            temperature=spec.temperature,
            max_tokens=max_tokens or spec.max_tokens,
            top_p=spec.top_p,
            seed=provider.seed(key, sample),
            schema=json_schema,
            schema_name=schema.__name__ if schema else None,
            timeout_s=spec.timeout_s,
            cache_group=cache_group,
            cache_marks=cache_marks,
        )
        return key, request, material

    async def _complete(
        self, model_id, state, messages, schema, sample, max_tokens, allow_truncated, cache_group=None,
        cache_marks=None,
    ) -> tuple[ProviderResponse, bool]:
        """One reply, from the stage's record or else the cache when either holds a good one for
        this request (the record first: it is the study's versioned data, `llm.call_record`).

        Only replies that are answers are cached: a failed one (empty, cut off where a
        cut-off is not accepted, refused, filtered) is asked again on the next run, so a
        provider's passing glitch never becomes a stored result (`reply_problem`). Calls
        that failed for good (retries exhausted, refused) are not cached either. A call
        that misses is claimed across processes while it is asked (`llm.in_flight`).
        """
        provider = self._provider(model_id, state)
        key, request, material = self._request(provider, state.spec, messages, schema, sample, max_tokens,
                                               cache_group, cache_marks)
        limit = max_tokens or state.spec.max_tokens
        if self.use_cache:
            if self.record is not None:
                recorded = self._replayable(self.record.replay(key), limit, allow_truncated)
                if recorded is not None:
                    self.record.keep_replayed(key)
                    return recorded, True
            hit = self._replayable(self.cache.get(key), limit, allow_truncated)
            if hit is not None:
                self._keep(key, material, hit)
                return hit, True
        # The call runs as a task of its own, shielded: a stage that stops cancels its rows,
        # but a request already sent is paid for, so its reply still reaches the cache (and
        # the spending record) while the client waits for it (`_finish_calls_in_flight`).
        answer = asyncio.ensure_future(
            self._answer(model_id, state, key, request, material, limit, allow_truncated)
        )
        self._calls_in_flight.add(answer)
        answer.add_done_callback(_forget_call)
        answer.add_done_callback(self._calls_in_flight.discard)
        return await asyncio.shield(answer)

    async def _answer(self, model_id, state, key, request, material, limit, allow_truncated
                      ) -> tuple[ProviderResponse, bool]:
        """Ask the call under its claim (`llm.in_flight`), unless another process or task answered
        it while this one waited for the claim; cache a good reply."""
        if not self.use_cache:
            return await self._ask(model_id, state, key, request), False
        async with self.claims.claim(key):
            hit = self._replayable(self.cache.get(key, again=True), limit, allow_truncated)
            if hit is not None:
                self._keep(key, material, hit)
                return hit, True
            response = await self._ask(model_id, state, key, request)
            if reply_problem(response, limit, allow_truncated) is None:
                self.cache.put(key, material, response.__dict__)
                self._keep(key, material, response)
        return response, False

    def _keep(self, key: str, material: dict, response: ProviderResponse) -> None:
        """Note a call this run used in the stage's record (when the client keeps one)."""
        if self.record is not None:
            self.record.keep(key, material, response.__dict__)

    @staticmethod
    def _replayable(hit: dict | None, limit: int, allow_truncated: bool) -> ProviderResponse | None:
        cached = ProviderResponse(**hit) if hit is not None else None
        if cached is not None and reply_problem(cached, limit, allow_truncated) is None:
            return cached
        return None

    async def _ask(self, model_id, state, key, request) -> ProviderResponse:
        """The provider's reply to `request`, directly or in a batch, carrying what it cost and
        how long it took (retries and batch waits included), which the cache and the stage's
        record keep with it."""
        started = time.perf_counter()
        if state.spec.batch:
            response = await self._call_in_batch(model_id, state, key, request)
        else:
            response = await self._call_with_retries(model_id, state, request)
        cost = state.api.cost_of(response)
        response.cost_usd = None if cost is None else float(cost)
        response.latency_s = time.perf_counter() - started
        return response

    def _scrub(self, text: str) -> str:
        """Error text with every API key of the registry replaced by its variable's name.

        Error reasons go into artifacts, reports and terminals. Whatever a
        transport or SDK quotes about a failed request (its headers, say) must
        not carry a key there. (Values under 8 characters are no real key, and
        replacing them would garble the text.)
        """
        for state in self._states.values():
            env = state.spec.api_key_env
            secret = os.environ.get(env) if env else None
            if secret and len(secret) >= 8:
                text = text.replace(secret, f"${env}")
        return text

    def _provider(self, model_id: str, state: _ModelState) -> ModelApi:
        if state.provider is None:
            key_env = state.spec.api_key_env
            state.provider = self._factory(model_id, state.spec, os.environ.get(key_env) if key_env else None)
        return state.provider

    def _gates(self, state: _ModelState) -> tuple[AdaptiveConcurrency, RateLimiter | None,
                                                  TokenRateLimiter | None]:
        if state.gate is None:
            state.gate = AdaptiveConcurrency(state.api.concurrency)
            if state.spec.requests_per_minute:
                state.limiter = RateLimiter(state.spec.requests_per_minute, self._clock, self._sleep)
            if state.spec.tokens_per_minute:
                state.tokens = TokenRateLimiter(state.spec.tokens_per_minute, self._clock, self._sleep)
        return state.gate, state.limiter, state.tokens

    def concurrency_report(self) -> dict[str, ConcurrencyReport]:
        """How each API model's concurrency followed the provider's rate limits (AIMD); embedded
        models have none to follow."""
        return {
            mid: ConcurrencyReport(maximum=s.gate.maximum, lowest=s.gate.lowest, final=s.gate.limit,
                                   decreases=s.gate.decreases, rate_limited=s.gate.rate_limited)
            for mid, s in self._states.items() if s.gate is not None and not s.api.embedded
        }

    async def _call_with_retries(
        self, model_id: str, state: _ModelState, request: ProviderRequest
    ) -> ProviderResponse:
        provider = self._provider(model_id, state)
        gate, limiter, tokens = self._gates(state)
        last: RetryableError | None = None
        bound = self._cost_bound(state, request)
        estimate = call_token_bound(state.api, request.messages, request.max_tokens) if tokens else 0
        for attempt in range(self.max_retries + 1):
            epoch = await gate.acquire()
            try:
                self._raise_if_stopped(state)
                if limiter is not None:
                    await limiter.wait()
                if tokens is not None:
                    await tokens.take(estimate)
                if self.spending.capped:
                    self.spending.reserve(bound)
                response = None
                sending = asyncio.current_task()
                assert sending is not None, "a call is always sent from a task"
                self._sending.add(sending)
                try:
                    response = await provider.complete(request)
                except RetryableError as exc:
                    last = exc
                    if exc.rate_limited:
                        gate.rate_limited_at(epoch)
                except RejectedError as exc:
                    self._count_rejection(model_id, state, str(exc))
                    raise
                else:
                    gate.answered()
                    state.rejections = ("", 0)
                    return response
                finally:
                    self._sending.discard(sending)
                    used = response.input_tokens + response.output_tokens if response else 0
                    if tokens is not None:
                        tokens.settle(estimate, used)
                    self._settle_spending(state, bound, response)
            finally:
                await gate.release()
            if attempt < self.max_retries:
                await self._pause(self._backoff(attempt, last.retry_after))
        assert last is not None, "every attempt returned, raised or failed with a retryable error"
        raise RetryableError(f"{last.reason} (gave up after {self.max_retries + 1} attempts)")

    async def _call_in_batch(
        self, model_id: str, state: _ModelState, key: str, request: ProviderRequest
    ) -> ProviderResponse:
        """The call by way of the provider's batch API (`llm.batches`), under the same stops."""
        self._raise_if_stopped(state)
        if state.batcher is None:
            provider = self._provider(model_id, state)
            folder = Batcher.folder_for(self.cache_dir, provider.describe())
            state.batcher = Batcher(provider, model_id, folder, self.batch_settings)
        bound = self._cost_bound(state, request)
        if self.spending.capped:
            self.spending.reserve(bound)
        response = None
        try:
            response = await state.batcher.call(key, request)
        except RejectedError as exc:
            self._count_rejection(model_id, state, str(exc))
            raise
        finally:
            self._settle_spending(state, bound, response)
        state.rejections = ("", 0)
        return response

    def _cost_bound(self, state: _ModelState, request: ProviderRequest) -> float:
        """What a call may cost at most, where a cap needs it (0 without a cap)."""
        if not self.spending.capped:
            return 0.0
        return call_cost_bound(state.api, request.messages, request.max_tokens)

    def _settle_spending(self, state: _ModelState, bound: float, response: ProviderResponse | None) -> None:
        """Release a call's reserved bound and record what it cost (nothing if it got no reply).

        Without a cap only a paid call touches the record: a free model's calls (the embedded
        one) cost no file write."""
        cost = state.api.cost_of(response) if response is not None else None
        if self.spending.capped or cost:
            self.spending.settle(bound, cost)

    async def _pause(self, seconds: float) -> None:
        """Wait before another try (with the client's sleep), or less once the stage stops
        (then the try is not made)."""
        if self._stop is None:
            await self._sleep(seconds)
            return
        waits = {asyncio.ensure_future(self._sleep(seconds)), asyncio.ensure_future(self._stop.wait())}
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    def _raise_if_stopped(self, state: _ModelState) -> None:
        """No call is sent once the stage stops, or once this model's requests are refused."""
        if self._stopped is not None:
            raise type(self._stopped)(str(self._stopped))
        if state.refused is not None:
            raise RequestsRefused(state.refused)

    def _count_rejection(self, model_id: str, state: _ModelState, reason: str) -> None:
        """Stop the stage once the provider refuses the same way `stop_after_rejections` times in
        a row: a parameter the model does not take fails every call, and the remaining calls
        would only write the same error row again and again."""
        last, count = state.rejections
        count = count + 1 if reason == last else 1
        state.rejections = (reason, count)
        if count >= self.stop_after_rejections and state.refused is None:
            state.refused = (
                f"{reason} (refused {count} times in a row; stopped before the remaining calls. "
                f"Fix the request settings of model '{model_id}' in the params and run again)"
            )

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with full jitter; a provider's retry-after is a floor."""
        delay = random.uniform(0, min(self.backoff_cap_s, self.backoff_base_s * 2**attempt))
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.backoff_cap_s * 5))
        return delay


def _forget_call(task: asyncio.Task) -> None:
    """A shielded call's outcome is read by its caller, unless the caller was cancelled: then
    it is read here, so asyncio does not log it as never retrieved."""
    if not task.cancelled():
        task.exception()


def parse_structured(schema: type[BaseModel], text: str) -> BaseModel:
    """Parse JSON, tolerating raw control characters inside strings, then validate strictly.

    Grammar-constrained local decoding can emit a literal newline inside a JSON
    string; the content is still what the model meant, so only that leniency is
    granted. Types are not coerced: StrictBool fields still reject "false".
    """
    return schema.model_validate(json.loads(text, strict=False))


def reply_problem(resp: ProviderResponse, max_tokens: int, allow_truncated: bool) -> str | None:
    """Why a reply is no answer, or None. A reasoning model that spent its whole limit on
    hidden reasoning returns no text at all: said so, since the fix is more room to reason."""
    if resp.finish_reason == "length" and resp.reasoning_tokens and not (resp.text or "").strip():
        return (
            f"no answer: hidden reasoning used the whole token limit ({resp.reasoning_tokens} "
            "reasoning tokens); raise the model's reasoning_tokens or lower its reasoning_effort"
        )
    if resp.finish_reason == "length" and not allow_truncated:
        return f"truncated reply: hit max_tokens={max_tokens}"
    if resp.finish_reason == "refusal":
        return "the provider refused to answer" + (f": {resp.refusal}" if resp.refusal else "")
    if resp.finish_reason == "content_filter":
        return "the reply was stopped by the provider's content filter"
    if not resp.text or not resp.text.strip():
        return "empty reply"
    return None


def _short_validation_error(exc: Exception) -> str:
    if not isinstance(exc, ValidationError):
        return f"not valid JSON: {exc}"[:300]
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ())) or "<root>"
    return f"{loc}: {err.get('msg')}"[:300]


def run_sync(coro_factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine from sync code, also inside Jupyter where a loop is already running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_factory())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(coro_factory())).result()

