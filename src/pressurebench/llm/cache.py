"""Content-addressed response cache: the pipeline's checkpoint.

The key hashes everything that determines an answer, so re-running after a
crash replays finished calls for free while any change to a prompt, a sampling
parameter, the schema or the sample index misses exactly where it should.
Only completed provider responses are stored, never transport errors, and never
credentials (they are not part of the key material).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..io import atomic_write_text

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
        atomic_write_text(
            self._path(key),
            json.dumps({"key": key, "request": material, "response": response}, ensure_ascii=False),
        )

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}
