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
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

CACHE_FORMAT = 1


def cache_key(material: dict) -> str:
    blob = json.dumps({"format": CACHE_FORMAT, **material}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ResponseCache:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            self.misses += 1
            return None
        except (OSError, json.JSONDecodeError):
            # A damaged entry is a miss: the call is made again and the entry rewritten.
            self.misses += 1
            return None
        self.hits += 1
        return entry["response"]

    def put(self, key: str, material: dict, response: dict) -> None:
        path = self._path(key)
        text = json.dumps({"key": key, "request": material, "response": response}, ensure_ascii=False)
        try:
            fd, tmp = self._temp_file(path)
        except FileNotFoundError:  # the shard's first entry (mkdir on every put costs ~50 µs)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = self._temp_file(path)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @staticmethod
    def _temp_file(path: Path) -> tuple[int, str]:
        return tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}
