"""The providers' batch APIs on the mock server: OpenAI's Batch API and Anthropic's Message Batches.

OpenAI (API reference, "Batch"): a JSONL file uploaded with purpose `batch`
(`POST /v1/files`), one line per request `{"custom_id", "method": "POST",
"url", "body"}` with unique custom_ids and the batch's endpoint as url; a batch
created on it (`POST /v1/batches`, `completion_window` "24h"); retrieved until
its status is `completed`, `failed`, `expired` or `cancelled`
(`GET /v1/batches/{id}`); results as JSONL (`GET /v1/files/{id}/content`) in an
output file (`{"custom_id", "response": {"status_code", "body"}, "error"}`)
and an error file (requests that failed or expired, code `batch_expired`).

Anthropic (API reference, "Message Batches"): `POST /v1/messages/batches` with
`requests: [{"custom_id", "params"}]`, custom_ids matching `^[a-zA-Z0-9_-]{1,64}$`
and unique; retrieved until `processing_status` is `ended`
(`GET /v1/messages/batches/{id}`); results as JSONL from its `results_url`
(`{"custom_id", "result": {"type": "succeeded"|"errored"|"canceled"|"expired", ...}}`).

Each request in a batch is answered as the server answers it directly (the
same rules, responder and fault plan), and counted. A batch ends after
`MockLLMServer.batch_polls` retrievals; `MockLLMServer.batch_expire = n` ends
the next n batches expired, with only the first half of their requests answered.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from .mock_llm_server import MockLLMServer

OPENAI_ENDPOINTS = {"/v1/chat/completions", "/v1/responses", "/v1/embeddings", "/v1/completions"}
ANTHROPIC_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass
class MockBatch:
    id: str
    provider: str
    items: list[tuple[str, dict]]
    created_at: int
    polls: int = 0
    ended: bool = False
    expired: bool = False
    answers: dict[str, tuple[int, dict]] = field(default_factory=dict)


class BatchDesk:
    """The batch endpoints of one `MockLLMServer`, its files and batches."""

    def __init__(self, server: MockLLMServer):
        self.server = server
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, MockBatch] = {}
        self.created: Counter[str] = Counter()  # batches created, by provider

    def routes(self, app: web.Application, tracked) -> None:
        app.router.add_post("/v1/files", tracked(self._upload))
        app.router.add_get("/v1/files/{id}/content", tracked(self._file_content))
        app.router.add_post("/v1/batches", tracked(self._openai_create))
        app.router.add_get("/v1/batches/{id}", tracked(self._openai_retrieve))
        app.router.add_post("/v1/messages/batches", tracked(self._anthropic_create))
        app.router.add_get("/v1/messages/batches/{id}", tracked(self._anthropic_retrieve))
        app.router.add_get("/v1/messages/batches/{id}/results", tracked(self._anthropic_results))

    # -- shared --------------------------------------------------------------------

    def _refuse(self, provider: str, status: int, message: str, entry) -> web.Response:
        entry.outcome = "bad_request" if status == 400 else "not_found"
        return self.server._error(provider, status, message, "req_batch")

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{len(self.files) + len(self.batches) + 1:06d}{int(time.time() * 1000) % 10**6:06d}"

    async def _advance(self, batch: MockBatch) -> None:
        """One retrieval: the batch ends (answered, or expired half-way) after enough of them."""
        batch.polls += 1
        if batch.ended or batch.polls < self.server.batch_polls:
            return
        expire = self.server.batch_expire > 0
        self.server.batch_expire -= expire
        answered = batch.items[: len(batch.items) // 2] if expire else batch.items
        for custom_id, body in answered:
            batch.answers[custom_id] = await self.server.answer_item(batch.provider, body)
        batch.ended, batch.expired = True, expire

    # -- OpenAI ----------------------------------------------------------------------

    async def _upload(self, request: web.Request, entry) -> web.Response:
        entry.provider = "openai"
        if not self.server._authorized(request):
            return self.server._error("openai", 401, "Incorrect API key provided.", "req_files")
        form = await request.post()
        upload = form.get("file")
        if form.get("purpose") != "batch" or upload is None or not hasattr(upload, "file"):
            return self._refuse("openai", 400, "purpose: must be 'batch' with a file", entry)
        content = upload.file.read()
        file_id = self._new_id("file-")
        self.files[file_id] = content
        return web.json_response({
            "id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
            "filename": upload.filename, "purpose": "batch",
        })

    async def _file_content(self, request: web.Request, entry) -> web.Response:
        entry.provider = "openai"
        file_id = request.match_info["id"]
        if file_id not in self.files:
            return self._refuse("openai", 404, f"No such File object: {file_id}", entry)
        return web.Response(body=self.files[file_id], content_type="application/jsonl")

    async def _openai_create(self, request: web.Request, entry) -> web.Response:
        entry.provider = "openai"
        if not self.server._authorized(request):
            return self.server._error("openai", 401, "Incorrect API key provided.", "req_batches")
        body = await request.json()
        endpoint = body.get("endpoint")
        if endpoint not in OPENAI_ENDPOINTS:
            return self._refuse("openai", 400, f"endpoint: unsupported value {endpoint!r}", entry)
        if body.get("completion_window") != "24h":
            return self._refuse("openai", 400, "completion_window: must be '24h'", entry)
        content = self.files.get(body.get("input_file_id"))
        if content is None:
            return self._refuse("openai", 400, "input_file_id: no such file", entry)
        items, seen = [], set()
        for n, line in enumerate(content.decode().splitlines(), 1):
            row = json.loads(line)
            if row.get("method") != "POST" or row.get("url") != endpoint:
                return self._refuse("openai", 400, f"line {n}: method must be POST and url {endpoint}", entry)
            if row.get("custom_id") in seen:
                return self._refuse("openai", 400, f"line {n}: duplicate custom_id", entry)
            seen.add(row["custom_id"])
            items.append((row["custom_id"], row["body"]))
        batch = MockBatch(self._new_id("batch_"), "openai", items, int(time.time()))
        self.batches[batch.id] = batch
        self.created["openai"] += 1
        return web.json_response(self._openai_object(batch, body))

    async def _openai_retrieve(self, request: web.Request, entry) -> web.Response:
        if "x-goog-api-key" in request.headers:  # Gemini's `GET /v1/batches/<id>` (`gemini_wire`)
            return await self.server.gemini.get_batch(request, entry)
        entry.provider = "openai"
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.provider != "openai":
            return self._refuse("openai", 404, "No such Batch object", entry)
        await self._advance(batch)
        return web.json_response(self._openai_object(batch, {}))

    def _openai_object(self, batch: MockBatch, create: dict) -> dict[str, Any]:
        status, output_id, error_id = "in_progress", None, None
        failed = sum(s != 200 for s, _ in batch.answers.values())
        if batch.ended:
            status = "expired" if batch.expired else "completed"
            out = [{"id": f"req_{cid}", "custom_id": cid, "response": {"status_code": s, "body": b},
                    "error": None} for cid, (s, b) in batch.answers.items() if s == 200]
            err = [{"id": f"req_{cid}", "custom_id": cid, "response": {"status_code": s, "body": b},
                    "error": None} for cid, (s, b) in batch.answers.items() if s != 200]
            err += [{"id": f"req_{cid}", "custom_id": cid, "response": None,
                     "error": {"code": "batch_expired", "message": "This request could not be executed "
                               "before the completion window expired."}}
                    for cid, _ in batch.items if cid not in batch.answers]
            output_id = self._store(out)
            error_id = self._store(err)
        return {
            "id": batch.id, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
            "input_file_id": create.get("input_file_id"), "completion_window": "24h", "status": status,
            "output_file_id": output_id, "error_file_id": error_id, "created_at": batch.created_at,
            "request_counts": {"total": len(batch.items), "completed": len(batch.answers) - failed,
                               "failed": failed + (len(batch.items) - len(batch.answers) if batch.ended else 0)},
            "metadata": create.get("metadata"),
        }

    def _store(self, rows: list[dict]) -> str | None:
        if not rows:
            return None
        file_id = self._new_id("file-")
        self.files[file_id] = "".join(json.dumps(r) + "\n" for r in rows).encode()
        return file_id

    # -- Anthropic ---------------------------------------------------------------------

    async def _anthropic_create(self, request: web.Request, entry) -> web.Response:
        entry.provider = "anthropic"
        if not self.server._authorized(request):
            return self.server._error("anthropic", 401, "invalid x-api-key", "req_batches")
        body = await request.json()
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return self._refuse("anthropic", 400, "requests: Field required", entry)
        items, seen = [], set()
        for i, row in enumerate(requests):
            cid = row.get("custom_id", "")
            if not ANTHROPIC_CUSTOM_ID.match(cid):
                return self._refuse("anthropic", 400, f"requests.{i}.custom_id: String should match "
                                    "pattern '^[a-zA-Z0-9_-]{1,64}$'", entry)
            if cid in seen:
                return self._refuse("anthropic", 400, f"requests.{i}.custom_id: duplicate", entry)
            seen.add(cid)
            items.append((cid, row.get("params") or {}))
        batch = MockBatch(self._new_id("msgbatch_"), "anthropic", items, int(time.time()))
        self.batches[batch.id] = batch
        self.created["anthropic"] += 1
        return web.json_response(self._anthropic_object(batch))

    async def _anthropic_retrieve(self, request: web.Request, entry) -> web.Response:
        entry.provider = "anthropic"
        batch = self.batches.get(request.match_info["id"])
        if batch is None or batch.provider != "anthropic":
            return self._refuse("anthropic", 404, "batch not found", entry)
        await self._advance(batch)
        return web.json_response(self._anthropic_object(batch))

    def _anthropic_object(self, batch: MockBatch) -> dict[str, Any]:
        counts = Counter()
        for status, _ in batch.answers.values():
            counts["succeeded" if status == 200 else "errored"] += 1
        if batch.ended:
            counts["expired"] = len(batch.items) - len(batch.answers)
        else:
            counts["processing"] = len(batch.items)
        return {
            "id": batch.id, "type": "message_batch",
            "processing_status": "ended" if batch.ended else "in_progress",
            "request_counts": {k: counts.get(k, 0) for k in
                               ("processing", "succeeded", "errored", "canceled", "expired")},
            "created_at": batch.created_at,
            "results_url": (f"{self.server.base_url}/v1/messages/batches/{batch.id}/results"
                            if batch.ended else None),
        }

    async def _anthropic_results(self, request: web.Request, entry) -> web.Response:
        entry.provider = "anthropic"
        batch = self.batches.get(request.match_info["id"])
        if batch is None or not batch.ended:
            return self._refuse("anthropic", 404, "results are not available", entry)
        lines = []
        for cid, _ in batch.items:
            if cid not in batch.answers:
                result: dict = {"type": "expired"}
            else:
                status, payload = batch.answers[cid]
                result = ({"type": "succeeded", "message": payload} if status == 200
                          else {"type": "errored", "error": payload})
            lines.append(json.dumps({"custom_id": cid, "result": result}) + "\n")
        return web.Response(text="".join(lines), content_type="application/binary")
