"""The Gemini API's wire format on the mock server, as strict as the real service.

What is refused, and where the rule comes from:
- Unknown fields, at any depth of a request (GenerateContentRequest, Content, Part,
  GenerationConfig, ThinkingConfig, Schema): HTTP 400, status INVALID_ARGUMENT,
  `Invalid JSON payload received. Unknown name "<name>" at '<path>': Cannot find field.`
  (the API's proto JSON parser; its message as users report it, e.g. google-gemini/gemini-cli
  #13972). Field names are taken in lowerCamelCase or as the proto's snake_case, as every
  proto JSON parser takes them (the SDK sends `thinking_budget` and `max_length` that way).
  The fields are those of the API reference (ai.google.dev/api/generate-content); the SDK's
  generated `google.genai.types` models carry the same ones.
- Content roles other than `user` and `model`: 400 INVALID_ARGUMENT, `Please use a valid role:
  user, model.` (Content.role: "Must be either 'user' or 'model'").
- A response schema without `responseMimeType: application/json` (GenerationConfig
  .responseSchema: "If set, a compatible responseMimeType must also be set. Compatible
  MIME types: application/json"): 400 INVALID_ARGUMENT.
- Schema types other than the Type enum's names (STRING, NUMBER, INTEGER, BOOLEAN, ARRAY,
  OBJECT, NULL): 400, `Invalid value at '<path>.type' (...Type), "<value>"`.
- thinkingBudget with thinkingLevel; a thinkingLevel for a Gemini 2.5 model; Gemini 2.5 Pro
  with a budget outside 128 to 32768 (it cannot stop thinking; -1 lets it decide): 400
  (Gemini API thinking guide).
- A key other than the server's in `x-goog-api-key`: 400 INVALID_ARGUMENT, `API key not valid.
  Please pass a valid API key.` with reason API_KEY_INVALID, as the API answers it.

Replies: the responder's text (a schema instance for a structured request), thinking tokens
(`MockLLMServer.reasoning_tokens`, at most the budget) counted with the answer against
`maxOutputTokens` (finishReason MAX_TOKENS when they do not fit), and usage as the API
reports it: `promptTokenCount` (cached content included), `candidatesTokenCount`,
`thoughtsTokenCount`, `cachedContentTokenCount`. As a stand-in for implicit caching, a prompt
that repeats an earlier prompt of the same model whole, from `IMPLICIT_CACHE_MIN` tokens on,
reports that earlier prompt as cached.

Batch Mode (ai.google.dev/api/batch-mode): `POST /{v}/models/{model}:batchGenerateContent`
with `batch.inputConfig.requests.requests: [{"request", "metadata"}]` answers an Operation
named `batches/<id>` whose `metadata` is the GenerateContentBatch; `GET /{v}/batches/<id>`
answers it again, `BATCH_STATE_SUCCEEDED` after `MockLLMServer.batch_polls` retrievals with
`output.inlinedResponses.inlinedResponses: [{"response" | "error", "metadata"}]`.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from mock_providers.faults import OK, Fault

if TYPE_CHECKING:
    from mock_providers.mock_llm_server import MockLLMServer, MockRequest

API_KEY_INVALID = "API key not valid. Please pass a valid API key."
ROLE_MESSAGE = "Please use a valid role: user, model."
IMPLICIT_CACHE_MIN = 1024
SCHEMA_TYPES = frozenset({"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"})
PRO_25 = re.compile(r"^gemini-2\.5-pro")
GEMINI_25 = re.compile(r"^gemini-2\.5")


def _fields(*names: str) -> frozenset[str]:
    """Each field by its JSON name and by its proto name."""
    snake = {re.sub(r"(?<!^)(?=[A-Z])", "_", n).lower() for n in names}
    return frozenset(names) | frozenset(snake)


REQUEST_FIELDS = _fields("model", "contents", "tools", "toolConfig", "safetySettings",
                         "systemInstruction", "generationConfig", "cachedContent")
CONTENT_FIELDS = _fields("parts", "role")
PART_FIELDS = _fields("text", "inlineData", "functionCall", "functionResponse", "fileData",
                      "executableCode", "codeExecutionResult", "thought", "thoughtSignature",
                      "videoMetadata", "partMetadata")
GENERATION_FIELDS = _fields(
    "stopSequences", "responseMimeType", "responseSchema", "responseJsonSchema", "responseModalities",
    "candidateCount", "maxOutputTokens", "temperature", "topP", "topK", "seed", "presencePenalty",
    "frequencyPenalty", "responseLogprobs", "logprobs", "enableEnhancedCivicAnswers",
    "speechConfig", "thinkingConfig", "imageConfig", "mediaResolution")
THINKING_FIELDS = _fields("includeThoughts", "thinkingBudget", "thinkingLevel")
SCHEMA_FIELDS = _fields(
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
    "additionalProperties", "defs", "ref")
BATCH_REQUEST_FIELDS = _fields("batch")
BATCH_FIELDS = _fields("displayName", "inputConfig", "priority", "model", "name")


class GeminiError(Exception):
    """A request the real API refuses: (HTTP status, message, status name)."""

    def __init__(self, code: int, message: str, status: str = "INVALID_ARGUMENT",
                 reason: str | None = None):
        super().__init__(message)
        self.code, self.message, self.status, self.reason = code, message, status, reason

    def body(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message, "status": self.status}
        if self.reason:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                 "reason": self.reason, "domain": "googleapis.com"}]
        elif self.code == 400 and "Unknown name" in self.message:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.BadRequest",
                                 "fieldViolations": [{"description": self.message}]}]
        return {"error": error}


def _get(body: Mapping[str, Any], camel: str) -> Any:
    """A field by its JSON name or its proto name."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", camel).lower()
    return body.get(camel, body.get(snake))


def _known(body: Any, allowed: frozenset[str], where: str) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        raise GeminiError(400, f"Invalid value at '{where}', expected an object")
    for name in body:
        if name not in allowed:
            at = f" at '{where}'" if where else ""
            raise GeminiError(400, f'Invalid JSON payload received. Unknown name "{name}"{at}: '
                                   "Cannot find field.")
    return body


def _schema(schema: Any, where: str) -> None:
    _known(schema, SCHEMA_FIELDS, where)
    kind = _get(schema, "type")
    if kind is not None and kind not in SCHEMA_TYPES:
        raise GeminiError(400, f"Invalid value at '{where}.type' "
                               f'(type.googleapis.com/google.ai.generativelanguage.v1.Type), "{kind}"')
    for name, sub in (_get(schema, "properties") or {}).items():
        _schema(sub, f"{where}.properties[{name}].value")
    if _get(schema, "items") is not None:
        _schema(_get(schema, "items"), f"{where}.items")
    for i, sub in enumerate(_get(schema, "anyOf") or []):
        _schema(sub, f"{where}.any_of[{i}]")


def check_request(body: Any, model: str, where: str = "") -> Mapping[str, Any]:
    """Refuse what the API refuses in a GenerateContentRequest; return it."""
    prefix = f"{where}." if where else ""
    _known(body, REQUEST_FIELDS, where)
    contents = _get(body, "contents")
    if not isinstance(contents, list) or not contents:
        raise GeminiError(400, "* GenerateContentRequest.contents: contents is not specified")
    for i, content in enumerate(contents):
        _known(content, CONTENT_FIELDS, f"{prefix}contents[{i}]")
        if content.get("role") not in ("user", "model"):
            raise GeminiError(400, ROLE_MESSAGE)
        for j, part in enumerate(content.get("parts") or []):
            _known(part, PART_FIELDS, f"{prefix}contents[{i}].parts[{j}]")
    system = _get(body, "systemInstruction")
    if system is not None:
        _known(system, CONTENT_FIELDS, f"{prefix}system_instruction")
        for j, part in enumerate(system.get("parts") or []):
            _known(part, PART_FIELDS, f"{prefix}system_instruction.parts[{j}]")
    config = _get(body, "generationConfig") or {}
    _known(config, GENERATION_FIELDS, f"{prefix}generation_config")
    schema = _get(config, "responseSchema")
    if schema is not None:
        if _get(config, "responseMimeType") != "application/json":
            raise GeminiError(400, "* GenerateContentRequest.generation_config.response_schema: "
                                   "requires response_mime_type application/json")
        _schema(schema, f"{prefix}generation_config.response_schema")
    thinking = _get(config, "thinkingConfig")
    if thinking is not None:
        _known(thinking, THINKING_FIELDS, f"{prefix}generation_config.thinking_config")
        budget, level = _get(thinking, "thinkingBudget"), _get(thinking, "thinkingLevel")
        if budget is not None and level is not None:
            raise GeminiError(400, "You can only set only one of thinking budget and thinking level.")
        if level is not None and GEMINI_25.match(model):
            raise GeminiError(400, "Thinking level is not supported for this model.")
        if PRO_25.match(model) and budget == 0:
            raise GeminiError(400, "Budget 0 is invalid. This model only works in thinking mode.")
        if PRO_25.match(model) and budget is not None and budget != -1 and not 128 <= budget <= 32768:
            raise GeminiError(400, f"The thinking budget {budget} is invalid. Please choose a value "
                                   "between 128 and 32768.")
    return body


def _text(content: Mapping[str, Any] | None) -> str:
    return "".join(str(p.get("text", "")) for p in (content or {}).get("parts") or [])


def json_schema(schema: Any) -> Any:
    """A Gemini Schema as the JSON schema the mock's responder reads (lower-case types,
    camelCase bounds)."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for name, value in schema.items():
        camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)
        if camel == "type":
            out["type"] = str(value).lower()
        elif camel == "properties":
            out["properties"] = {k: json_schema(v) for k, v in value.items()}
        elif camel == "items":
            out["items"] = json_schema(value)
        elif camel == "anyOf":
            out["anyOf"] = [json_schema(v) for v in value]
        elif camel in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
            out[camel] = int(value)
        else:
            out[camel] = value
    return out


def tokens(text: str) -> int:
    """The mock's tokenizer: about four characters a token."""
    return math.ceil(len(text) / 4)


@dataclass
class GeminiBatch:
    name: str
    model: str
    display_name: str
    items: list[tuple[dict, dict]]  # (request, metadata)
    polls: int = 0
    responses: list[dict] = field(default_factory=list)


class GeminiDesk:
    """The Gemini endpoints of one `MockLLMServer`: generateContent, models, Batch Mode."""

    def __init__(self, server: MockLLMServer):
        self.server = server
        self.batches: dict[str, GeminiBatch] = {}
        self.prompts: dict[str, list[str]] = defaultdict(list)  # per model, earlier prompts
        self.billed: dict[str, Counter] = defaultdict(Counter)

    def routes(self, app: web.Application, tracked: Any) -> None:
        app.router.add_post(r"/{version:v1|v1beta}/models/{target}", tracked(self._post))
        # `GET /v1/batches/<id>` is also OpenAI's: `mock_batches` hands Gemini's requests here.
        app.router.add_get("/v1beta/batches/{batch}", tracked(self.get_batch))
        app.router.add_get("/v1beta/models", tracked(self._list_beta))

    async def _list_beta(self, request: web.Request, entry: Any) -> web.Response:
        entry.provider = "google"
        return self.model_list(request)

    def authorized(self, request: web.Request) -> bool:
        key = self.server.api_key
        return key is None or request.headers.get("x-goog-api-key") == key

    @staticmethod
    def error(exc: GeminiError) -> web.Response:
        return web.json_response(exc.body(), status=exc.code)

    # --- models ---------------------------------------------------------------------------

    def model_list(self, request: web.Request) -> web.Response:
        """`models.list`: `{"models": [{"name": "models/<id>", ...}], "nextPageToken"}`, pages of
        `pageSize` (default 50, at most 1000)."""
        if not self.authorized(request):
            return self.error(GeminiError(400, API_KEY_INVALID, reason="API_KEY_INVALID"))
        size = min(int(request.query.get("pageSize", "50")), 1000)
        start = int(request.query.get("pageToken", "0") or 0)
        page = self.server.models[start:start + size]
        body: dict[str, Any] = {"models": [
            {"name": f"models/{m}", "displayName": m, "inputTokenLimit": 1048576,
             "outputTokenLimit": 65536, "supportedGenerationMethods": ["generateContent", "batchGenerateContent"]}
            for m in page]}
        if start + size < len(self.server.models):
            body["nextPageToken"] = str(start + size)
        return web.json_response(body)

    def model(self, request: web.Request, name: str) -> web.Response:
        if not self.authorized(request):
            return self.error(GeminiError(400, API_KEY_INVALID, reason="API_KEY_INVALID"))
        if name not in self.server.models:
            return self.error(GeminiError(404, f"models/{name} is not found for API version "
                                               f"{request.match_info.get('version', 'v1')}", "NOT_FOUND"))
        return web.json_response({"name": f"models/{name}", "displayName": name})

    # --- generateContent and batchGenerateContent -----------------------------------------

    async def _post(self, request: web.Request, entry: Any) -> web.Response:
        entry.provider = "google"
        model, _, method = request.match_info["target"].partition(":")
        entry.model = model
        try:
            body = await request.json()
        except ValueError:
            body = None
        entry.body = body if isinstance(body, dict) else None
        if not self.authorized(request):
            entry.outcome = "unauthorized"
            return self.error(GeminiError(400, API_KEY_INVALID, reason="API_KEY_INVALID"))
        if method not in ("generateContent", "batchGenerateContent"):
            entry.outcome = "not_found"
            return self.error(GeminiError(404, f"Method not found: {method}", "NOT_FOUND"))
        if model not in self.server.models:
            entry.outcome = "not_found"
            return self.error(GeminiError(404, f"models/{model} is not found for API version "
                                               f"{request.match_info['version']}", "NOT_FOUND"))
        try:
            if method == "batchGenerateContent":
                return web.json_response(self._create_batch(model, body))
            check_request(body, model)
        except GeminiError as exc:
            entry.outcome = "bad_request"
            return self.error(exc)
        status, reply = await self.answer(model, body, entry)
        return web.json_response(reply, status=status)

    async def answer(self, model: str, body: Mapping[str, Any], entry: Any = None,
                     in_batch: bool = False) -> tuple[int, dict[str, Any]]:
        """One checked request answered: (HTTP status, body), with the server's responder and
        fault plan (a connection's faults do not happen inside a batch)."""
        from mock_providers.mock_llm_server import MockRequest, _body_hash, _schema_in_prompt

        server = self.server
        body_hash = _body_hash(f"gemini:{model}", body)
        attempt = server._ledger.arrive(body_hash)
        config = _get(body, "generationConfig") or {}
        system = _text(_get(body, "systemInstruction")) or None
        messages = [{"role": "assistant" if c["role"] == "model" else "user", "content": _text(c)}
                    for c in body["contents"]]
        if system:
            messages.insert(0, {"role": "system", "content": system})
        schema = _get(config, "responseSchema")
        req = MockRequest(provider="google", path=f"/models/{model}:generateContent", model=model,
                          messages=messages, system=system,
                          schema=json_schema(schema) if schema is not None else _schema_in_prompt(messages),
                          schema_name=None, tool_name=None, temperature=_get(config, "temperature"),
                          seed=_get(config, "seed"), max_tokens=_get(config, "maxOutputTokens"),
                          raw=dict(body), body_hash=body_hash, attempt=attempt)
        outcome = server._ledger.next_scripted() or server.fault_plan.decide(body_hash, attempt) or OK
        if in_batch and outcome in (Fault.HANG, Fault.MALFORMED_JSON):
            outcome = OK
        if outcome == Fault.BAD_STRUCTURED and schema is None:
            outcome = OK
        if entry is not None:
            entry.body_hash, entry.attempt, entry.outcome = body_hash, attempt, str(outcome)
        server._ledger.count_fault(str(outcome))
        if outcome == Fault.RATE_LIMIT:
            return 429, GeminiError(429, "Resource has been exhausted (e.g. check quota).",
                                    "RESOURCE_EXHAUSTED").body()
        if outcome == Fault.SERVER_ERROR:
            return 500, GeminiError(500, "An internal error has occurred.", "INTERNAL").body()
        reply = server.responder(req)
        if inspect.isawaitable(reply):
            reply = await reply
        return 200, self._shape(req, reply, outcome, config)

    def _shape(self, req: MockRequest, reply: Any, outcome: str, config: Mapping[str, Any]) -> dict[str, Any]:
        from mock_providers.mock_llm_server import _as_text, _break_text

        text = _as_text(reply)
        finish = "STOP"
        if outcome == Fault.BAD_STRUCTURED:
            text = _break_text(reply, req.body_hash)
        elif outcome == Fault.TRUNCATED:
            text, finish = text[: len(text) // 2], "MAX_TOKENS"
        elif outcome == Fault.EMPTY:
            text = ""
        thinking = _get(config, "thinkingConfig") or {}
        budget = _get(thinking, "thinkingBudget")
        thoughts = 0 if budget == 0 else self.server.reasoning_tokens
        if budget is not None and budget > 0:
            thoughts = min(thoughts, budget)
        limit = _get(config, "maxOutputTokens")
        if limit is not None:
            thoughts = min(thoughts, limit)
            room = limit - thoughts
            if tokens(text) > room:
                text, finish = text[: 4 * room], "MAX_TOKENS"
        prompt_text = "\n".join(m["content"] for m in req.messages)
        prompt = tokens(prompt_text)
        earlier = [p for p in self.prompts[req.model] if prompt_text.startswith(p)]
        cached = max((tokens(p) for p in earlier), default=0)
        cached = cached if cached >= IMPLICIT_CACHE_MIN else 0
        self.prompts[req.model].append(prompt_text)
        candidates = tokens(text)
        bill = self.billed[req.model]
        bill["uncached"] += prompt - cached
        bill["cached"] += cached
        bill["output"] += candidates + thoughts
        content: dict[str, Any] = {"role": "model", "parts": [{"text": text}] if text else []}
        usage = {"promptTokenCount": prompt, "candidatesTokenCount": candidates,
                 "totalTokenCount": prompt + candidates + thoughts}
        if thoughts:
            usage["thoughtsTokenCount"] = thoughts
        if cached:
            usage["cachedContentTokenCount"] = cached
        if outcome == Fault.REFUSAL:
            content, finish = {"role": "model", "parts": []}, "SAFETY"
        digest = hashlib.sha256(f"{req.body_hash}:{req.attempt}".encode()).hexdigest()
        return {"candidates": [{"content": content, "finishReason": finish, "index": 0}],
                "usageMetadata": usage, "modelVersion": req.model, "responseId": digest[:22]}

    # --- Batch Mode -----------------------------------------------------------------------

    def _create_batch(self, model: str, body: Any) -> dict[str, Any]:
        _known(body, BATCH_REQUEST_FIELDS, "")
        batch = _known(body.get("batch"), BATCH_FIELDS, "batch")
        requests = ((_get(batch, "inputConfig") or {}).get("requests") or {}).get("requests")
        if not isinstance(requests, list) or not requests:
            raise GeminiError(400, "* BatchGenerateContentRequest.batch.input_config: requests are not specified")
        items = []
        for i, item in enumerate(requests):
            _known(item, _fields("request", "metadata"), f"batch.input_config.requests.requests[{i}]")
            check_request(item["request"], model, f"batch.input_config.requests.requests[{i}].request")
            items.append((item["request"], item.get("metadata") or {}))
        name = f"batches/{hashlib.sha256(repr(body).encode()).hexdigest()[:16]}{len(self.batches)}"
        found = GeminiBatch(name=name, model=f"models/{model}",
                            display_name=str(_get(batch, "displayName") or ""), items=items)
        self.batches[name] = found
        return self._operation(found)

    def _operation(self, batch: GeminiBatch) -> dict[str, Any]:
        ended = batch.polls >= self.server.batch_polls and bool(batch.responses)
        metadata: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1.GenerateContentBatch",
            "name": batch.name, "model": batch.model, "displayName": batch.display_name,
            "state": "BATCH_STATE_SUCCEEDED" if ended else "BATCH_STATE_PENDING",
            "batchStats": {"requestCount": str(len(batch.items))},
        }
        if ended:
            metadata["output"] = {"inlinedResponses": {"inlinedResponses": batch.responses}}
        return {"name": batch.name, "metadata": metadata, "done": ended}

    async def get_batch(self, request: web.Request, entry: Any) -> web.Response:
        entry.provider = "google"
        if not self.authorized(request):
            return self.error(GeminiError(400, API_KEY_INVALID, reason="API_KEY_INVALID"))
        batch = self.batches.get(f"batches/{request.match_info.get('batch') or request.match_info['id']}")
        if batch is None:
            return self.error(GeminiError(404, "Requested entity was not found.", "NOT_FOUND"))
        batch.polls += 1
        if batch.polls >= self.server.batch_polls and not batch.responses:
            model = batch.model.removeprefix("models/")
            for body, metadata in batch.items:
                status, reply = await self.answer(model, body, in_batch=True)
                if status == 200:
                    batch.responses.append({"response": reply, "metadata": metadata})
                else:
                    batch.responses.append({"error": {"code": status, "message": reply["error"]["message"]},
                                            "metadata": metadata})
        return web.json_response(self._operation(batch))

