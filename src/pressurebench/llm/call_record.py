"""A stage's recorded model calls: the study's primary data, versioned and shared by DVC.

Why a record beside the response cache: `.pbcache/` is a local checkpoint (one
file per call, written as each call answers, git-ignored), and llama.cpp's
floating point or an API model's sampling makes a fresh call's reply differ
from the recorded one. What reproduces a study bit for bit is the replies it
got, so each stage writes the calls it used to `calls.jsonl` in its folder, beside
its manifest; dvc.yaml keeps that folder across runs (`persist: true`) and versions
it with the stage's other outputs: `dvc push` uploads it, `dvc pull` brings it to a
colleague's clone.

Why one file per stage: DVC hashes, pushes and pulls one object per file. A
study of 300,000 calls stays a few dozen objects, not 300,000
(perf/call_record.py measures loading and writing such a record).

The format: one JSON line per call, `{"key", "request", "response"}`, where
`request` is exactly what the cache key hashes (the cache format, provider,
model, base URL, messages, sampling settings, schema, sample, the provider's own
material) and `response` the reply as the cache holds it. Lines are sorted by
key and written as `json.dumps(..., sort_keys=True, ensure_ascii=False)`, the
form the key is computed on: the same calls give the same bytes on every
machine, and anyone can check a line, since its key is the SHA-256 of the bytes
of its request as they stand in the line.
Credentials are no part of a request's material; the record is still checked
for every key of the registry before it is written, and refused if one occurs.

How a stage uses it: the model client opens the stage's previous record (its
`persist: true` keeps it in place while DVC re-runs the stage) as a read-only
layer in front of `.pbcache/`: a call found there replays the recorded reply,
even where the local cache holds another one for the same key (a reply the
embedded model gave on another CPU, say). At the end of the run the stage
writes exactly the calls it used this run: replayed, taken from `.pbcache/` or
made anew. Opening reads only each line's key (the key is the line's first
field, at a fixed offset); a line is checked against its key (one hash of its
request's bytes, no parsing) and its reply parsed and validated only when a
call asks for it.
"""

from __future__ import annotations

import hashlib
import io
import json
import mmap
import os
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from ..errors import ConfigError, PressurebenchError, config_error_from_validation
from ..io import atomic_write
from ..schemas import Row
from .cache import CACHE_FORMAT
from .types import FinishReason

_PREFIX = b'{"key": "'
_KEY_END = len(_PREFIX) + 64
_REQUEST = b'", "request": {'
_REQUEST_AT = _KEY_END + len(_REQUEST) - 1
# The last field: a reply's strings escape their quotes, so this is its last occurrence.
_RESPONSE = b', "response": '
NEWLINE = b"\n"


class RecordedResponse(Row):
    """A reply as the client replays it (`llm.types.ProviderResponse`)."""

    text: str | None
    finish_reason: FinishReason
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    model_version: str | None
    refusal: str | None
    reasoning_tokens: int = Field(ge=0)
    # Of input_tokens, read from and written to the provider's prompt cache; left out of a line
    # when 0, so the records of calls that use no prompt cache read as they did before.
    cached_input_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)
    cost_usd: float | None = Field(default=None, ge=0, description="what the call cost when made")
    latency_s: float | None = Field(default=None, ge=0, description="how long it took when made")


PROMPT_CACHE_FIELDS = ("cached_input_tokens", "cache_write_tokens")


class RecordedCall(Row):
    """One line of a record: a call's cache key, what determined its answer, and the answer."""

    key: str = Field(pattern=r"^[0-9a-f]{64}$")
    request: dict[str, Any]
    response: RecordedResponse


def record_line(key: str, material: dict, response: dict) -> bytes:
    """The bytes of one call (no newline), validated first; its request is the key's material
    as `cache_key` hashes it, which the line's own check confirms."""
    response = {k: v for k, v in response.items() if k not in PROMPT_CACHE_FIELDS or v}
    row = {"key": key, "request": {"format": CACHE_FORMAT, **material}, "response": response}
    RecordedCall.model_validate(row)
    line = json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8")
    if _request_digest(line) != key:
        raise PressurebenchError(f"call {key[:12]}…: its key is not the hash of its request as "
                                 "recorded (the cache key and the record disagree on the form)")
    return line


def _request_digest(line: bytes) -> str | None:
    """The SHA-256 of the request's bytes in `line`, or None if the line has no request there."""
    end = line.rfind(_RESPONSE)
    if end < _REQUEST_AT or line[_KEY_END:_REQUEST_AT + 1] != _REQUEST:
        return None
    return hashlib.sha256(line[_REQUEST_AT:end]).hexdigest()


class CallRecord:
    """The previous record of one stage (read-only) and the calls this run used.

    `replay` answers from the previous record; `keep_replayed` and `keep` note a call
    this run used (replayed, or answered elsewhere); `write` replaces the record with
    exactly the kept calls. A key kept twice keeps its last answer, as the cache does.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.replayed = 0
        self._file: io.BufferedReader | None = None
        self._map: mmap.mmap | bytes = b""
        self._offsets: dict[str, int] = {}
        # key -> offset of its line in the previous record, or (request, response) of a call
        # answered from elsewhere
        self._used: dict[str, int | tuple[dict, dict]] = {}
        self._open()

    def _open(self) -> None:
        try:
            self._file = open(self.path, "rb")  # noqa: SIM115 - kept open for the mapping
        except FileNotFoundError:
            return
        try:
            size = os.fstat(self._file.fileno()).st_size
            if size:
                self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            self._offsets = self._index()
        except BaseException:
            self.close()
            raise

    def _index(self) -> dict[str, int]:
        """Each line's key and where the line starts; a line that does not start with a key
        is damage (DVC checks the whole file's hash, so only a hand edit gets here)."""
        data, offsets, pos, size = self._map, {}, 0, len(self._map)
        while pos < size:
            end = data.find(NEWLINE, pos)
            end = size if end < 0 else end
            if (data[pos:pos + len(_PREFIX)] != _PREFIX
                    or data[pos + _KEY_END:pos + _REQUEST_AT + 1] != _REQUEST):
                raise self._damaged(pos, "not a recorded call (each line starts with its key)")
            key = data[pos + len(_PREFIX):pos + _KEY_END].decode("ascii", errors="replace")
            if key in offsets:
                raise self._damaged(pos, f"call {key[:12]}… is recorded twice")
            offsets[key] = pos
            pos = end + 1
        return offsets

    def _line(self, pos: int) -> bytes:
        end = self._map.find(NEWLINE, pos)
        return self._map[pos:end if end >= 0 else len(self._map)]

    def _where(self, pos: int) -> str:
        return f"line {self._map[:pos].count(NEWLINE) + 1}"

    def _damaged(self, pos: int, why: str) -> ConfigError:
        return ConfigError(self.path, f"{why}; restore it with `dvc checkout {self.path}` "
                                      "or delete it to ask its calls again", self._where(pos))

    def replay(self, key: str) -> dict | None:
        """The recorded reply for `key` (as `ProviderResponse` fields), or None."""
        pos = self._offsets.get(key)
        if pos is None:
            return None
        line = self._line(pos)
        if _request_digest(line) != key:
            raise self._damaged(pos, "its key is not the hash of its request (the line was edited)")
        if not line.endswith(b"}"):
            raise self._damaged(pos, "the line is cut short")
        try:
            response = RecordedResponse.model_validate_json(line[line.rfind(_RESPONSE) + len(_RESPONSE):-1])
        except ValidationError as exc:
            raise config_error_from_validation(self.path, exc, prefix=f"{self._where(pos)}.response") from None
        return response.model_dump()

    def keep_replayed(self, key: str) -> None:
        """Note that this run used the recorded reply for `key`."""
        self._used[key] = self._offsets[key]
        self.replayed += 1

    def keep(self, key: str, request: dict, response: dict) -> None:
        """Note a call this run used, answered from the local cache or by the provider."""
        self._used[key] = (request, response)

    def write(self, secrets: dict[str, str] | None = None) -> int:
        """Replace the record with the calls this run used, sorted by key; return their number.

        `secrets` maps a credential's name (for the message) to its value: a record that
        would contain one is not written.
        """
        needles = {name: value.encode("utf-8") for name, value in (secrets or {}).items() if value}
        with atomic_write(self.path, binary=True) as fh:
            for key in sorted(self._used):
                used = self._used[key]
                line = self._line(used) if isinstance(used, int) else record_line(key, *used)
                for name, needle in needles.items():
                    if needle in line:
                        raise PressurebenchError(
                            f"{self.path}: call {key[:12]}… would record the value of {name}; "
                            "credentials never go into a record (take it out of the prompts and "
                            "of the model's settings sent with requests, such as extra_body)")
                fh.write(line)
                fh.write(NEWLINE)
            self.close()  # the old record's map, before the new file takes its name
        return len(self._used)

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        self._map = b""
        if self._file is not None:
            self._file.close()
            self._file = None
