"""Map HTTP status errors to retry / reject / abort, the same way for every provider."""

from __future__ import annotations

import json
import time
from email.utils import parsedate_to_datetime

from ..types import ProviderAuthError, ProviderNotFound, RejectedError, RetryableError

RETRYABLE_STATUS = {408, 409, 425, 429}
# A 404 from a completion endpoint: the model name or the base_url, never the key.
NOT_FOUND = ("not found: this endpoint serves no model of this name, or the base_url leads to no "
             "API of this provider; `pressurebench check` asks the endpoint's model list and says "
             "which")


def parse_retry_after(headers) -> float | None:
    """Seconds to wait from `retry-after-ms` / `retry-after` (seconds or an HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def classify_status(status: int, message: str, headers, who: str) -> Exception:
    reason = f"{who}: HTTP {status}: {message}"
    if status in RETRYABLE_STATUS or status >= 500:
        return RetryableError(reason, parse_retry_after(headers), rate_limited=status == 429)
    if status in (401, 403):
        return ProviderAuthError(reason)
    if status == 404:
        return ProviderNotFound(f"{reason} ({NOT_FOUND})")
    return RejectedError(reason)


def body_error_message(body) -> str | None:
    """`error.message` (or a top-level `message`) of a parsed error body; both APIs use this shape."""
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return None


def reply_error_message(status: int, raw: bytes) -> str:
    """The provider's own error message from a raw error reply, else the start of the reply."""
    try:
        message = body_error_message(json.loads(raw))
    except ValueError:
        message = None
    text = raw.decode("utf-8", "replace").strip()[:300]
    return message or text or f"no body (HTTP {status})"
