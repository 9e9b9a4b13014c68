"""A local HTTP server that speaks the OpenAI and Anthropic wire formats, for offline tests.

Provider integrations are tested with the official SDKs pointed at this server,
so the code under test parses real envelopes, real error bodies and real
status codes rather than hand-made fakes. Replies come from a pluggable
responder (by default: deterministic text, or a valid instance of the
requested JSON schema), faults are injected by a seeded plan that a retry can
recover from, and every request is counted so a test can assert what the
client actually sent.

Run in-process with `MockLLMServer().start()` (a background thread with its own
event loop), or out-of-process for performance measurements:

    python -m pressurebench.testing.mock_llm_server --port 0 --latency 1.0 --print-port
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import inspect
import json
import logging
import math
import re
import signal
import threading
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self

from aiohttp import web

from pressurebench.testing.faults import OK, Fault, FaultPlan
from pressurebench.testing.schema_instances import schema_instance

__all__ = [
    "LoggedRequest",
    "MockLLMServer",
    "MockRequest",
    "Reply",
    "Responder",
    "default_responder",
    "main",
]

log = logging.getLogger(__name__)

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
MODELS_PATH = "/v1/models"

Reply = str | dict[str, Any]
"""A str is sent as plain text; a dict as JSON content, or as a forced tool's input."""


@dataclass(frozen=True)
class MockRequest:
    """What a responder needs to know about one completion request, provider-neutral."""

    provider: str
    """"openai" or "anthropic"."""
    path: str
    model: str
    messages: list[dict[str, str]]
    """`{"role", "content"}` with content flattened to text; Anthropic's `system` comes first."""
    system: str | None
    """The system prompt (Anthropic `system`, OpenAI system/developer messages), if any."""
    schema: dict[str, Any] | None
    """The JSON schema the reply must satisfy: OpenAI `response_format` (json_object mode
    gives `{"type": "object"}`), Anthropic forced tool `input_schema` or
    `output_config.format`; None for plain text."""
    schema_name: str | None
    """The json_schema name or the forced tool's name."""
    tool_name: str | None
    """Set when an Anthropic request forces a tool: the reply becomes a tool_use block."""
    temperature: float | None
    seed: int | None
    max_tokens: int | None
    """`max_completion_tokens` or `max_tokens`, whichever the request set."""
    raw: dict[str, Any]
    """The request body as sent."""
    body_hash: str
    """sha256 over path and canonical body: equal for byte-different but equal requests."""
    attempt: int
    """1 for the first arrival of this body hash, 2 for the next, and so on."""


Responder = Callable[[MockRequest], Reply | Awaitable[Reply]]


@dataclass
class LoggedRequest:
    """One HTTP request as the server saw it, in arrival order."""

    seq: int
    method: str
    path: str
    provider: str | None = None
    model: str | None = None
    body_hash: str | None = None
    attempt: int | None = None
    outcome: str = OK
    """"ok", a `Fault` value, or "unauthorized", "bad_request", "responder_error",
    "not_found"."""
    status: int | None = None
    """The HTTP status sent; None while in flight or if the client hung up first."""
    body: dict[str, Any] | None = None


# -- default replies ---------------------------------------------------------

_SUBJECTS = (
    "That plan",
    "Your idea",
    "The proposal",
    "This approach",
    "The timeline",
    "Your budget",
    "The draft",
    "That decision",
    "The argument",
    "This option",
    "The schedule",
    "Your reasoning",
)
_PREDICATES = (
    "sounds workable",
    "needs a closer look",
    "has a weak spot",
    "could work with changes",
    "is worth testing first",
    "leaves some risk open",
    "depends on a few assumptions",
    "is not settled yet",
    "seems sensible overall",
    "deserves a second opinion",
    "hinges on the numbers",
    "would benefit from evidence",
)
_TAILS = (
    ".",
    ", in my view.",
    ", so let us check the details.",
    " before you commit.",
    ", though I would be careful.",
    " if the facts hold.",
)


def default_responder(req: MockRequest) -> Reply:
    """A schema instance for structured requests, else one to three short sentences.

    Both are derived from the request hash, so equal requests get equal replies
    and different requests (another prompt, seed or temperature) usually differ.
    """
    if req.schema is not None:
        return schema_instance(req.schema, req.body_hash)
    digest = hashlib.sha256(req.body_hash.encode()).digest()
    sentences = []
    for i in range(1 + digest[0] % 3):
        a, b, c = digest[1 + 3 * i : 4 + 3 * i]
        sentences.append(
            f"{_SUBJECTS[a % len(_SUBJECTS)]} {_PREDICATES[b % len(_PREDICATES)]}"
            f"{_TAILS[c % len(_TAILS)]}"
        )
    return " ".join(sentences)


# -- request parsing -----------------------------------------------------------


class _BadRequest(Exception):
    """The request body is not one the real provider would accept."""


def _text(content: Any) -> str:
    """Flatten message content (a string or a list of typed parts/blocks) to text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if not isinstance(part, Mapping):
            continue
        if "text" in part:
            parts.append(str(part["text"]))
        elif part.get("type") == "tool_use":
            parts.append(json.dumps(part.get("input", {}), sort_keys=True))
        elif part.get("type") == "tool_result":
            parts.append(_text(part.get("content")))
    return "\n".join(parts)


def _require(body: Mapping[str, Any], *names: str) -> None:
    for name in names:
        if name not in body:
            raise _BadRequest(f"{name}: Field required")
    messages = body["messages"]
    if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
        raise _BadRequest("messages: Input should be a valid list of message objects")
    if body.get("stream"):
        raise _BadRequest("stream: streaming is not supported by this server")


def _parse_openai(body: dict[str, Any], body_hash: str, attempt: int) -> MockRequest:
    _require(body, "model", "messages")
    messages = [
        {"role": str(m.get("role")), "content": _text(m.get("content"))} for m in body["messages"]
    ]
    system = [m["content"] for m in messages if m["role"] in ("system", "developer")]
    schema = schema_name = None
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema") or {}
        schema, schema_name = spec.get("schema", {}), spec.get("name")
    elif response_format.get("type") == "json_object":
        schema = {"type": "object"}
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    return MockRequest(
        provider="openai",
        path=OPENAI_PATH,
        model=str(body["model"]),
        messages=messages,
        system="\n\n".join(system) or None,
        schema=schema,
        schema_name=schema_name,
        tool_name=None,
        temperature=body.get("temperature"),
        seed=body.get("seed"),
        max_tokens=max_tokens,
        raw=body,
        body_hash=body_hash,
        attempt=attempt,
    )


def _parse_anthropic(body: dict[str, Any], body_hash: str, attempt: int) -> MockRequest:
    _require(body, "model", "messages", "max_tokens")
    system = _text(body.get("system")) or None
    messages = [
        {"role": str(m.get("role")), "content": _text(m.get("content"))} for m in body["messages"]
    ]
    if system:
        messages.insert(0, {"role": "system", "content": system})
    schema = tool_name = None
    tools = [t for t in body.get("tools") or [] if isinstance(t, Mapping)]
    choice = body.get("tool_choice") or {}
    if choice.get("type") == "tool":
        matching = [t for t in tools if t.get("name") == choice.get("name")]
        if not matching:
            raise _BadRequest(f"tool_choice: tool {choice.get('name')!r} is not in tools")
        tool_name = choice["name"]
        schema = matching[0].get("input_schema", {})
    elif choice.get("type") == "any" and tools:
        tool_name = tools[0].get("name")
        schema = tools[0].get("input_schema", {})
    else:
        output_format = (body.get("output_config") or {}).get("format") or {}
        if output_format.get("type") == "json_schema":
            schema = output_format.get("schema", {})
    return MockRequest(
        provider="anthropic",
        path=ANTHROPIC_PATH,
        model=str(body["model"]),
        messages=messages,
        system=system,
        schema=schema,
        schema_name=tool_name,
        tool_name=tool_name,
        temperature=body.get("temperature"),
        seed=None,
        max_tokens=body.get("max_tokens"),
        raw=body,
        body_hash=body_hash,
        attempt=attempt,
    )


def _body_hash(path: str, body: Any) -> str:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(f"{path}\n{canonical}".encode()).hexdigest()


# -- reply shaping -------------------------------------------------------------

_UNAUTHORIZED = {
    "openai": "Incorrect API key provided. You can find your API key in your account settings.",
    "anthropic": "invalid x-api-key",
}
_REFUSAL_TEXT = "I'm sorry, but I can't help with that request."
_DATED_MODEL = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")
_VERSION_SUFFIX = {"openai": "-2024-08-06", "anthropic": "-20250929"}


def _tokens(text: str) -> int:
    """A stable stand-in for a tokenizer: about four characters per token."""
    return math.ceil(len(text) / 4)


def _as_text(reply: Any) -> str:
    return reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)


def _violate(value: Any) -> Any:
    """A JSON value of the same shape as `value` whose every field has the wrong type."""
    if isinstance(value, dict) and value:
        return {
            k: "unexpected" if isinstance(v, (dict, list)) else {"unexpected": v}
            for k, v in value.items()
        }
    if isinstance(value, dict):
        return ["unexpected"]
    return {"unexpected": value}


def _break_text(reply: Any, body_hash: str) -> str:
    """Structured content that fails the client: prose around the JSON, or JSON off-schema."""
    text = _as_text(reply)
    try:
        value = json.loads(text)
    except ValueError:
        return text
    if int(body_hash[-1], 16) % 2:
        return f"Sure, here is the JSON you asked for: {text}"
    return json.dumps(_violate(value), ensure_ascii=False)


def _error_body(provider: str, status: int, message: str, request_id: str) -> dict[str, Any]:
    if provider == "anthropic":
        kind = {
            400: "invalid_request_error",
            401: "authentication_error",
            404: "not_found_error",
            429: "rate_limit_error",
            500: "api_error",
        }[status]
        return {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": request_id,
        }
    kind, code = {
        400: ("invalid_request_error", None),
        401: ("invalid_request_error", "invalid_api_key"),
        404: ("invalid_request_error", None),
        429: ("requests", "rate_limit_exceeded"),
        500: ("server_error", None),
    }[status]
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


# -- accounting ----------------------------------------------------------------


class _Ledger:
    """Counters and the request log, shared between the server thread and test code."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.seq = 0
        self.paths: Counter[str] = Counter()
        self.faults: Counter[str] = Counter()
        self.hashes: Counter[str] = Counter()
        self.log: list[LoggedRequest] = []
        self.script: deque[str] = deque()
        self.in_flight = 0
        self.peak_in_flight = 0

    def begin(self, method: str, path: str) -> LoggedRequest:
        with self.lock:
            self.seq += 1
            self.paths[path] += 1
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            entry = LoggedRequest(seq=self.seq, method=method, path=path)
            self.log.append(entry)
            return entry

    def end(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def arrive(self, body_hash: str) -> int:
        with self.lock:
            self.hashes[body_hash] += 1
            return self.hashes[body_hash]

    def next_scripted(self) -> str | None:
        with self.lock:
            return self.script.popleft() if self.script else None

    def count_fault(self, outcome: str) -> None:
        if outcome != OK:
            with self.lock:
                self.faults[outcome] += 1


# -- the server ----------------------------------------------------------------


class MockLLMServer:
    """OpenAI chat completions and Anthropic messages on one local port.

    `responder`, `api_key`, `latency` and `fault_plan` are plain attributes read
    on every request, so a test may change them while the server runs.
    """

    def __init__(
        self,
        *,
        responder: Responder = default_responder,
        api_key: str | None = "test-key",
        latency: float = 0.0,
        fault_plan: FaultPlan | None = None,
        reported_models: Mapping[str, str] | None = None,
        models: Sequence[str] = ("gpt-4o-mini", "claude-haiku-4-5"),
        host: str = "127.0.0.1",
        port: int = 0,
        backlog: int = 4096,
    ):
        """
        api_key: the key every request must carry (`Authorization: Bearer` or
            `x-api-key`, on either API); None accepts any request.
        latency: seconds each completion takes before its reply (not 429/500).
        reported_models: request model -> model string echoed in replies; models
            not listed get a date suffix unless they already end in one, the way
            providers report the pinned version behind an alias.
        models: ids listed by `GET /v1/models`.
        """
        self.responder = responder
        self.api_key = api_key
        self.latency = latency
        self.fault_plan = fault_plan or FaultPlan()
        self.reported_models = dict(reported_models or {})
        self.models = tuple(models)
        self.host = host
        self.backlog = backlog
        self._requested_port = port
        self._port: int | None = None
        self._ledger = _Ledger()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> Self:
        """Serve from a background thread; returns once the port is bound."""
        if self._thread is not None:
            raise RuntimeError("MockLLMServer is already running")
        loop = asyncio.new_event_loop()
        try:
            # Bound here, so a taken port fails start() itself; the thread only serves.
            loop.run_until_complete(self._open())
        except BaseException:
            loop.close()
            raise

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.run_forever()
            loop.run_until_complete(self._close())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=serve, name="mock-llm-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; requests still in flight are dropped."""
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._thread = self._loop = None
        self._port = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def _open(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post(OPENAI_PATH, self._tracked(self._openai))
        app.router.add_post(ANTHROPIC_PATH, self._tracked(self._anthropic))
        app.router.add_get(MODELS_PATH, self._tracked(self._models))
        app.router.add_route("*", "/{tail:.*}", self._tracked(self._not_found))
        # Dropping a hung client must free its handler; stopping must not wait on hangs.
        self._runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=0.1
        )
        await self._runner.setup()
        site = web.TCPSite(
            self._runner, self.host, self._requested_port, backlog=self.backlog, reuse_address=True
        )
        await site.start()
        self._port = self._runner.addresses[0][1]

    async def _close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- addresses -------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("MockLLMServer is not running; call start() first")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """For `openai.OpenAI(base_url=...)`: the SDK appends `/chat/completions`."""
        return f"{self.base_url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        """For `anthropic.Anthropic(base_url=...)`: the SDK appends `/v1/messages`."""
        return self.base_url

    # -- accounting ------------------------------------------------------------

    def reset(self) -> None:
        """Forget counters, the log, attempt numbers and any scripted outcomes."""
        with self._ledger.lock:
            self._ledger.reset()

    def script(self, *outcomes: str | Fault) -> None:
        """Queue explicit outcomes ("ok" or a `Fault`) for the next completion calls.

        Each call takes the next queued outcome in arrival order, ahead of the
        fault plan; once the queue is empty the plan decides again.
        """
        checked = [OK if o == OK else Fault(o).value for o in outcomes]
        with self._ledger.lock:
            self._ledger.script.extend(checked)

    @property
    def total_requests(self) -> int:
        with self._ledger.lock:
            return self._ledger.seq

    @property
    def path_counts(self) -> dict[str, int]:
        with self._ledger.lock:
            return dict(self._ledger.paths)

    @property
    def fault_counts(self) -> dict[str, int]:
        """Faults actually served, by kind."""
        with self._ledger.lock:
            return dict(self._ledger.faults)

    @property
    def body_hash_counts(self) -> dict[str, int]:
        """How often each distinct completion body arrived: a value above 1 is a resend."""
        with self._ledger.lock:
            return dict(self._ledger.hashes)

    @property
    def request_log(self) -> list[LoggedRequest]:
        with self._ledger.lock:
            return list(self._ledger.log)

    @property
    def in_flight(self) -> int:
        with self._ledger.lock:
            return self._ledger.in_flight

    @property
    def peak_in_flight(self) -> int:
        """Most requests open at once since start or reset: checks a client's concurrency cap."""
        with self._ledger.lock:
            return self._ledger.peak_in_flight

    # -- handlers --------------------------------------------------------------

    def _tracked(
        self, handler: Callable[[web.Request, LoggedRequest], Awaitable[web.Response]]
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        """Wrap a handler so every request is counted and logged, whatever its outcome."""

        async def handle(request: web.Request) -> web.Response:
            entry = self._ledger.begin(request.method, request.path)
            try:
                response = await handler(request, entry)
            finally:
                self._ledger.end()
            entry.status = response.status
            return response

        return handle

    def _authorized(self, request: web.Request) -> bool:
        if self.api_key is None:
            return True
        bearer = request.headers.get("Authorization", "")
        return (
            request.headers.get("x-api-key") == self.api_key or bearer == f"Bearer {self.api_key}"
        )

    def _error(
        self,
        provider: str,
        status: int,
        message: str,
        request_id: str,
        headers: Mapping[str, str] | None = None,
    ) -> web.Response:
        return web.json_response(
            _error_body(provider, status, message, request_id),
            status=status,
            headers={_request_id_header(provider): request_id, **(headers or {})},
        )

    async def _not_found(self, request: web.Request, entry: LoggedRequest) -> web.Response:
        entry.provider = _provider_of(request)
        entry.outcome = "not_found"
        return self._error(
            entry.provider, 404, f"Invalid URL ({request.method} {request.path})", "req_none"
        )

    async def _models(self, request: web.Request, entry: LoggedRequest) -> web.Response:
        provider = entry.provider = _provider_of(request)
        if not self._authorized(request):
            entry.outcome = "unauthorized"
            return self._error(provider, 401, _UNAUTHORIZED[provider], "req_models")
        if provider == "anthropic":
            data = [
                {"type": "model", "id": m, "display_name": m, "created_at": "2025-09-29T00:00:00Z"}
                for m in self.models
            ]
            first, last = (self.models[0], self.models[-1]) if self.models else (None, None)
            return web.json_response(
                {"data": data, "has_more": False, "first_id": first, "last_id": last}
            )
        data = [
            {"id": m, "object": "model", "created": 1722902400, "owned_by": "system"}
            for m in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _openai(self, request: web.Request, entry: LoggedRequest) -> web.Response:
        return await self._complete(request, entry, "openai", _parse_openai)

    async def _anthropic(self, request: web.Request, entry: LoggedRequest) -> web.Response:
        return await self._complete(request, entry, "anthropic", _parse_anthropic)

    async def _complete(
        self,
        request: web.Request,
        entry: LoggedRequest,
        provider: str,
        parse: Callable[[dict[str, Any], str, int], MockRequest],
    ) -> web.Response:
        entry.provider = provider
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            entry.outcome = "bad_request"
            return self._error(
                provider, 400, "The request body is not a JSON object.", "req_invalid"
            )
        body_hash = _body_hash(request.path, body)
        attempt = self._ledger.arrive(body_hash)
        digest = hashlib.sha256(f"{body_hash}:{attempt}".encode()).hexdigest()
        request_id = f"req_{digest[:24]}"
        entry.body, entry.body_hash, entry.attempt = body, body_hash, attempt
        entry.model = str(body.get("model")) if "model" in body else None
        if not self._authorized(request):
            entry.outcome = "unauthorized"
            return self._error(provider, 401, _UNAUTHORIZED[provider], request_id)
        try:
            req = parse(body, body_hash, attempt)
        except _BadRequest as exc:
            entry.outcome = "bad_request"
            return self._error(provider, 400, str(exc), request_id)

        plan = self.fault_plan
        outcome = self._ledger.next_scripted() or plan.decide(body_hash, attempt) or OK
        if outcome == Fault.BAD_STRUCTURED and req.schema is None:
            outcome = OK  # nothing structured to break
        entry.outcome = str(outcome)
        self._ledger.count_fault(entry.outcome)

        if outcome == Fault.RATE_LIMIT:
            wait = f"{plan.retry_after:g}"
            return self._error(
                provider,
                429,
                f"Rate limit reached for {req.model}. Please try again in {wait}s.",
                request_id,
                headers={"retry-after": wait},
            )
        if outcome == Fault.SERVER_ERROR:
            return self._error(
                provider, 500, "The server had an error while processing your request.", request_id
            )
        await asyncio.sleep(plan.hang_seconds if outcome == Fault.HANG else self.latency)

        try:
            reply = self.responder(req)
            if inspect.isawaitable(reply):
                reply = await reply
        except Exception as exc:  # a broken responder must fail its request, not the server
            log.exception("mock responder failed")
            entry.outcome = "responder_error"
            return self._error(provider, 500, f"responder failed: {exc!r}", request_id)

        shape = self._openai_reply if provider == "openai" else self._anthropic_reply
        payload = shape(req, reply, outcome, digest)
        headers = {_request_id_header(provider): request_id}
        if outcome == Fault.MALFORMED_JSON:
            text = json.dumps(payload)
            return web.Response(
                text=text[: len(text) // 2], content_type="application/json", headers=headers
            )
        return web.json_response(payload, headers=headers)

    def _reported_model(self, provider: str, model: str) -> str:
        if model in self.reported_models:
            return self.reported_models[model]
        return model if _DATED_MODEL.search(model) else model + _VERSION_SUFFIX[provider]

    def _openai_reply(
        self, req: MockRequest, reply: Reply, outcome: str, digest: str
    ) -> dict[str, Any]:
        content: str | None = _as_text(reply)
        refusal = None
        finish = "stop"
        if outcome == Fault.BAD_STRUCTURED:
            content = _break_text(reply, req.body_hash)
        elif outcome == Fault.TRUNCATED:
            content, finish = content[: len(content) // 2], "length"
        elif outcome == Fault.EMPTY:
            content = ""
        elif outcome == Fault.REFUSAL:
            # Structured outputs refuse through `refusal`; plain chat is cut by the content filter.
            content, refusal = None, _REFUSAL_TEXT
            finish = "stop" if req.schema is not None else "content_filter"
        prompt_tokens = sum(_tokens(m["content"]) + 3 for m in req.messages)
        completion_tokens = _tokens(content or refusal or "")
        return {
            "id": f"chatcmpl-{digest[:29]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self._reported_model("openai", req.model),
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": content,
                        "refusal": refusal,
                        "annotations": [],
                    },
                    "logprobs": None,
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": 0},
                "completion_tokens_details": {"reasoning_tokens": 0},
            },
            "service_tier": "default",
            "system_fingerprint": "fp_mock",
        }

    def _anthropic_reply(
        self, req: MockRequest, reply: Reply, outcome: str, digest: str
    ) -> dict[str, Any]:
        stop_reason = "end_turn"
        stop_details = None
        if req.tool_name is not None and isinstance(reply, dict):
            tool_input = reply
            if outcome == Fault.BAD_STRUCTURED:
                tool_input = _violate(reply) if reply else {"unexpected": ["value"]}
            elif outcome == Fault.TRUNCATED:
                tool_input = dict(list(reply.items())[: len(reply) // 2])
            block = {
                "type": "tool_use",
                "id": f"toolu_{digest[24:48]}",
                "name": req.tool_name,
                "input": tool_input,
            }
            content = [block]
            stop_reason = "tool_use"
            output_text = json.dumps(tool_input)
        else:
            text = _as_text(reply)
            if outcome == Fault.BAD_STRUCTURED:
                text = _break_text(reply, req.body_hash)
            elif outcome == Fault.TRUNCATED:
                text = text[: len(text) // 2]
            content = [{"type": "text", "text": text}]
            output_text = text
        if outcome == Fault.TRUNCATED:
            stop_reason = "max_tokens"
        elif outcome == Fault.EMPTY:
            content, output_text = [], ""
        elif outcome == Fault.REFUSAL:
            content, output_text, stop_reason = [], "", "refusal"
            stop_details = {"type": "refusal", "category": None, "explanation": _REFUSAL_TEXT}
        return {
            "id": f"msg_{digest[:24]}",
            "type": "message",
            "role": "assistant",
            "model": self._reported_model("anthropic", req.model),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "stop_details": stop_details,
            "usage": {
                "input_tokens": sum(_tokens(m["content"]) for m in req.messages),
                "output_tokens": _tokens(output_text),
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }


def _request_id_header(provider: str) -> str:
    return "request-id" if provider == "anthropic" else "x-request-id"


def _provider_of(request: web.Request) -> str:
    """Which API a path shared by both (`/v1/models`) is asked in: the Anthropic SDK sends its version."""
    return "anthropic" if "anthropic-version" in request.headers else "openai"


# -- command line ----------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGINT/SIGTERM, so a benchmark can measure its client in isolation."""
    parser = argparse.ArgumentParser(
        prog="python -m pressurebench.testing.mock_llm_server",
        description="Serve mock OpenAI chat completions and Anthropic messages.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--print-port", action="store_true", help="print the bound port as stdout's first line"
    )
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per completion")
    parser.add_argument("--api-key", default="test-key")
    parser.add_argument("--no-auth", action="store_true", help="accept requests with any or no key")
    parser.add_argument("--backlog", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault draw")
    for kind in Fault:
        parser.add_argument(
            f"--{kind.value.replace('_', '-')}",
            type=float,
            default=0.0,
            metavar="SHARE",
            help=f"share of calls (0..1) answered with the {kind.value} fault",
        )
    parser.add_argument(
        "--fail-first",
        type=int,
        default=0,
        metavar="N",
        help="every distinct request fails its first N attempts",
    )
    parser.add_argument(
        "--fail-first-kind", choices=[k.value for k in Fault], default=Fault.SERVER_ERROR.value
    )
    parser.add_argument(
        "--retry-after", type=float, default=1.0, help="seconds in a 429's retry-after"
    )
    parser.add_argument("--hang-seconds", type=float, default=30.0)
    args = parser.parse_args(argv)

    plan = FaultPlan(
        **{kind.value: getattr(args, kind.value) for kind in Fault},
        seed=args.seed,
        fail_first_n=args.fail_first,
        fail_first_kind=Fault(args.fail_first_kind),
        retry_after=args.retry_after,
        hang_seconds=args.hang_seconds,
    )
    server = MockLLMServer(
        api_key=None if args.no_auth else args.api_key,
        latency=args.latency,
        fault_plan=plan,
        host=args.host,
        port=args.port,
        backlog=args.backlog,
    )
    stop_signals = {signal.SIGINT, signal.SIGTERM}
    # Blocked before the server thread exists, so only sigwait below receives them.
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    server.start()
    if args.print_port:
        print(server.port, flush=True)
    signal.sigwait(stop_signals)
    server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
