"""The clouds' endpoints for Claude and OpenAI models on the mock server, as strict as the
services on what differs from the providers' own APIs; what the body then asks is answered
(and refused) as the provider's own API answers it (`MockLLMServer.answer_item`).

- AWS Bedrock, InvokeModel (Bedrock API reference, "InvokeModel"; Anthropic's "Claude on Amazon
  Bedrock"): `POST /model/<modelId>/invoke`, signed with SigV4 for the service `bedrock`
  (`Authorization: AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/bedrock/aws4_request, ...`)
  or a Bedrock API key as a bearer token; the body carries `anthropic_version` (the documented
  "bedrock-2023-05-31", or the dated Anthropic API version the anthropic SDK 2.x sends) and no
  `model` (the model is in the path): a `model` key is refused
  with 400 `Malformed input request: #: extraneous key [model] is not permitted, please reformat
  your input and try again.`
- Google Vertex AI (Anthropic's "Claude on Vertex AI"): `POST /v1/projects/<project>/locations/
  <region>/publishers/anthropic/models/<model>:rawPredict` with `Authorization: Bearer
  <access token>`; the body carries `anthropic_version` ("vertex-2023-10-16", or the SDK's dated
  API version) and no `model`.
- Azure OpenAI (Azure OpenAI REST reference, chat completions): `POST /openai/deployments/
  <deployment>/chat/completions?api-version=<version>` with the key in `api-key`; without an
  api-version the service answers 404 `Resource not found`, a wrong key 401.
Each call is logged with its path, and `CloudDesk.seen` keeps what arrived.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from mock_providers.mock_llm_server import MockLLMServer

BEDROCK_VERSION = "bedrock-2023-05-31"
VERTEX_VERSION = "vertex-2023-10-16"
DATED_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SIGV4 = re.compile(r"^AWS4-HMAC-SHA256 Credential=[^/]+/\d{8}/(?P<region>[a-z0-9-]+)/bedrock/aws4_request, "
                   r"SignedHeaders=[^,]+, Signature=[0-9a-f]{64}$")
AZURE_DENIED = ("Access denied due to invalid subscription key or wrong API endpoint. Make sure to "
                "provide a valid key for an active subscription and use a correct regional API "
                "endpoint for your resource.")


class CloudDesk:
    """Bedrock, Vertex AI and Azure OpenAI paths of one `MockLLMServer`."""

    def __init__(self, server: MockLLMServer):
        self.server = server
        self.seen: list[dict[str, Any]] = []  # {"cloud", "path", "headers", "query", "body"}
        self.access_token = "vertex-test-token"

    def routes(self, app: web.Application, tracked: Any) -> None:
        app.router.add_post("/model/{model_id}/invoke", tracked(self._bedrock))
        app.router.add_post("/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{target}",
                            tracked(self._vertex))
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", tracked(self._azure))

    async def _note(self, cloud: str, request: web.Request, entry: Any) -> dict[str, Any] | None:
        try:
            body = await request.json()
        except ValueError:
            body = None
        entry.provider = cloud
        entry.body = body if isinstance(body, dict) else None
        self.seen.append({"cloud": cloud, "path": request.path, "headers": dict(request.headers),
                          "query": dict(request.query), "body": body})
        return entry.body

    @staticmethod
    def _anthropic_error(status: int, message: str) -> web.Response:
        kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error"}[status]
        return web.json_response({"type": "error", "error": {"type": kind, "message": message}}, status=status)

    async def _claude(self, body: dict[str, Any], version: str, model: str, entry: Any) -> web.Response:
        given = body.get("anthropic_version")
        if given != version and not (isinstance(given, str) and DATED_VERSION.match(given)):
            return self._anthropic_error(400, f"anthropic_version: Input should be '{version}'")
        request = {k: v for k, v in body.items() if k != "anthropic_version"}
        status, reply = await self.server.answer_item("anthropic", {**request, "model": model})
        entry.outcome = "ok" if status == 200 else "bad_request"
        return web.json_response(reply, status=status)

    async def _bedrock(self, request: web.Request, entry: Any) -> web.Response:
        body = await self._note("bedrock", request, entry)
        auth = request.headers.get("Authorization", "")
        key = self.server.api_key
        if not (SIGV4.match(auth) or (key is not None and auth == f"Bearer {key}")):
            return web.json_response({"message": "The security token included in the request is invalid."},
                                     status=403)
        if body is None:
            return web.json_response({"message": "Malformed input request, please reformat your input "
                                                 "and try again."}, status=400)
        if "model" in body:
            return web.json_response({"message": "Malformed input request: #: extraneous key [model] is "
                                                 "not permitted, please reformat your input and try again."},
                                     status=400)
        return await self._claude(body, BEDROCK_VERSION, request.match_info["model_id"], entry)

    async def _vertex(self, request: web.Request, entry: Any) -> web.Response:
        body = await self._note("vertex", request, entry)
        model, _, method = request.match_info["target"].partition(":")
        if request.headers.get("Authorization") != f"Bearer {self.access_token}":
            return web.json_response({"error": {"code": 401, "message": "Request had invalid authentication "
                                                "credentials.", "status": "UNAUTHENTICATED"}}, status=401)
        if method != "rawPredict" or body is None:
            return web.json_response({"error": {"code": 404, "message": "Not found", "status": "NOT_FOUND"}},
                                     status=404)
        if "model" in body:
            return self._anthropic_error(400, "model: Extra inputs are not permitted")
        return await self._claude(body, VERTEX_VERSION, model, entry)

    async def _azure(self, request: web.Request, entry: Any) -> web.Response:
        body = await self._note("azure", request, entry)
        if "api-version" not in request.query:
            return web.json_response({"error": {"code": "404", "message": "Resource not found"}}, status=404)
        if self.server.api_key is not None and request.headers.get("api-key") != self.server.api_key:
            return web.json_response({"error": {"code": "401", "message": AZURE_DENIED}}, status=401)
        if body is None:
            return web.json_response({"error": {"code": "400", "message": "invalid JSON"}}, status=400)
        deployment = request.match_info["deployment"]
        status, reply = await self.server.answer_item("openai", {**body, "model": deployment})
        entry.outcome = "ok" if status == 200 else "bad_request"
        return web.json_response(reply, status=status)
