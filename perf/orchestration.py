"""How close simulate gets to the limit set by call latency and the provider's concurrency.

The real simulate core (`simulate_all` with the real `ModelClient` and a real
provider) plays 6-turn conversations against a mock server in its own process
that answers every call after exactly 1 s. With concurrency c and n
conversations of 12 sequential calls, no client can finish sooner than

    ideal = max(12 calls × 1 s, total calls × 1 s / c)

so efficiency = ideal / wall is 1.0 for a client with no overhead. simulate
gives each conversation one of c slots until it ends, so when c does not
divide n the last round runs part-full: `slot bound` = ceil(n / c) × 12 s is
the best that policy can do (at c = 256: 48 s, efficiency 0.977). Client CPU
per call is the process's user+system time over the run divided by the calls.

The levels run with the response cache off, so every call reaches the server
and the client alone is measured; the extra rows (`--cache-levels`) run with
the cache on in a fresh directory, as a first run does: every call misses and
its answer is written to disk.

Goals: efficiency ≥ 0.95 at concurrency 256, and ≤ 1 ms client CPU per call
(cache off).

Run: .venv/bin/python perf/orchestration.py [--levels 16 64 256 1024] [--cache-levels 256]
     [--provider openai|anthropic] [--profile 256]   (cProfile of one level, by own time)
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import math
import pstats
import resource
import sys
import tempfile
import time
from dataclasses import dataclass

from common import benchmark, conversation_server, machine, scenarios

from pressurebench.llm.client import ModelClient
from pressurebench.params import ModelSpec
from pressurebench.stages.simulate import Simulation, simulate_all

LEVELS = (16, 64, 256, 1024)
CACHE_LEVELS = (256,)
TURNS = 6
LATENCY_S = 1.0
GOAL_LEVEL, GOAL_EFFICIENCY, GOAL_CPU_MS = 256, 0.95, 1.0


@dataclass
class Level:
    concurrency: int
    cache: bool
    conversations: int
    calls: int
    errors: int
    wall_s: float
    cpu_s: float

    @property
    def ideal_s(self) -> float:
        return max(2 * TURNS * LATENCY_S, self.calls * LATENCY_S / self.concurrency)

    @property
    def slot_bound_s(self) -> float:
        return math.ceil(self.conversations / self.concurrency) * 2 * TURNS * LATENCY_S

    @property
    def efficiency(self) -> float:
        return self.ideal_s / self.wall_s

    @property
    def cpu_ms_per_call(self) -> float:
        return 1000 * self.cpu_s / self.calls


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def conversations_at(concurrency: int) -> int:
    return min(4 * concurrency, 1000)


async def play(
    base_url: str, concurrency: int, n: int, turns: int, use_cache: bool, provider: str
) -> Level:
    if provider == "anthropic":
        base_url = base_url.removesuffix("/v1")  # the Anthropic API path starts with /v1
    spec = ModelSpec(
        provider=provider, model="perf-model", base_url=base_url, max_concurrency=concurrency,
        max_tokens=256, timeout_s=60,
    )
    sim = Simulation(
        benchmark=benchmark(), user_model="m", target="m", turns=turns, landmarks=True,
        perfunctory=0.0,
    )
    rows_in = scenarios(n)
    with tempfile.TemporaryDirectory(prefix="pb-perf-cache-") as cache_dir:
        async with ModelClient({"m": spec}, cache_dir, use_cache=use_cache) as client:
            cpu0, t0 = cpu_seconds(), time.perf_counter()
            rows = await simulate_all(client, sim, rows_in, num_samples=1)
            wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
            calls = client.usage()["m"].calls
    errors = sum(r.status == "error" for r in rows)
    return Level(concurrency, use_cache, n, calls, errors, wall, cpu)


def measure(base_url: str, plan: list[tuple[int, bool]], provider: str, profile: bool) -> list[Level]:
    asyncio.run(play(base_url, 4, 4, 1, False, provider))  # warm-up: imports, first connections
    out = []
    for concurrency, use_cache in plan:
        profiler = cProfile.Profile() if profile else None
        if profiler:
            profiler.enable()
        out.append(asyncio.run(
            play(base_url, concurrency, conversations_at(concurrency), TURNS, use_cache, provider)
        ))
        if profiler:
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
            print(text.getvalue())
    return out


def table(levels: list[Level]) -> str:
    head = (
        f"{'concurrency':>11} {'cache':>5} {'convs':>5} {'calls':>6} {'errors':>6} {'wall s':>7} "
        f"{'ideal s':>7} {'slot bound s':>12} {'efficiency':>10} {'CPU ms/call':>11}"
    )
    lines = [head, "-" * len(head)]
    for lv in levels:
        lines.append(
            f"{lv.concurrency:>11} {'on' if lv.cache else 'off':>5} {lv.conversations:>5} "
            f"{lv.calls:>6} {lv.errors:>6} {lv.wall_s:>7.2f} {lv.ideal_s:>7.2f} "
            f"{lv.slot_bound_s:>12.2f} {lv.efficiency:>10.3f} {lv.cpu_ms_per_call:>11.3f}"
        )
    return "\n".join(lines)


def verdict(results: list[Level]) -> bool:
    ok = True
    for lv in results:
        if lv.errors or lv.calls != 2 * TURNS * lv.conversations:
            print(f"FAILED at concurrency {lv.concurrency}: {lv.errors} error rows, {lv.calls} calls")
            ok = False
    plain = [lv for lv in results if not lv.cache]
    goal = [lv for lv in plain if lv.concurrency == GOAL_LEVEL]
    if goal:
        met = goal[0].efficiency >= GOAL_EFFICIENCY
        print(f"goal efficiency ≥ {GOAL_EFFICIENCY} at {GOAL_LEVEL}: {goal[0].efficiency:.3f} "
              f"{'met' if met else 'MISSED'}")
        ok &= met
    if plain:
        worst = max(lv.cpu_ms_per_call for lv in plain)
        met = worst <= GOAL_CPU_MS
        print(f"goal CPU ≤ {GOAL_CPU_MS:g} ms/call (cache off): worst {worst:.3f} "
              f"{'met' if met else 'MISSED'}")
        ok &= met
    return ok


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, nargs="*", default=list(LEVELS),
                        help="concurrency levels run with the response cache off")
    parser.add_argument("--cache-levels", type=int, nargs="*", default=list(CACHE_LEVELS),
                        help="concurrency levels run with the cache on, in a fresh directory")
    parser.add_argument("--provider", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--profile", type=int, metavar="LEVEL",
                        help="profile this level (cache off) and nothing else")
    args = parser.parse_args(argv)
    if args.profile:
        plan = [(args.profile, False)]
    else:
        plan = [(c, False) for c in args.levels] + [(c, True) for c in args.cache_levels]

    print(f"orchestration: simulate_all, {args.provider} provider, {TURNS} turns, "
          f"mock latency {LATENCY_S:g} s")
    print(f"machine: {machine()}")
    with conversation_server(LATENCY_S) as base_url:
        results = measure(base_url, plan, args.provider, profile=args.profile is not None)
    print(table(results))
    print(f"load average after: {machine().rsplit('load average ', 1)[1]}")
    return 0 if verdict(results) else 1


if __name__ == "__main__":
    sys.exit(main())
