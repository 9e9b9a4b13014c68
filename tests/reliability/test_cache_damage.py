"""A damaged cache entry is asked again and rewritten: never an error row, never another call's reply.

Each kind of damage (an empty object, bytes that are not UTF-8, JSON cut short, the
entry of another call copied over this one) is put on a target reply the simulate
stage replays. The re-run must give the conversations the first run wrote, ask the
server exactly the damaged calls, count them in the cost file and say so once. The stage's
call record, which a re-run replays before the cache, is removed first (as after a run that
stopped before writing it), so the cache alone answers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reliability_support import BENCHMARK, MODEL_NAMES, PARAMS, check_cache_entries

from pressurebench.io import read_artifact
from pressurebench.llm.cache import DamagedEntry, ResponseCache, cache_key, verified_response
from pressurebench.params import load_params
from pressurebench.schemas import ConversationsFile, Cost
from pressurebench.stages import simulate

TARGET = "target-a"
RUN = Path("data") / BENCHMARK / "runs" / TARGET

MATERIAL = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "sample": 0}
OTHER = {**MATERIAL, "sample": 1}
RESPONSE = {"text": "hello", "finish_reason": "stop", "input_tokens": 3, "output_tokens": 1}


def damage(kind: str, path: Path, other: Path) -> None:
    if kind == "empty object":
        path.write_text("{}")
    elif kind == "not UTF-8":
        path.write_bytes(b'{"key": "\xff\xfe\xfa"}')
    elif kind == "cut short":
        path.write_bytes(path.read_bytes()[:60])
    elif kind == "another call's entry":
        path.write_bytes(other.read_bytes())
    else:
        raise AssertionError(kind)


KINDS = ["empty object", "not UTF-8", "cut short", "another call's entry"]


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_damage_is_a_counted_miss_and_is_rewritten(tmp_path, kind, capsys):
    cache = ResponseCache(tmp_path)
    key, other_key = cache_key(MATERIAL), cache_key(OTHER)
    cache.put(key, MATERIAL, RESPONSE)
    cache.put(other_key, OTHER, {**RESPONSE, "text": "the other call's reply"})
    damage(kind, cache._path(key), cache._path(other_key))
    assert cache.get(key) is None
    assert cache.stats() == {"hits": 0, "misses": 1, "repaired": 1}
    assert "damaged cache entry" in capsys.readouterr().err
    cache.put(key, MATERIAL, RESPONSE)
    assert cache.get(key) == RESPONSE
    assert cache.get(other_key)["text"] == "the other call's reply"


@pytest.mark.parametrize("response", [
    {**RESPONSE, "text": 7},
    {**RESPONSE, "finish_reason": "done"},
    {**RESPONSE, "input_tokens": True},
    {**RESPONSE, "surprise": 1},
    {"finish_reason": "stop"},
])
def test_an_entry_whose_response_is_not_a_reply_is_damaged(response):
    key = cache_key(MATERIAL)
    raw = json.dumps({"key": key, "request": MATERIAL, "response": response}).encode()
    with pytest.raises(DamagedEntry, match="invalid response"):
        verified_response(key, raw)


def test_an_entry_whose_request_is_not_its_key_is_damaged():
    key = cache_key(MATERIAL)
    raw = json.dumps({"key": key, "request": OTHER, "response": RESPONSE}).encode()
    with pytest.raises(DamagedEntry, match="does not hash to its key"):
        verified_response(key, raw)


def target_entries(cache_dir: Path) -> list[Path]:
    """The cache entries of the target's replies, in a fixed order."""
    name = MODEL_NAMES[TARGET]
    return sorted(
        p for p in cache_dir.rglob("*.json")
        if json.loads(p.read_text(encoding="utf-8"))["request"]["model"] == name
    )


def test_a_rerun_over_damaged_entries_asks_them_again_and_loses_nothing(proj, server, capsys):
    cache_dir = Path(load_params(PARAMS).run.cache_dir)
    before = read_artifact(RUN / "simulate" / "conversations.json", ConversationsFile).model_dump()
    entries = target_entries(cache_dir)
    assert len(entries) >= len(KINDS) + 1
    for kind, path in zip(KINDS, entries, strict=False):
        damage(kind, path, entries[-1])
    (RUN / "simulate" / "calls.jsonl").unlink()
    capsys.readouterr()

    simulate.run(PARAMS, BENCHMARK, TARGET)

    after = read_artifact(RUN / "simulate" / "conversations.json", ConversationsFile)
    assert all(row.status == "ok" for row in after.rows)
    assert after.model_dump()["rows"] == before["rows"]  # every reply is the one first answered
    assert sum(e.model == MODEL_NAMES[TARGET] for e in server.request_log) == len(KINDS)
    assert read_artifact(RUN / "simulate" / "cost.json", Cost).cache_repaired == len(KINDS)
    assert capsys.readouterr().err.count("damaged cache entry") == 1
    check_cache_entries(cache_dir)
    for path in entries:
        verified_response(path.stem, path.read_bytes())
