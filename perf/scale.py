"""Paper scale: simulate against the mock server from 1k to 100k conversations, and the paper-size
study (10 targets × 20 metrics × 10 base scenarios × 4 variants × 3 samples = 24,000 conversations
of 6 turns, 288,000 calls; one target id stands in for the ten) direct and through the batch API.

Every measurement runs in a process of its own (its peak memory is its own), with the real
simulate core (`simulate_all`, `ModelClient`, the OpenAI provider) against the mock server in
another process, whose user model never ends a conversation early, so every conversation makes
exactly 2 × turns calls. Direct calls take `LATENCY_S` each at concurrency `CONCURRENCY`; batched
calls go out as OpenAI batches (collected for 1 s, polled every 0.5 s, ended by the mock on its
first poll), so batch wall time is the client's and the server's work, not a provider's queue
(a real provider returns within 24 hours; what the mode saves is half the price).

Printed per row: conversations, calls, error rows, wall time, client CPU (user + system) in total
and per call, and peak resident memory of the client process; then the growth of CPU and memory
per conversation from 1k to 100k. The response cache is on, in a fresh directory, as a first run.

Run: .venv/bin/python perf/scale.py [--quick]   (--quick: 1k and 10k, and a tenth of the study)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time

from common import benchmark, conversation_server, machine, scenarios

LATENCY_S = 0.2
CONCURRENCY = 1024
STUDY_CONVERSATIONS = 10 * 20 * 10 * 4 * 3
STUDY_TURNS = 6


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def play(base_url: str, n: int, turns: int, batch: bool) -> dict:
    from pressurebench.llm.batches import BatchSettings
    from pressurebench.llm.client import ModelClient
    from pressurebench.params import ModelSpec
    from pressurebench.stages.simulate import Simulation, simulate_all

    spec = ModelSpec(provider="openai", model="perf-model", base_url=base_url, max_tokens=256,
                     timeout_s=120, batch=batch, **({} if batch else {"max_concurrency": CONCURRENCY}))
    sim = Simulation(benchmark=benchmark(), user_model="m", target="m", turns=turns, landmarks=True,
                     perfunctory=0.0)
    rows_in = scenarios(n)
    settings = BatchSettings(max_requests=50000, collect_s=1.0, poll_s=0.5, max_wait_s=3600)
    with tempfile.TemporaryDirectory(prefix="pb-scale-") as cache_dir:
        async with ModelClient({"m": spec}, cache_dir, batch=settings) as client:
            cpu0, t0 = cpu_seconds(), time.perf_counter()
            rows = await simulate_all(client, sim, rows_in, num_samples=1)
            wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
            calls = client.usage()["m"].calls
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"mode": "batch" if batch else "direct", "conversations": n, "turns": turns, "calls": calls,
            "errors": sum(r.status == "error" for r in rows), "wall_s": wall, "cpu_s": cpu,
            "peak_mib": peak_mib}


def measure(base_url: str, n: int, turns: int, batch: bool) -> dict:
    """One measurement in a fresh process."""
    out = subprocess.run(
        [sys.executable, __file__, "--one", base_url, str(n), str(turns), "batch" if batch else "direct"],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def row(r: dict) -> str:
    return (f"{r['mode']:<7} {r['conversations']:>7} {r['turns']:>5} {r['calls']:>8} {r['errors']:>6} "
            f"{r['wall_s']:>8.1f} {r['cpu_s']:>8.1f} {1000 * r['cpu_s'] / r['calls']:>10.3f} "
            f"{r['peak_mib']:>9.0f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--one", nargs=4, metavar=("URL", "N", "TURNS", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        url, n, turns, mode = args.one
        print(json.dumps(asyncio.run(play(url, int(n), int(turns), mode == "batch"))))
        return 0

    growth = (1000, 10000) if args.quick else (1000, 10000, 100000)
    study = STUDY_CONVERSATIONS // 10 if args.quick else STUDY_CONVERSATIONS
    print(f"scale: simulate against the mock server, latency {LATENCY_S:g} s, direct concurrency {CONCURRENCY}")
    print(f"machine: {machine()}")
    head = (f"{'mode':<7} {'convs':>7} {'turns':>5} {'calls':>8} {'errors':>6} {'wall s':>8} "
            f"{'CPU s':>8} {'CPU ms/call':>10} {'peak MiB':>9}")
    print(head)
    print("-" * len(head))
    results = []
    with conversation_server(LATENCY_S) as base_url:
        for n in growth:
            results.append(measure(base_url, n, 1, batch=False))
            print(row(results[-1]), flush=True)
        for batch in (False, True):
            results.append(measure(base_url, study, STUDY_TURNS, batch=batch))
            print(row(results[-1]), flush=True)
    first, last = results[0], results[len(growth) - 1]
    scale = last["conversations"] / first["conversations"]
    print(f"growth {first['conversations']} -> {last['conversations']} conversations (x{scale:g}): "
          f"wall x{last['wall_s'] / first['wall_s']:.1f}, CPU x{last['cpu_s'] / first['cpu_s']:.1f}, "
          f"peak memory x{last['peak_mib'] / first['peak_mib']:.1f}")
    direct, batched = results[-2], results[-1]
    print(f"study ({study} conversations x {STUDY_TURNS} turns): batch / direct wall "
          f"x{batched['wall_s'] / direct['wall_s']:.2f}, client CPU x{batched['cpu_s'] / direct['cpu_s']:.2f}; "
          "batched calls are billed at half the price")
    print(f"load average after: {machine().rsplit('load average ', 1)[1]}")
    ok = all(r["errors"] == 0 and r["calls"] == 2 * r["turns"] * r["conversations"] for r in results)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
