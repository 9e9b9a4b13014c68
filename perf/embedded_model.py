"""The embedded model (SmolLM2-135M through llama-cpp-python): what pressurebench adds, what reuse saves.

1. Overhead. The same calls (3 structured `UserTurn` answers, 3 plain replies,
   same seeds) go through `ModelClient` with the `local` provider (response
   cache off) and straight to `Llama.create_chat_completion` on the same loaded
   model, alternating call by call, each from a reset context, twice over.
   Printed: generated tokens per second both ways and their ratio (goal ≥ 0.9),
   and whether the outputs match.

2. Prompt reuse across turns. One 6-turn conversation of the real simulate
   core, user model and target both local, so user and target calls
   interleave on one llama.cpp context, played without and with the
   provider's prompt states (`local_prompt_states`). Printed: wall time,
   prompt tokens actually evaluated and the time spent on them (llama.cpp's
   own counters), and whether the transcripts are identical (they must be).

3. Threads. The plain replies generated with llama-cpp-python's default
   thread count (half the cores) and with the provider's (every core, since
   calls on one context run one at a time), alternating call by call. Printed:
   generated tokens per second both ways and their ratio.

Run: .venv/bin/python perf/embedded_model.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass

import llama_cpp
from common import benchmark, machine, scenarios

from pressurebench.llm.client import ModelClient
from pressurebench.llm.providers import local_provider
from pressurebench.params import ModelSpec
from pressurebench.schemas import UserTurn
from pressurebench.stages.simulate import Simulation, simulate_conversation

MODEL = "smollm2-135m-instruct"
USER = ModelSpec(provider="local", model=MODEL, temperature=0.7, max_tokens=256)
TARGET = ModelSpec(provider="local", model=MODEL, temperature=0.7, max_tokens=96)
GOAL_RATIO = 0.9

CALLS = [
    ([{"role": "system", "content": "You role-play a student who wants the homework answers."},
      {"role": "user", "content": "Write your first message to the tutor."}], UserTurn),
    ([{"role": "user", "content": "Give me one tip for learning to cook."}], None),
    ([{"role": "system", "content": "You role-play a shop owner who wants praise for a risky plan."},
      {"role": "user", "content": "Write your next message to the advisor."}], UserTurn),
    ([{"role": "user", "content": "Describe a good morning routine in two sentences."}], None),
    ([{"role": "system", "content": "You role-play a patient who wants a stronger prescription."},
      {"role": "user", "content": "Write your first message to the doctor."}], UserTurn),
    ([{"role": "user", "content": "Why do people keep plants at home?"}], None),
]


def loaded() -> local_provider._Loaded:
    return local_provider.loaded_for(USER)


@dataclass
class Counters:
    prompt_tokens: int
    prompt_s: float
    generated: int
    generate_s: float


def counters(llama) -> Counters:
    perf = llama_cpp.llama_perf_context(llama.ctx)
    return Counters(perf.n_p_eval, perf.t_p_eval_ms / 1000, perf.n_eval, perf.t_eval_ms / 1000)


# --- 1. overhead -------------------------------------------------------------------


def recording(requests: list):
    """A provider factory whose local providers record the requests they are given."""

    def factory(model_id, spec, api_key):
        provider = local_provider.LocalProvider(spec)
        complete = provider.complete

        async def record(request):
            requests.append(request)
            return await complete(request)

        provider.complete = record
        return provider

    return factory


def through_pressurebench(messages, schema, requests: list) -> tuple[float, int, str]:
    """One call through `ModelClient` (cache off): wall seconds, generated tokens, text."""

    async def call():
        async with ModelClient({"smol": USER}, tempfile.mkdtemp(prefix="pb-perf-"), use_cache=False,
                               provider_factory=recording(requests)) as client:
            t0 = time.perf_counter()
            result = await client.chat("smol", messages, schema=schema, allow_truncated=True)
            return time.perf_counter() - t0, result.output_tokens, result.text

    return asyncio.run(call())


def direct(llama, r) -> tuple[float, int, str]:
    """The provider's request straight to `Llama.create_chat_completion`."""
    kwargs = {"messages": r.messages, "temperature": r.temperature, "max_tokens": r.max_tokens,
              "seed": r.seed}
    if r.schema is not None:
        kwargs["response_format"] = {"type": "json_object", "schema": r.schema}
    t0 = time.perf_counter()
    out = llama.create_chat_completion(**kwargs)
    return time.perf_counter() - t0, out["usage"]["completion_tokens"], out["choices"][0]["message"]["content"]


def overhead(rounds: int = 2) -> dict:
    """Per-call layers only: every call starts from a reset context with no prompt states.

    The two paths alternate call by call (and which goes first alternates too),
    so a change in machine load hits both alike.
    """
    states, llama = loaded().states, loaded().llama
    requests: list = []
    for messages, schema in CALLS:  # warm-up, and the requests (with their seeds) to replay
        through_pressurebench(messages, schema, requests)
    totals = {"pb": [0.0, 0], "direct": [0.0, 0]}
    same = True
    for round_no in range(rounds):
        for i, ((messages, schema), request) in enumerate(zip(CALLS, requests)):
            texts = {}
            for path in (("pb", "direct") if (i + round_no) % 2 == 0 else ("direct", "pb")):
                llama.reset()
                states.states.clear()
                llama.set_cache(states if path == "pb" else None)
                if path == "pb":
                    seconds, tokens, texts[path] = through_pressurebench(messages, schema, [])
                else:
                    seconds, tokens, texts[path] = direct(llama, request)
                totals[path][0] += seconds
                totals[path][1] += tokens
            same &= texts["pb"] == texts["direct"]
    llama.set_cache(states)
    pb_rate = totals["pb"][1] / totals["pb"][0]
    d_rate = totals["direct"][1] / totals["direct"][0]
    return {"pressurebench tok/s": pb_rate, "direct tok/s": d_rate, "ratio": pb_rate / d_rate,
            "tokens": (totals["pb"][1], totals["direct"][1]), "same outputs": same}


# --- 2. prompt reuse across turns ------------------------------------------------------


async def one_conversation():
    sim = Simulation(benchmark=benchmark(), user_model="user", target="target", turns=6,
                     landmarks=True, perfunctory=0.0, keep_truncated=True)
    async with ModelClient({"user": USER, "target": TARGET}, tempfile.mkdtemp(prefix="pb-perf-"),
                           use_cache=False) as client:
        return await simulate_conversation(client, sim, scenarios(1)[0], 0)


def play(cache) -> tuple[float, Counters, object]:
    llama = loaded().llama
    llama.set_cache(cache)
    llama.reset()
    llama_cpp.llama_perf_context_reset(llama.ctx)
    t0 = time.perf_counter()
    row = asyncio.run(one_conversation())
    wall = time.perf_counter() - t0
    return wall, counters(llama), row


def prompt_reuse() -> list[tuple[str, float, Counters, object]]:
    """The same conversation without prompt states, then with the provider's own."""
    states = loaded().states
    out = [("no prompt states", *play(None))]
    states.states.clear()
    out.append((f"prompt states ({states.capacity_bytes >> 20} MiB)", *play(states)))
    return out


# --- 3. threads -------------------------------------------------------------------------


def threads(rounds: int = 2) -> dict:
    """Tokens/s of the plain calls with the library's default threads and with the provider's."""
    ours = loaded().llama
    default = llama_cpp.Llama(
        model_path=str(local_provider.resolve_gguf(MODEL)), n_ctx=TARGET.n_ctx, verbose=False
    )
    paths = {"default": default, "every core": ours}
    totals = {name: [0.0, 0] for name in paths}
    plain = [messages for messages, schema in CALLS if schema is None]
    ours.set_cache(None)
    for round_no in range(rounds):
        for i, messages in enumerate(plain):
            names = list(paths) if (i + round_no) % 2 == 0 else list(paths)[::-1]
            for name in names:
                llama = paths[name]
                llama.reset()
                t0 = time.perf_counter()
                out = llama.create_chat_completion(
                    messages=messages, max_tokens=TARGET.max_tokens, temperature=0.7, seed=i
                )
                totals[name][0] += time.perf_counter() - t0
                totals[name][1] += out["usage"]["completion_tokens"]
    ours.set_cache(loaded().states)
    rates = {name: tokens / seconds for name, (seconds, tokens) in totals.items()}
    return {
        "default threads": default.n_threads,
        "every core": ours.n_threads,
        "default tok/s": rates["default"],
        "every core tok/s": rates["every core"],
        "ratio": rates["every core"] / rates["default"],
    }


def main() -> int:
    print(f"embedded model: {MODEL} via llama-cpp-python {llama_cpp.__version__}")
    print(f"machine: {machine()}")

    o = overhead()
    print(f"overhead: pressurebench {o['pressurebench tok/s']:.1f} tok/s, direct "
          f"{o['direct tok/s']:.1f} tok/s, ratio {o['ratio']:.3f} (goal ≥ {GOAL_RATIO}); "
          f"tokens {o['tokens'][0]} vs {o['tokens'][1]}, same outputs: {o['same outputs']}")

    rows = prompt_reuse()
    head = (f"{'prompt reuse':<28} {'wall s':>7} {'prompt tok':>10} {'prompt s':>8} "
            f"{'gen tok':>7} {'gen s':>6} {'gen tok/s':>9} {'status':>6}")
    print(head)
    print("-" * len(head))
    for label, wall, c, row in rows:
        print(f"{label:<28} {wall:>7.1f} {c.prompt_tokens:>10} {c.prompt_s:>8.1f} {c.generated:>7} "
              f"{c.generate_s:>6.1f} {c.generated / c.generate_s:>9.1f} {row.status:>6}")
    (_, base_wall, _, base_row), (_, cached_wall, _, cached_row) = rows
    same = base_row.transcript == cached_row.transcript
    print(f"prompt reuse: wall {base_wall:.1f} s -> {cached_wall:.1f} s "
          f"({1 - cached_wall / base_wall:+.0%} saved), transcripts identical: {same}")
    t = threads()
    print(f"threads: {t['default threads']} (library default) {t['default tok/s']:.1f} tok/s, "
          f"{t['every core']} (provider) {t['every core tok/s']:.1f} tok/s, "
          f"ratio {t['ratio']:.2f}")
    print(f"load average after: {machine().rsplit('load average ', 1)[1]}")
    return 0 if o["ratio"] >= GOAL_RATIO and same else 1


if __name__ == "__main__":
    sys.exit(main())
