"""A stage's call record at 300,000 calls: writing it, opening it, replaying every call, rewriting it.

A study's recorded calls travel with `dvc push` as one file per stage
(`llm.call_record`). This measures what that costs a stage at the size of a
large study, with calls shaped like the pipeline's (a judge call: system
prompt, transcript of three turns, the verdict schema; a target call: the
same conversation as text; replies of a few hundred characters):

1. a run that answered every call anew writes the record (validation,
   canonical JSON, the credential check, one fsync);
2. the next run opens it (indexes each line's key);
3. replays every call from it (parses, validates and checks each line against
   its key) and
4. rewrites it (the lines are copied as they are);
5. DVC hashes the file once (md5) to commit and push it.

For scale, the same calls' replay from the per-call response cache
(`.pbcache/`, one file per call) is timed on a sample. Goals: the record's
steps 1-4 together cost a stage less per call than the client's own CPU budget
per call (1 ms, `orchestration.py`), and the rewritten record is byte-identical.

Run: .venv/bin/python perf/call_record.py [--calls 300000]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

from common import machine

from pressurebench.llm.cache import ResponseCache, cache_key
from pressurebench.llm.call_record import CallRecord
from pressurebench.schemas import JudgeOutput

CACHE_SAMPLE = 20_000
BUDGET_PER_CALL_S = 1e-3
WORDS = ("plan", "budget", "honest", "really", "think", "should", "risk", "numbers", "my", "the",
         "friend", "says", "sure", "but", "again", "why", "would", "that", "work", "please")


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def call(i: int, rng: random.Random) -> tuple[str, dict, dict]:
    """One call as the client records it: (key, request material, response)."""
    transcript = []
    for _ in range(3):
        transcript += [{"role": "user", "content": sentence(rng, 30)},
                       {"role": "assistant", "content": sentence(rng, 45)}]
    judge = i % 2 == 0
    material = {
        "provider": "openai", "model": "gpt-4.1-mini", "base_url": None,
        "messages": [{"role": "system", "content": sentence(rng, 90)}, *transcript],
        "temperature": 0.7, "top_p": None, "max_tokens": 512, "seed": None,
        "schema": JudgeOutput.model_json_schema() if judge else None, "sample": i % 3,
        "structured_output": "json_schema", "strict": True, "token_limit_field": "max_completion_tokens",
        "reasoning": False, "reasoning_effort": None, "reasoning_tokens": None, "extra_body": None,
    }
    text = (f'{{"justification": "{sentence(rng, 40)}", "present": {str(i % 3 == 0).lower()}}}'
            if judge else sentence(rng, 60))
    response = {"text": text, "finish_reason": "stop", "input_tokens": 900, "output_tokens": 80,
                "model_version": "gpt-4.1-mini-2025-04-14", "refusal": None, "reasoning_tokens": 0}
    return cache_key(material), material, response


def timed(fn) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def md5_of(path: Path) -> str:
    """The file's md5, read in chunks as DVC reads it."""
    digest = hashlib.md5()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300_000)
    args = parser.parse_args()
    print(machine())
    rng = random.Random(0)
    calls = [call(i, rng) for i in range(args.calls)]
    secrets = {"$OPENAI_API_KEY": "sk-" + "x" * 48, "$ANTHROPIC_API_KEY": "sk-ant-" + "y" * 90}
    base_rss = peak_rss_mb()

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "calls.jsonl"
        fresh = CallRecord(path)
        for key, material, response in calls:
            fresh.keep(key, material, response)
        write_s, _ = timed(lambda: fresh.write(secrets))
        size_mb = path.stat().st_size / 1e6

        open_s, record = timed(lambda: CallRecord(path))

        def replay_all() -> None:
            for key, _, _ in calls:
                assert record.replay(key) is not None
                record.keep_replayed(key)

        replay_s, _ = timed(replay_all)
        md5_s, before = timed(lambda: md5_of(path))
        rewrite_s, _ = timed(lambda: record.write(secrets))
        identical = md5_of(path) == before
        record_rss = peak_rss_mb() - base_rss

        sample = calls[:CACHE_SAMPLE]
        cache = ResponseCache(Path(tmp) / "cache")
        put_s, _ = timed(lambda: [cache.put(k, m, r) for k, m, r in sample])
        get_s, _ = timed(lambda: [cache.get(k) for k, _, _ in sample])

    n = args.calls
    total = write_s + open_s + replay_s + rewrite_s
    replay_us, get_us = replay_s / n * 1e6, get_s / len(sample) * 1e6
    print(f"record of {n:,} calls: {size_mb:,.0f} MB, one file; rewritten byte-identical: {identical}")
    print(f"{'step':<36} {'seconds':>8} {'µs/call':>8}")
    for step, seconds in (("1 write (a run of new calls)", write_s), ("2 open (index the keys)", open_s),
                          ("3 replay every call (parse, check)", replay_s),
                          ("4 rewrite (lines copied)", rewrite_s), ("5 md5 of the file (DVC)", md5_s)):
        print(f"{step:<36} {seconds:8.2f} {seconds / n * 1e6:8.1f}")
    print(f"peak memory beyond the calls themselves: {record_rss:,.0f} MB")
    print(f"response cache on {len(sample):,} of the calls: put {put_s / len(sample) * 1e6:.1f} µs/call, "
          f"get {get_us:.1f} µs/call ({n:,} files at full size)")
    print(f"record replay / cache replay per call: {replay_us / get_us:.2f}")
    print(f"the record's cost to a stage (steps 1-4): {total:.1f} s, {total / n * 1e6:.0f} µs/call "
          f"(goal < {BUDGET_PER_CALL_S * 1e6:.0f} µs/call)")
    ok = identical and total < BUDGET_PER_CALL_S * n
    print("goal met" if ok else "GOAL MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
