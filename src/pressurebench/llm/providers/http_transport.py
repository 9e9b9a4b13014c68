"""JSON over HTTP on aiohttp, for providers whose SDK costs more CPU per call than the call itself.

At a few hundred calls in flight the official SDKs spend 1–6 ms of CPU per
call in request building, typed transforms and their connection pool, enough
to keep the client from using the concurrency a provider allows (see
perf/README.md). This sends the same JSON with the same trust store, honours
the same proxy variables, and turns transport failures into `RetryableError`;
HTTP status handling stays with the caller.
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import sys
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

import aiohttp

from ..types import RetryableError


def ssl_context() -> ssl.SSLContext:
    """The certificates HTTPS calls trust: those the providers' SDKs trust (their HTTP library's
    default), so a key and endpoint that work with an SDK work here.

    `SSL_CERT_FILE` or `SSL_CERT_DIR` when set (a company proxy's certificate); on macOS and
    Windows the operating system's trust store (`truststore`); elsewhere OpenSSL's own paths.
    """
    if cafile := os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=cafile)
    if capath := os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=capath)
    if sys.platform in ("darwin", "win32"):
        import truststore

        return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return ssl.create_default_context()


@dataclass
class HttpReply:
    status: int
    headers: Mapping[str, str]
    body: bytes


def sdk_endpoint(sdk_client, path: str) -> tuple[str, dict[str, str]]:
    """The URL of `path` and the headers an official SDK client would send with every request.

    Read once from the configured client, so base URL, auth, API version,
    organisation and the environment variables the SDK honours stay the SDK's
    decisions. Its per-request telemetry headers are left out.
    """
    url = str(sdk_client.base_url).rstrip("/") + path
    headers = {
        k: v for k, v in {**sdk_client.default_headers, **sdk_client.auth_headers}.items()
        if isinstance(v, str) and k.lower() != "x-stainless-async"
    }
    return url, headers


def encode_json(body: dict) -> bytes:
    """Compact UTF-8 JSON, as the SDKs send it."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def env_proxy(url: str) -> str | None:
    """The proxy that HTTP(S)_PROXY / NO_PROXY choose for `url`, as httpx would use it."""
    parts = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return urllib.request.getproxies().get(parts.scheme)


class JsonTransport:
    """One connection pool per event loop, at most `max_connections` connections.

    The pool is created in the loop that first uses it (aiohttp sessions are
    bound to a loop); a later loop gets its own. Proxies come from the
    environment, looked up once per URL: aiohttp's own `trust_env` looks them
    (and ~/.netrc) up in a worker thread on every request.
    """

    def __init__(self, who: str, max_connections: int):
        self.who = who
        self.max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proxies: dict[str, str | None] = {}

    def _pool(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop:
            connector = aiohttp.TCPConnector(
                limit=self.max_connections,
                keepalive_timeout=30,
                ssl=ssl_context(),
            )
            self._session = aiohttp.ClientSession(connector=connector)
            self._loop = loop
        return self._session

    async def post(self, url: str, body: dict, headers: dict[str, str], timeout_s: float) -> HttpReply:
        """POST `body` as JSON; no reply byte for `timeout_s` or a broken connection is retryable."""
        return await self.send("POST", url, headers, timeout_s, encode_json(body))

    async def send(self, method: str, url: str, headers: dict[str, str], timeout_s: float,
                   data=None) -> HttpReply:
        """Any request (`data`: bytes, or aiohttp form data for an upload); failures as for `post`."""
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=timeout_s, sock_read=timeout_s)
        if url not in self._proxies:
            self._proxies[url] = env_proxy(url)
        try:
            async with self._pool().request(
                method, url, data=data, headers=headers, timeout=timeout, proxy=self._proxies[url]
            ) as resp:
                return HttpReply(resp.status, resp.headers, await resp.read())
        except TimeoutError:
            raise RetryableError(f"{self.who}: timed out after {timeout_s:g}s") from None
        except aiohttp.ClientError as exc:
            # str, never repr: the repr of a response error holds the request headers, key included.
            detail = " ".join(str(exc).split())
            raise RetryableError(f"{self.who}: connection error: {type(exc).__name__}: {detail}") from None

    async def aclose(self) -> None:
        if self._session is not None and self._loop is asyncio.get_running_loop():
            await self._session.close()
        self._session = self._loop = None
