"""Files are written with the mode the user's umask gives a new file, as `open()` would.

Writers go through a temporary file, which is created readable by its owner only;
a shared lab server or a web server must still read what lands under the final name.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pressurebench.io import atomic_write_bytes, atomic_write_text, write_artifact
from pressurebench.llm.cache import ResponseCache, cache_key
from pressurebench.llm.call_record import CallRecord
from pressurebench.llm.spending import SpendingLedger
from pressurebench.schemas import Cost

MATERIAL = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "sample": 0}
RESPONSE = {"text": "hello", "finish_reason": "stop", "input_tokens": 3, "output_tokens": 1}


@pytest.fixture(params=[0o022, 0o027, 0o077], ids=["umask-022", "umask-027", "umask-077"])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def written_files(root: Path) -> list[Path]:
    atomic_write_text(root / "report.html", "<p>hi</p>")
    atomic_write_bytes(root / "labels" / "alice.jsonl", b"{}\n")
    write_artifact(root / "data" / "results.cost.json", Cost())
    cache = ResponseCache(root / "cache")
    key = cache_key(MATERIAL)
    cache.put(key, MATERIAL, RESPONSE)
    ledger = SpendingLedger(root / "cache", cap_usd=1.0)
    ledger.reserve(0.1)
    ledger.settle(0.1, 0.05)
    record = CallRecord(root / "data" / "simulate.calls.jsonl")
    record.keep(key, MATERIAL, {**RESPONSE, "model_version": None, "refusal": None, "reasoning_tokens": 0})
    record.write()
    return [root / "report.html", root / "labels" / "alice.jsonl", root / "data" / "results.cost.json",
            cache._path(key), ledger.path, record.path]


def test_written_files_get_the_mode_of_a_new_file_under_the_umask(tmp_path, umask):
    plain = tmp_path / "plain.txt"
    plain.write_text("as open() writes it")
    assert mode(plain) == 0o666 & ~umask
    for path in written_files(tmp_path):
        assert mode(path) == mode(plain), path
    assert os.umask(umask) == umask  # reading the umask left it as it was
