"""Provider batch APIs (OpenAI's Batch API, Anthropic's Message Batches, Gemini's Batch Mode)
behind the ordinary call.

A model with `batch: true` costs half, and answers within a day instead of
seconds. Its calls are collected for `batch_collect_s` (or until
`batch_max_requests` are waiting), submitted as one batch, polled every
`batch_poll_s`, and each call gets its own response or failure, which then go
through the client exactly as a direct reply would (validation, repair, the
cache). Above the client nothing changes: a stage that fires its calls
concurrently batches them by itself (simulate, every conversation's next turn).

Every submitted batch is recorded under `<cache dir>/batches/` before any
waiting: a run killed while it waits finds its batches on the next run and
polls them instead of submitting (and paying) again. A batch that ends expired
or cancelled leaves some requests unanswered: only those are submitted again.
A request that failed inside a batch is an ordinary failed call (an error row,
asked again on the next run). The record is removed once its batch's results
are in. (A kill in the moment between the provider creating a batch and its
record being written would still submit that batch again.)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..io import atomic_write
from .types import ProviderRequest, ProviderResponse, RetryableError


@dataclass(frozen=True)
class BatchSettings:
    max_requests: int = 5000
    collect_s: float = 5.0
    poll_s: float = 30.0
    max_wait_s: float = 86400.0
    # Request bodies per batch, in bytes: within OpenAI's 200 MB input files and Anthropic's
    # 256 MB batches, with room for the envelope of each line.
    max_bytes: int = 100 * 1024 * 1024


class Batcher:
    """One model's calls, collected into batches; one instance per model and client."""

    def __init__(self, provider, model_id: str, folder: Path, settings: BatchSettings):
        self.provider, self.model_id, self.settings = provider, model_id, settings
        self.folder = folder
        self._waiting: dict[str, asyncio.Future] = {}
        self._requests: dict[str, ProviderRequest] = {}
        self._queue: list[str] = []
        self._flusher: asyncio.Task | None = None
        # Submissions of full batches, held until they end: the event loop keeps only a weak
        # reference to a task, which could otherwise be collected before it is done.
        self._submitting: set[asyncio.Task] = set()
        self._pollers: dict[str, asyncio.Task] = {}
        self._recorded: dict[str, str] = {}  # key -> id of a batch an earlier run submitted
        for path in sorted(folder.glob("*.json")):
            record = json.loads(path.read_text(encoding="utf-8"))
            self._recorded.update(dict.fromkeys(record["keys"], record["batch_id"]))

    @staticmethod
    def folder_for(cache_dir: str | Path, describe: str) -> Path:
        """Where one model's batch records live: named by what the provider serves."""
        return Path(cache_dir) / "batches" / hashlib.sha256(describe.encode()).hexdigest()[:16]

    async def call(self, key: str, request: ProviderRequest) -> ProviderResponse:
        """The response to `request` (cache key `key`), by way of a batch; failures raise."""
        future = self._waiting.get(key)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self._waiting[key] = future
            self._requests[key] = request
            if key in self._recorded:
                self._poll(self._recorded.pop(key))
            else:
                self._enqueue(key)
        return await asyncio.shield(future)

    async def aclose(self) -> None:
        for task in [self._flusher, *self._pollers.values()]:
            if task is not None and not task.done():
                task.cancel()

    # --- collecting and submitting -----------------------------------------------------

    def _enqueue(self, key: str) -> None:
        self._queue.append(key)
        if len(self._queue) >= self.settings.max_requests:
            task = asyncio.get_running_loop().create_task(self._submit(self._take()))
            self._submitting.add(task)
            task.add_done_callback(self._submitting.discard)
        elif self._flusher is None or self._flusher.done():
            self._flusher = asyncio.get_running_loop().create_task(self._flush_later())

    def _take(self) -> list[str]:
        """The next batch's requests: at most `max_requests` of them and `max_bytes` of bodies."""
        keys: list[str] = []
        size = 0
        limit = min(self.settings.max_bytes, self.provider.batch_max_bytes or self.settings.max_bytes)
        for key in self._queue[: self.settings.max_requests]:
            body = len(json.dumps(self.provider.body(self._requests[key]), ensure_ascii=False))
            if keys and size + body > limit:
                break
            keys.append(key)
            size += body
        self._queue = self._queue[len(keys):]
        return keys

    async def _flush_later(self) -> None:
        await asyncio.sleep(self.settings.collect_s)
        while self._queue:
            await self._submit(self._take())

    async def _submit(self, keys: list[str]) -> None:
        try:
            batch_id = await self.provider.batch_submit([(k, self._requests[k]) for k in keys])
        except Exception as exc:  # noqa: BLE001 - every waiting call gets the failure as its own
            self._fail(keys, exc)
            return
        self._record(batch_id, keys)
        self._say(batch_id, f"submitted ({len(keys)} requests)")
        self._poll(batch_id)

    def _record(self, batch_id: str, keys: list[str]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        record = {"batch_id": batch_id, "model_id": self.model_id, "submitted_at": time.time(), "keys": keys}
        with atomic_write(self._record_path(batch_id), durable=False) as fh:
            json.dump(record, fh)

    def _record_path(self, batch_id: str) -> Path:
        return self.folder / f"{batch_id}.json"

    # --- waiting and answering ---------------------------------------------------------

    def _poll(self, batch_id: str) -> None:
        if batch_id not in self._pollers:
            self._pollers[batch_id] = asyncio.get_running_loop().create_task(self._wait_for(batch_id))

    async def _wait_for(self, batch_id: str) -> None:
        deadline = time.monotonic() + self.settings.max_wait_s
        last = None
        while True:
            try:
                status, ended, batch = await self.provider.batch_poll(batch_id)
            except RetryableError:
                status, ended, batch = last, False, None
            except Exception as exc:  # noqa: BLE001 - a poll refused for good fails its calls
                self._fail([k for k in self._recorded_keys(batch_id) if k in self._waiting], exc)
                self._pollers.pop(batch_id, None)
                return
            if status != last:
                self._say(batch_id, status)
                last = status
            if ended:
                break
            if time.monotonic() > deadline:
                self._fail([k for k in self._recorded_keys(batch_id) if k in self._waiting], RetryableError(
                    f"{self.model_id}: batch {batch_id} had not ended after {self.settings.max_wait_s:g}s; "
                    "its record is kept, so the next run polls it again"))
                return
            await asyncio.sleep(self.settings.poll_s)
        record = self._record_path(batch_id)
        asked = {k: self._requests[k] for k in self._recorded_keys(batch_id) if k in self._waiting}
        try:
            results = await self.provider.batch_results(batch_id, batch, asked)
        except Exception as exc:  # noqa: BLE001
            self._fail(list(asked), exc)
            record.unlink(missing_ok=True)
            return
        for key in asked:
            if key in results:
                self._settle(key, results[key])
        missing = [k for k in asked if k not in results]
        record.unlink(missing_ok=True)
        self._pollers.pop(batch_id, None)
        if missing:  # expired or cancelled before they ran: only these go again
            self._say(batch_id, f"{status}; submitting the {len(missing)} unanswered requests again")
            for key in missing:
                self._enqueue(key)

    def _recorded_keys(self, batch_id: str) -> list[str]:
        """The requests a batch's record lists (none once the record is gone)."""
        path = self._record_path(batch_id)
        return json.loads(path.read_text(encoding="utf-8"))["keys"] if path.exists() else []

    def _settle(self, key: str, outcome: ProviderResponse | Exception) -> None:
        future = self._waiting.pop(key, None)
        self._requests.pop(key, None)
        if future is None or future.done():
            return
        if isinstance(outcome, Exception):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    def _fail(self, keys: list[str], exc: Exception) -> None:
        for key in keys:
            self._settle(key, exc)

    def _say(self, batch_id: str, status: str) -> None:
        print(f"batch {batch_id} ({self.model_id}): {status}", file=sys.stderr, flush=True)
