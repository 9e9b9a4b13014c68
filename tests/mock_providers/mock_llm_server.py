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

    cd tests && python -m mock_providers.mock_llm_server --port 0 --latency 1.0 --print-port
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

from mock_providers.cloud_wire import CloudDesk
from mock_providers.faults import OK, Fault, FaultPlan
from mock_providers.gemini_wire import GeminiDesk
from mock_providers.mock_batches import BatchDesk
from mock_providers.prompt_caching import (
    CacheRuleError,
    PromptCaches,
    anthropic_breakpoints,
    check_openai,
)
from mock_providers.schema_instances import schema_instance

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


def planning_responder(req: MockRequest) -> Reply:
    """`default_responder`, with a scenario's landmarks on distinct turns, one after another, as
    a model asked for a turn-by-turn plan writes them. Random integers repeat a turn in most
    drafts, which the scenario stage rightly rejects; a test about anything else uses this."""
    reply = default_responder(req)
    if isinstance(reply, dict) and isinstance(reply.get("landmarks"), list):
        for turn, landmark in enumerate(reply["landmarks"], start=1):
            if isinstance(landmark, dict) and "turn" in landmark:
                landmark["turn"] = turn
    return reply


# -- request parsing -----------------------------------------------------------


class _BadRequest(Exception):
    """The request body is not one the real provider would accept (OpenAI also names the
    offending `param` and a `code` in its error body)."""

    def __init__(self, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.param, self.code = param, code


# -- the providers' rules --------------------------------------------------------
#
# What the real APIs refuse, so that a provider adapter sending such a request fails a
# test here instead of a user's run. Each rule names where it comes from.

# OpenAI's reasoning models (o-series, gpt-5 family): "Unsupported parameter: 'max_tokens'
# is not supported with this model. Use 'max_completion_tokens' instead." and "Unsupported
# value: 'temperature' does not support 0.7 with this model. Only the default (1) value is
# supported." (OpenAI API reference, chat completions: `max_tokens` "is not compatible with
# o-series models"; reasoning guide: reasoning models take `reasoning_effort` and count
# hidden reasoning tokens in `max_completion_tokens` and
# `usage.completion_tokens_details.reasoning_tokens`).
OPENAI_REASONING_MODEL = re.compile(r"^(?:o\d+(?:-|$)|gpt-5)")
# Chat-completions request fields (OpenAI API reference); anything else is refused with
# "Unrecognized request argument supplied: <name>".
OPENAI_CHAT_FIELDS = frozenset({
    "model", "messages", "temperature", "top_p", "n", "stream", "stream_options", "stop",
    "max_tokens", "max_completion_tokens", "presence_penalty", "frequency_penalty",
    "logit_bias", "logprobs", "top_logprobs", "user", "seed", "response_format", "tools",
    "tool_choice", "parallel_tool_calls", "reasoning_effort", "service_tier", "store",
    "metadata", "modalities", "audio", "prediction", "verbosity", "web_search_options",
    "prompt_cache_key", "safety_identifier",
})
# Strict structured outputs accept a subset of JSON Schema (OpenAI Structured Outputs guide,
# "Supported schemas"): the root is an object; every object sets `additionalProperties:
# false` and lists every property in `required`; only these keywords.
OPENAI_STRICT_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "anyOf", "$defs", "$ref", "description", "title", "pattern", "format", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
})
# Anthropic's recent models (Claude Opus 4.1, the 4.5 generation and later): "`temperature`
# and `top_p` cannot both be specified for this model. Please use only one." (Messages API
# reference, `top_p`: "You should either alter temperature or top_p, but not both.")
ANTHROPIC_ONE_SAMPLING_SETTING = re.compile(
    r"^claude-(?:opus-4-[1-9]|(?:opus|sonnet|haiku)-4-[5-9]|(?:opus|sonnet|haiku)-[5-9])"
)
# Models released after Claude Opus 4.6 refuse the sampling settings altogether: "`temperature`
# is deprecated for this model." (Anthropic's model deprecations page, "API parameter
# deprecations"; the anthropic SDK 1.0 dropped temperature, top_p and top_k from its methods).
ANTHROPIC_NO_SAMPLING = re.compile(r"^claude-(?:(?:opus|sonnet|haiku)-4-[7-9]|(?:opus|sonnet|haiku)-[5-9])")
# Messages API request fields (Anthropic API reference); others: "<name>: Extra inputs are
# not permitted". `temperature` ranges from 0.0 to 1.0 there.
ANTHROPIC_MESSAGE_FIELDS = frozenset({
    "model", "messages", "max_tokens", "system", "temperature", "top_p", "top_k",
    "stop_sequences", "stream", "metadata", "tools", "tool_choice", "thinking",
    "service_tier", "container", "mcp_servers", "output_config", "context_management",
    "cache_control",
})


def _check_strict_schema(schema: Any, where: str, context: tuple = ()) -> None:
    """Refuse a schema OpenAI's strict mode refuses, with its error's wording."""
    if not isinstance(schema, Mapping):
        raise _BadRequest(f"Invalid schema for {where}: In context={context}, schema must be a JSON object.")
    if not context and schema.get("type") != "object":
        raise _BadRequest(f"Invalid schema for {where}: schema must be a JSON Schema of 'type: \"object\"', "
                          f"got 'type: \"{schema.get('type')}\"'.")
    for key in schema:
        if key not in OPENAI_STRICT_KEYWORDS:
            raise _BadRequest(f"Invalid schema for {where}: In context={context}, '{key}' is not permitted.")
    if schema.get("type") == "object" or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            raise _BadRequest(f"Invalid schema for {where}: In context={context}, 'additionalProperties' "
                              "is required to be supplied and to be false.")
        props = schema.get("properties") or {}
        missing = [name for name in props if name not in (schema.get("required") or [])]
        if missing:
            raise _BadRequest(f"Invalid schema for {where}: In context={context}, 'required' is required "
                              "to be supplied and to be an array including every key in properties. "
                              f"Missing '{missing[0]}'.")
        for name, sub in props.items():
            _check_strict_schema(sub, where, (*context, "properties", name))
    for name, sub in (schema.get("$defs") or {}).items():
        _check_strict_schema(sub, where, (*context, "$defs", name))
    for i, sub in enumerate(schema.get("anyOf") or []):
        _check_strict_schema(sub, where, (*context, "anyOf", i))
    if isinstance(schema.get("items"), Mapping):
        _check_strict_schema(schema["items"], where, (*context, "items"))


def _check_openai_rules(body: Mapping[str, Any]) -> None:
    for name in body:
        if name not in OPENAI_CHAT_FIELDS:
            raise _BadRequest(f"Unrecognized request argument supplied: {name}", name, "unknown_parameter")
    model = str(body.get("model"))
    if OPENAI_REASONING_MODEL.match(model):
        if "max_tokens" in body:
            raise _BadRequest(
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
        for name in ("temperature", "top_p"):
            if name in body and body[name] != 1:
                raise _BadRequest(
                    f"Unsupported value: '{name}' does not support {body[name]} with this model. "
                    "Only the default (1) value is supported.", name, "unsupported_value")
    elif "reasoning_effort" in body:
        raise _BadRequest("Unsupported parameter: 'reasoning_effort' is not supported with this model.",
                          "reasoning_effort", "unsupported_parameter")
    response_format = body.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema") or {}
        if spec.get("strict"):
            _check_strict_schema(spec.get("schema"), f"response_format '{spec.get('name')}'")
    if response_format.get("type") == "json_object":
        text = " ".join(_text(m.get("content")) for m in body["messages"] if isinstance(m, Mapping))
        if "json" not in text.lower():
            raise _BadRequest("'messages' must contain the word 'json' in some form, to use "
                              "'response_format' of type 'json_object'.", "messages", None)
    for tool in body.get("tools") or []:
        function = tool.get("function") or {} if isinstance(tool, Mapping) else {}
        if function.get("strict"):
            _check_strict_schema(function.get("parameters"), f"function '{function.get('name')}'")


def _check_anthropic_rules(body: Mapping[str, Any]) -> None:
    for name in body:
        if name not in ANTHROPIC_MESSAGE_FIELDS:
            raise _BadRequest(f"{name}: Extra inputs are not permitted")
    model = str(body.get("model"))
    for name in ("temperature", "top_p", "top_k"):
        if name in body and ANTHROPIC_NO_SAMPLING.match(model):
            raise _BadRequest(f"`{name}` is deprecated for this model.")
    temperature = body.get("temperature")
    if isinstance(temperature, (int, float)) and not 0 <= temperature <= 1:
        raise _BadRequest("temperature: Input should be less than or equal to 1")
    if ("temperature" in body and "top_p" in body
            and ANTHROPIC_ONE_SAMPLING_SETTING.match(model)):
        raise _BadRequest("`temperature` and `top_p` cannot both be specified for this model. "
                          "Please use only one.")


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
    _check_openai_rules(body)
    _check_cache_fields(check_openai, body)
    messages = [
        {"role": str(m.get("role")), "content": _text(m.get("content"))} for m in body["messages"]
    ]
    system = [m["content"] for m in messages if m["role"] in ("system", "developer")]
    schema = schema_name = tool_name = None
    response_format = body.get("response_format") or {}
    choice = body.get("tool_choice")
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        name = (choice.get("function") or {}).get("name")
        functions = [(t.get("function") or {}) for t in body.get("tools") or [] if isinstance(t, Mapping)]
        matching = [f for f in functions if f.get("name") == name]
        if not matching:
            raise _BadRequest(f"tool_choice: function {name!r} is not in tools", "tool_choice")
        schema, schema_name, tool_name = matching[0].get("parameters", {}), name, name
    elif response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema") or {}
        schema, schema_name = spec.get("schema", {}), spec.get("name")
    elif response_format.get("type") == "json_object":
        # llama.cpp's server takes the schema beside json_object; otherwise any object.
        schema = response_format.get("schema") or _schema_in_prompt(messages) or {"type": "object"}
    else:
        schema = _schema_in_prompt(messages)
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    return MockRequest(
        provider="openai",
        path=OPENAI_PATH,
        model=str(body["model"]),
        messages=messages,
        system="\n\n".join(system) or None,
        schema=schema,
        schema_name=schema_name,
        tool_name=tool_name,
        temperature=body.get("temperature"),
        seed=body.get("seed"),
        max_tokens=max_tokens,
        raw=body,
        body_hash=body_hash,
        attempt=attempt,
    )


def _parse_anthropic(body: dict[str, Any], body_hash: str, attempt: int) -> MockRequest:
    _require(body, "model", "messages", "max_tokens")
    _check_anthropic_rules(body)
    _check_cache_fields(anthropic_breakpoints, body)
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
        else:
            schema = _schema_in_prompt(messages)
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


def _check_cache_fields(check: Callable[[dict[str, Any]], Any], body: dict[str, Any]) -> None:
    """The provider's prompt caching rules (`prompt_caching`), refused as a 400."""
    try:
        check(body)
    except CacheRuleError as exc:
        raise _BadRequest(str(exc)) from None


_PROMPTED_SCHEMA = "JSON schema"


def _schema_in_prompt(messages: list[dict[str, str]]) -> dict[str, Any] | None:
    """A JSON schema the system prompt asks the reply to follow ("... JSON schema ...: {...}"),
    as an instruction-following model would read it; None when there is none."""
    for m in messages:
        if m["role"] not in ("system", "developer") or _PROMPTED_SCHEMA not in m["content"]:
            continue
        text = m["content"]
        start = text.find("{", text.index(_PROMPTED_SCHEMA))
        if start < 0:
            continue
        try:
            schema, _ = json.JSONDecoder().raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(schema, dict):
            return schema
    return None


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


def _error_body(
    provider: str, status: int, message: str, request_id: str,
    param: str | None = None, error_code: str | None = None,
) -> dict[str, Any]:
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
    return {"error": {"message": message, "type": kind, "param": param, "code": code or error_code}}


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
        serves_listed_only: bool = False,
        reasoning_tokens: int = 48,
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
        serves_listed_only: refuse a completion for a model `models` does not list, with the
            404 each service answers for a model it does not serve (OpenAI: `model_not_found`,
            "The model `<name>` does not exist or you do not have access to it."; Anthropic:
            `not_found_error`, "model: <name>"). Off by default, since most tests name models
            freely; on, the mock is as strict as the services about model names.
        reasoning_tokens: hidden reasoning an OpenAI reasoning model spends per reply,
            out of its `max_completion_tokens`.
        """
        self.responder = responder
        self.api_key = api_key
        self.latency = latency
        self.fault_plan = fault_plan or FaultPlan()
        self.reported_models = dict(reported_models or {})
        self.models = tuple(models)
        self.serves_listed_only = serves_listed_only
        self.reasoning_tokens = reasoning_tokens
        self.batch_polls = 1
        """Retrievals of a batch before it ends."""
        self.batch_expire = 0
        """How many of the next batches end expired, with only the first half of their requests answered."""
        self.batch_desk = BatchDesk(self)
        self.gemini = GeminiDesk(self)
        self.clouds = CloudDesk(self)
        """Bedrock, Vertex AI and Azure OpenAI paths (`cloud_wire`)."""
        """The Gemini API's endpoints (`gemini_wire`): generateContent, models, Batch Mode."""
        self.prompt_caches = PromptCaches()
        """The providers' prompt caches, and the tokens billed by kind (`prompt_caching`)."""
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
        # Batch uploads are large: OpenAI takes files of up to 200 MB, Anthropic batches of 256 MB.
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post(OPENAI_PATH, self._tracked(self._openai))
        app.router.add_post(ANTHROPIC_PATH, self._tracked(self._anthropic))
        app.router.add_get(MODELS_PATH, self._tracked(self._models))
        app.router.add_get(MODELS_PATH + "/{model}", self._tracked(self._model))
        self.batch_desk.routes(app, self._tracked)
        self.gemini.routes(app, self._tracked)
        self.clouds.routes(app, self._tracked)
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
    def gemini_base_url(self) -> str:
        """For `google.genai.Client(http_options=HttpOptions(base_url=...))`: the SDK appends
        the API version and `/models/<model>:generateContent`."""
        return self.base_url

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
        param: str | None = None,
        code: str | None = None,
    ) -> web.Response:
        return web.json_response(
            _error_body(provider, status, message, request_id, param, code),
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
        """`GET /v1/models` as each service answers it. OpenAI: every model, one page
        (https://platform.openai.com/docs/api-reference/models/list). Anthropic: a page of
        `limit` models (default 20, 1 to 1000) after `after_id` or before `before_id`, with
        `has_more`, `first_id` and `last_id` (https://docs.claude.com/en/api/models-list)."""
        provider = entry.provider = _provider_of(request)
        if provider == "google":
            return self.gemini.model_list(request)
        if not self._authorized(request):
            entry.outcome = "unauthorized"
            return self._error(provider, 401, _UNAUTHORIZED[provider], "req_models")
        if provider == "anthropic":
            models = list(self.models)
            try:
                limit = int(request.query.get("limit", "20"))
            except ValueError:
                limit = 0
            if not 1 <= limit <= 1000:
                return self._error(provider, 400, "limit: Input should be between 1 and 1000",
                                   "req_models")
            for cursor, side in (("after_id", 1), ("before_id", 0)):
                if cursor in request.query:
                    if request.query[cursor] not in models:
                        return self._error(provider, 400, f"{cursor}: unknown model id",
                                           "req_models")
                    at = models.index(request.query[cursor])
                    models = models[at + 1:] if side else models[:at]
            page, more = (models[:limit], len(models) > limit) if "before_id" not in request.query \
                else (models[-limit:], len(models) > limit)
            data = [
                {"type": "model", "id": m, "display_name": m, "created_at": "2025-09-29T00:00:00Z"}
                for m in page
            ]
            first, last = (page[0], page[-1]) if page else (None, None)
            return web.json_response(
                {"data": data, "has_more": more, "first_id": first, "last_id": last}
            )
        data = [
            {"id": m, "object": "model", "created": 1722902400, "owned_by": "system"}
            for m in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _model(self, request: web.Request, entry: LoggedRequest) -> web.Response:
        """`GET /v1/models/{model}`: one model, or 404 as each service answers an unknown one
        (OpenAI: `model_not_found`; Anthropic: `not_found_error`)."""
        provider = entry.provider = _provider_of(request)
        if provider == "google":
            return self.gemini.model(request, request.match_info["model"])
        if not self._authorized(request):
            entry.outcome = "unauthorized"
            return self._error(provider, 401, _UNAUTHORIZED[provider], "req_model")
        name = request.match_info["model"]
        if name not in self.models:
            entry.outcome = "not_found"
            if provider == "anthropic":
                return self._error(provider, 404, f"model: {name}", "req_model")
            return self._error(
                provider, 404,
                f"The model '{name}' does not exist or you do not have access to it.",
                "req_model", code="model_not_found",
            )
        if provider == "anthropic":
            return web.json_response({"type": "model", "id": name, "display_name": name,
                                      "created_at": "2025-09-29T00:00:00Z"})
        return web.json_response({"id": name, "object": "model", "created": 1722902400,
                                  "owned_by": "system"})

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
        if self.serves_listed_only and entry.model not in self.models:
            entry.outcome = "not_found"
            if provider == "anthropic":
                return self._error(provider, 404, f"model: {entry.model}", request_id)
            return self._error(
                provider, 404,
                f"The model `{entry.model}` does not exist or you do not have access to it.",
                request_id, code="model_not_found",
            )
        try:
            req = parse(body, body_hash, attempt)
        except _BadRequest as exc:
            entry.outcome = "bad_request"
            return self._error(provider, 400, str(exc), request_id, param=exc.param, code=exc.code)

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

    async def answer_item(self, provider: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """One request of a batch, answered as a direct request would be: (status, body).

        The same rules, responder and fault plan; faults of the connection (a hang, a
        cut-off body) do not happen inside a batch, and 429/5xx become failed items.
        """
        path = OPENAI_PATH if provider == "openai" else ANTHROPIC_PATH
        parse = _parse_openai if provider == "openai" else _parse_anthropic
        body_hash = _body_hash(path, body)
        attempt = self._ledger.arrive(body_hash)
        digest = hashlib.sha256(f"{body_hash}:{attempt}".encode()).hexdigest()
        entry = self._ledger.begin("BATCH", f"batch:{path}")  # counted apart from direct calls
        self._ledger.end()
        entry.provider, entry.body, entry.body_hash, entry.attempt = provider, body, body_hash, attempt
        entry.model = str(body.get("model"))
        try:
            req = parse(body, body_hash, attempt)
        except _BadRequest as exc:
            entry.outcome, entry.status = "bad_request", 400
            return 400, _error_body(provider, 400, str(exc), f"req_{digest[:24]}", exc.param, exc.code)
        outcome = self._ledger.next_scripted() or self.fault_plan.decide(body_hash, attempt) or OK
        if outcome in (Fault.HANG, Fault.MALFORMED_JSON) or (
                outcome == Fault.BAD_STRUCTURED and req.schema is None):
            outcome = OK
        entry.outcome = str(outcome)
        self._ledger.count_fault(entry.outcome)
        if outcome in (Fault.RATE_LIMIT, Fault.SERVER_ERROR):
            entry.status = 500
            return 500, _error_body(provider, 500, "The server had an error while processing your request.",
                                    f"req_{digest[:24]}")
        reply = self.responder(req)
        if inspect.isawaitable(reply):
            reply = await reply
        shape = self._openai_reply if provider == "openai" else self._anthropic_reply
        entry.status = 200
        return 200, shape(req, reply, outcome, digest)

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
        # A reasoning model thinks before it answers, out of the same max_completion_tokens:
        # a limit its reasoning uses up leaves an empty answer cut off at `length`.
        reasoning = self.reasoning_tokens if OPENAI_REASONING_MODEL.match(req.model) else 0
        if reasoning and req.max_tokens is not None:
            reasoning = min(reasoning, req.max_tokens)
            room = req.max_tokens - reasoning
            if content is not None and _tokens(content) > room:
                content, finish = content[: 4 * room], "length"
        prompt_tokens, cached_tokens = self.prompt_caches.openai(req.raw, req.messages)
        completion_tokens = _tokens(content or refusal or "") + reasoning
        self.prompt_caches.billed[("openai", req.model)].output += completion_tokens
        message: dict[str, Any] = {
            "role": "assistant", "content": content, "refusal": refusal, "annotations": [],
        }
        if req.tool_name is not None and content is not None and refusal is None:
            message["content"] = None
            message["tool_calls"] = [{
                "id": f"call_{digest[:24]}", "type": "function",
                "function": {"name": req.tool_name, "arguments": content},
            }]
        return {
            "id": f"chatcmpl-{digest[:29]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self._reported_model("openai", req.model),
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "prompt_tokens_details": {"cached_tokens": cached_tokens},
                "completion_tokens_details": {"reasoning_tokens": reasoning},
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
        self.prompt_caches.billed[("anthropic", req.model)].output += _tokens(output_text)
        return {
            "id": f"msg_{digest[:24]}",
            "type": "message",
            "role": "assistant",
            "model": self._reported_model("anthropic", req.model),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "stop_details": stop_details,
            "usage": {**self.prompt_caches.anthropic(req.raw), "output_tokens": _tokens(output_text)},
        }


def _request_id_header(provider: str) -> str:
    return "request-id" if provider == "anthropic" else "x-request-id"


def _provider_of(request: web.Request) -> str:
    """Which API a path they share (`/v1/models`) is asked in: the Anthropic SDK sends its
    version, Google's SDK its `x-goog-` headers."""
    if "x-goog-api-key" in request.headers or "x-goog-api-client" in request.headers:
        return "google"
    return "anthropic" if "anthropic-version" in request.headers else "openai"


# -- command line ----------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until SIGINT/SIGTERM, so a benchmark can measure its client in isolation."""
    parser = argparse.ArgumentParser(
        prog="python -m mock_providers.mock_llm_server",
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
