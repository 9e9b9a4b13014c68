"""A stage's recorded model calls: the study's primary data, versioned and shared by DVC.

Why a record beside the response cache: `.pbcache/` is a local checkpoint (one
file per call, written as each call answers, git-ignored), and llama.cpp's
floating point or an API model's sampling makes a fresh call's reply differ
from the recorded one. What reproduces a study bit for bit is the replies it
got, so each stage writes the calls it used to `<stage>.calls.jsonl` beside its
manifest, and dvc.yaml declares that file an output of the stage: `dvc push`
uploads it, `dvc pull` brings it to a colleague's clone.

Why one file per stage: DVC hashes, pushes and pulls one object per file. A
study of 300,000 calls stays a few dozen objects, not 300,000
(perf/call_record.py measures loading and writing such a record).

The format: one JSON line per call, `{"key", "request", "response"}`, where
`request` is the cache key's material (provider, model, base URL, messages,
sampling settings, schema, sample, the provider's own material) and `response`
the reply as the cache holds it. Lines are sorted by key and written in one
canonical form (sorted object keys, no spaces, UTF-8), so the same calls give
the same bytes on every machine and a diff of two records shows what changed.
Credentials are no part of a request's material; the record is still checked
for every key of the registry before it is written, and refused if one occurs.

How a stage uses it: the model client opens the stage's previous record (its
`persist: true` keeps it in place while DVC re-runs the stage) as a read-only
layer in front of `.pbcache/`: a call found there replays the recorded reply,
even where the local cache holds another one for the same key (a reply the
embedded model gave on another CPU, say). At the end of the run the stage
writes exactly the calls it used this run: replayed, taken from `.pbcache/` or
made anew. Opening reads only each line's key (the key is the line's first
field, at a fixed offset); a line is parsed, validated and checked against its
key only when a call asks for it.
"""

from __future__ import annotations

import json
import mmap
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigError, PressurebenchError, config_error_from_validation
from .cache import cache_key
from .types import FinishReason

_PREFIX = b'{"key":"'
_KEY_END = len(_PREFIX) + 64
NEWLINE = b"\n"


class RecordedResponse(BaseModel):
    """A reply as the client replays it (`llm.types.ProviderResponse`)."""

    model_config = ConfigDict(extra="forbid")

    text: str | None
    finish_reason: FinishReason
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    model_version: str | None
    refusal: str | None
    reasoning_tokens: int = Field(ge=0)


class RecordedCall(BaseModel):
    """One line of a record: a call's cache key, what determined its answer, and the answer."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(pattern=r"^[0-9a-f]{64}$")
    request: dict[str, Any]
    response: RecordedResponse


def record_line(key: str, request: dict, response: dict) -> bytes:
    """The canonical bytes of one call (no newline), validated first."""
    RecordedCall.model_validate({"key": key, "request": request, "response": response})
    return json_bytes({"key": key, "request": request, "response": response})


def json_bytes(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class CallRecord:
    """The previous record of one stage (read-only) and the calls this run used.

    `replay` answers from the previous record; `keep_replayed` and `keep` note a call
    this run used (replayed, or answered elsewhere); `write` replaces the record with
    exactly the kept calls. A key kept twice keeps its last answer, as the cache does.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.replayed = 0
        self._file = None
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
            if data[pos:len(_PREFIX) + pos] != _PREFIX or data[pos + _KEY_END:pos + _KEY_END + 1] != b'"':
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
        try:
            call = RecordedCall.model_validate_json(self._line(pos))
        except ValidationError as exc:
            raise config_error_from_validation(self.path, exc, prefix=self._where(pos)) from None
        if cache_key(call.request) != key:
            raise self._damaged(pos, "its key is not the hash of its request (the line was edited)")
        return call.response.model_dump()

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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
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
                fh.flush()
                os.fsync(fh.fileno())
            self.close()
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return len(self._used)

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        self._map = b""
        if self._file is not None:
            self._file.close()
            self._file = None
