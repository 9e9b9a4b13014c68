"""Content-addressed response cache: the pipeline's checkpoint.

The key hashes everything that determines an answer, so re-running after a
crash replays finished calls for free while any change to a prompt, a sampling
parameter, the schema or the sample index misses exactly where it should.
Only answers are stored: never transport errors or failed replies (empty,
refused, cut off where that is not accepted; `client.reply_problem`), which a
re-run asks again, and never credentials (they are not part of the key material).

Entries are written atomically but not fsynced: a write runs on the event loop
once per call, and an fsync there stalls every call in flight for milliseconds
(see perf/README.md). A killed process loses nothing (the data is in the page
cache); an entry damaged by a power cut reads as a miss and is asked again.

An entry is replayed only after it proves to be this call's: it names the key it
is read under, its stored request hashes to that key, and its response has the
fields and types of a provider's reply. An entry that is unreadable, cut short,
not UTF-8, of another call (copied over this one) or of the wrong shape is a
miss: the call is asked again and the entry rewritten. Such repairs are counted
(`repaired`, the stage's `cache_repaired`) and said once per run on stderr.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import MISSING, fields
from pathlib import Path
from typing import NotRequired, get_type_hints

from pydantic import ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from ..io import atomic_write
from .types import ProviderResponse

CACHE_FORMAT = 1


def _response_shape() -> TypeAdapter:
    """A stored response's shape: the fields of `ProviderResponse`, strictly typed, no others."""
    required = {f.name for f in fields(ProviderResponse) if f.default is MISSING}
    # Built from the dataclass at run time, which the static TypedDict form cannot spell.
    shape = TypedDict("StoredResponse", {  # type: ignore[misc]
        name: kind if name in required else NotRequired[kind]
        for name, kind in get_type_hints(ProviderResponse).items()
    })
    # pydantic reads a TypedDict's config from this attribute, which the type does not declare.
    shape.__pydantic_config__ = ConfigDict(extra="forbid", strict=True)  # type: ignore[attr-defined]
    return TypeAdapter(shape)


_RESPONSE = _response_shape()


def cache_key(material: dict) -> str:
    blob = json.dumps({"format": CACHE_FORMAT, **material}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class DamagedEntry(Exception):
    """A cache entry that cannot be replayed for the call it is read for."""


def verified_response(key: str, raw: bytes) -> dict:
    """The response of an entry read under `key`, once the entry proves to be that call's."""
    try:
        entry = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise DamagedEntry("not UTF-8") from None
    except (json.JSONDecodeError, ValueError) as exc:
        raise DamagedEntry(f"not JSON ({exc})") from None
    if not isinstance(entry, dict) or not {"key", "request", "response"} <= entry.keys():
        raise DamagedEntry("not an entry (key, request and response)")
    if entry["key"] != key:
        raise DamagedEntry("it is the entry of another call (its key differs)")
    if not isinstance(entry["request"], dict) or cache_key(entry["request"]) != key:
        raise DamagedEntry("its stored request does not hash to its key")
    try:
        _RESPONSE.validate_python(entry["response"])
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(str(p) for p in problem["loc"]) or "response"
        raise DamagedEntry(f"invalid response ({where}: {problem['msg']})") from None
    return entry["response"]


class ResponseCache:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.hits = 0
        self.misses = 0
        self.repaired = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str, *, again: bool = False) -> dict | None:
        """The cached response of the call with this key, or None (a miss).

        `again`: the same call's second look, after waiting for another process that
        was asking it; its miss was counted by the first look, so only a hit counts
        (as a hit instead of that miss).
        """
        path = self._path(key)
        try:
            response = verified_response(key, path.read_bytes())
        except FileNotFoundError:
            response = None
        except (OSError, DamagedEntry) as exc:
            response = None
            if not again:
                self._repairing(path, exc)
        if again:
            if response is not None:
                self.hits += 1
                self.misses -= 1
            return response
        if response is None:
            self.misses += 1
        else:
            self.hits += 1
        return response

    def _repairing(self, path: Path, exc: Exception) -> None:
        """Count a damaged entry, and say so on the first one (the rest are counted)."""
        self.repaired += 1
        if self.repaired == 1:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            print(
                f"pressurebench: damaged cache entry {path} ({reason}): the call is asked again "
                "and the entry rewritten (damaged entries are counted as cache_repaired in the "
                "stage's cost file)",
                file=sys.stderr, flush=True,
            )

    def put(self, key: str, material: dict, response: dict) -> None:
        path = self._path(key)
        text = json.dumps({"key": key, "request": material, "response": response}, ensure_ascii=False)
        with atomic_write(path, durable=False) as fh:
            fh.write(text)

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "repaired": self.repaired}
