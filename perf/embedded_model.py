"""The embedded model (SmolLM2-135M through llama-cpp-python): what pressurebench adds, what it saves.

1. Overhead. The same calls (3 structured `UserTurn` answers, 3 plain replies,
   same seeds), one at a time, each from a reset context, through three paths,
   alternating call by call, four times over:
   - `pressurebench`: `ModelClient` with the `local` provider (response cache off);
   - `llama-cpp-python`: `Llama.create_chat_completion`, called directly with
     the same request on a context with the library's defaults;
   - `same decoder, direct`: the provider's own `LocalContext`, called directly
     (on the context's own thread).
   Printed: generated tokens per second per path and kind of call, and the
   ratios. pressurebench / llama-cpp-python is the goal (≥ 0.9): on plain
   replies both decode alike, so it is the layers' overhead; on structured
   answers it also holds the provider's grammar-checked sampling. pressurebench
   / same decoder is the layers' overhead alone, with outputs that must match.

2. Prompt reuse across turns. One 6-turn conversation of the real simulate
   core, user model and target both local, so user and target calls
   interleave, played without and with the provider's prompt states
   (`local_prompt_states`). Printed: wall time, prompt tokens actually
   evaluated and the time spent on them (llama.cpp's own counters), and
   whether the transcripts are identical (they must be).

3. Cores. Eight plain replies one at a time with llama-cpp-python's defaults
   (one context, half the cores), and through the provider one at a time and
   eight at once (side by side on its contexts, an equal share of the cores
   each). Printed: generated tokens per second each
   way, the ratios, and whether the outputs match.

4. Weights. The same work on the bundled Q4_1 file and on its Q8_0
   conversion (`requantize: q8_0`), alternating, four times each: the
   simulated user's first prompt evaluated from nothing, then 64 tokens
   decoded one at a time at the same positions. Printed: prompt evaluation
   and decoding tokens per second, and the ratios. (Whole conversations would
   not compare: the weights differ slightly, so the transcripts and their
   lengths do too.)

5. Weight layout. The same work as section 4 on the Q8_0 file, loaded with
   llama.cpp's extra buffer types (weights repacked for the CPU's matrix
   instructions, the default `weight_repacking` except on AMX CPUs) and
   without. Printed: both rates, the ratio, and the largest difference between
   the two layouts' logits after the prompt (0 means bit-identical answers).

Sections 1-3 run on the file as shipped, as llama-cpp-python would load it.

Run: .venv/bin/python perf/embedded_model.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass

import llama_cpp
import numpy as np
from common import benchmark, machine, scenarios

from pressurebench.llm.client import ModelClient
from pressurebench.llm.providers import local_provider
from pressurebench.llm.providers.local_context import LocalContext, weight_layout
from pressurebench.llm.providers.local_weights import runtime_gguf
from pressurebench.params import ModelSpec
from pressurebench.schemas import UserTurn
from pressurebench.stages.conversation import landmarks_due, user_model_messages, user_system_prompt
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


def library_llama(**kwargs) -> llama_cpp.Llama:
    """llama-cpp-python's `Llama` with its defaults, except the weight layout where the
    default would crash (AMX CPUs: `local_provider.weight_repacking`)."""
    with weight_layout(local_provider.weight_repacking(USER)):
        return llama_cpp.Llama(**kwargs)


def loaded(spec: ModelSpec = USER) -> local_provider._Loaded:
    return local_provider.loaded_for(spec)


def fresh(pool: local_provider._Loaded, reuse: bool) -> None:
    """Every context reset and no prompt state kept; `reuse` decides whether calls keep new ones."""
    for context in pool.contexts:
        context.reset()
        context.set_cache(pool.states.for_context() if reuse else None)
    pool.states.clear()


@dataclass
class Counters:
    prompt_tokens: int
    prompt_s: float
    generated: int
    generate_s: float


def counters(contexts) -> Counters:
    perfs = [llama_cpp.llama_perf_context(c.ctx) for c in contexts]
    return Counters(sum(p.n_p_eval for p in perfs), sum(p.t_p_eval_ms for p in perfs) / 1000,
                    sum(p.n_eval for p in perfs), sum(p.t_eval_ms for p in perfs) / 1000)


def rate(seconds_tokens: list[float]) -> float:
    seconds, tokens = seconds_tokens
    return tokens / seconds


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
    """The provider's request straight to `create_chat_completion` of `llama`."""
    kwargs = {"messages": r.messages, "temperature": r.temperature, "max_tokens": r.max_tokens,
              "seed": r.seed}
    if r.schema is not None:
        kwargs["response_format"] = {"type": "json_object", "schema": r.schema}
    llama.reset()
    t0 = time.perf_counter()
    out = llama.create_chat_completion(**kwargs)
    return time.perf_counter() - t0, out["usage"]["completion_tokens"], out["choices"][0]["message"]["content"]


def overhead(rounds: int = 4) -> dict:
    """Per-call layers only: one call at a time, every call from a reset context, no prompt states.

    The paths alternate call by call (and their order rotates too), so a change
    in machine load hits them alike.
    """
    pool = loaded()
    requests: list = []
    for messages, schema in CALLS:  # warm-up, and the requests (with their seeds) to replay
        through_pressurebench(messages, schema, requests)
    library = library_llama(model_path=str(pool.path), n_ctx=USER.n_ctx, verbose=False)
    paths = ("pressurebench", "llama-cpp-python", "same decoder, direct")
    totals = {(path, kind): [0.0, 0] for path in paths for kind in ("plain", "structured")}
    same = True
    for round_no in range(rounds):
        for i, ((messages, schema), request) in enumerate(zip(CALLS, requests)):
            kind = "structured" if schema else "plain"
            texts = {}
            shift = (i + round_no) % len(paths)
            for path in paths[shift:] + paths[:shift]:
                fresh(pool, reuse=path == "pressurebench")
                if path == "pressurebench":
                    seconds, tokens, texts[path] = through_pressurebench(messages, schema, [])
                elif path == "llama-cpp-python":
                    seconds, tokens, texts[path] = direct(library, request)
                else:  # on the context's own thread, as the provider runs it
                    seconds, tokens, texts[path] = pool.run(direct, request)
                totals[path, kind][0] += seconds
                totals[path, kind][1] += tokens
            same &= texts["pressurebench"] == texts["same decoder, direct"]
            if kind == "plain":  # plain replies decode alike on both contexts
                same &= texts["pressurebench"] == texts["llama-cpp-python"]
    fresh(pool, reuse=True)
    del library
    rates = {key: rate(value) for key, value in totals.items()}
    both = {path: rate([sum(totals[path, k][0] for k in ("plain", "structured")),
                        sum(totals[path, k][1] for k in ("plain", "structured"))]) for path in paths}
    return {"rates": rates, "all": both, "same outputs": same,
            "ratio": both["pressurebench"] / both["llama-cpp-python"],
            "ratio plain": rates["pressurebench", "plain"] / rates["llama-cpp-python", "plain"],
            "layers": both["pressurebench"] / both["same decoder, direct"]}


# --- 2. prompt reuse across turns ------------------------------------------------------


async def one_conversation(user: ModelSpec, target: ModelSpec):
    sim = Simulation(benchmark=benchmark(), user_model="user", target="target", turns=6,
                     landmarks=True, perfunctory=0.0, keep_truncated=True)
    async with ModelClient({"user": user, "target": target}, tempfile.mkdtemp(prefix="pb-perf-"),
                           use_cache=False) as client:
        return await simulate_conversation(client, sim, scenarios(1)[0], 0)


def play(with_states: bool, user: ModelSpec = USER, target: ModelSpec = TARGET
         ) -> tuple[float, Counters, object]:
    pool = loaded(user)
    fresh(pool, reuse=with_states)
    for context in pool.contexts:
        llama_cpp.llama_perf_context_reset(context.ctx)
    t0 = time.perf_counter()
    row = asyncio.run(one_conversation(user, target))
    wall = time.perf_counter() - t0
    result = wall, counters(pool.contexts), row
    fresh(pool, reuse=True)
    return result


def prompt_reuse() -> list[tuple[str, float, Counters, object]]:
    """The same conversation without prompt states, then with the provider's own."""
    capacity = loaded().states.capacity_bytes >> 20
    return [("no prompt states", *play(False)), (f"prompt states ({capacity} MiB)", *play(True))]


# --- 3. cores -----------------------------------------------------------------------------


PLAIN = [[{"role": "user", "content": text}] for text in (
    "Give me one tip for learning to cook.", "Describe a good morning routine in two sentences.",
    "Why do people keep plants at home?", "How do I keep a sourdough starter alive?",
    "What should I pack for a day hike?", "How can I sleep better before an exam?",
    "Explain compound interest to a teenager.", "What makes a good apology?",
)]


def cores() -> dict:
    """Tokens/s of eight plain replies: library defaults, and the provider one by one or side by side."""
    pool = loaded()
    library = library_llama(model_path=str(pool.path), n_ctx=TARGET.n_ctx, verbose=False)
    requests: list = []

    async def provider_calls(together: bool) -> tuple[float, int, list[str]]:
        async with ModelClient({"smol": TARGET}, tempfile.mkdtemp(prefix="pb-perf-"), use_cache=False,
                               provider_factory=recording(requests)) as client:
            t0 = time.perf_counter()
            if together:
                results = await asyncio.gather(*[client.chat("smol", m, allow_truncated=True)
                                                 for m in PLAIN])
            else:
                results = [await client.chat("smol", m, allow_truncated=True) for m in PLAIN]
            return (time.perf_counter() - t0, sum(r.output_tokens for r in results),
                    [r.text for r in results])

    fresh(pool, reuse=False)
    runs = {"one by one": asyncio.run(provider_calls(together=False))}
    fresh(pool, reuse=False)
    runs["side by side"] = asyncio.run(provider_calls(together=True))
    fresh(pool, reuse=True)
    seconds, tokens, texts = 0.0, 0, []
    for request in requests[: len(PLAIN)]:
        s, n, text = direct(library, request)
        seconds, tokens, texts = seconds + s, tokens + n, texts + [text]
    runs["library"] = (seconds, tokens, texts)
    rates = {name: rate(list(v[:2])) for name, v in runs.items()}
    return {
        "threads": (library.n_threads, pool.cores, pool.n_contexts, pool.share),
        "rates": rates,
        "side by side / one by one": rates["side by side"] / rates["one by one"],
        "side by side / library": rates["side by side"] / rates["library"],
        "same outputs": runs["library"][2] == runs["one by one"][2] == runs["side by side"][2],
    }


# --- 4. weights ---------------------------------------------------------------------------


def first_user_prompt() -> str:
    """The simulated user's first request of section 2's conversation, in SmolLM2's ChatML format."""
    scenario = scenarios(1)[0]
    system = user_system_prompt(scenario, benchmark().metrics[0], turns=6, landmarks_up_front=False)
    messages = user_model_messages(system, [], turn=1, turns=6, due=landmarks_due(scenario, 1))
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)


def weights(rounds: int = 4, decoded: int = 64) -> dict[str, tuple[int, float, int, float]]:
    """The same work on the bundled Q4_1 file and on its Q8_0 conversion (`requantize: q8_0`).

    Work: the simulated user's first prompt evaluated from nothing, then
    `decoded` tokens decoded one at a time (the prompt's own tokens fed back,
    so both files decode the same tokens at the same positions). One context
    of one thread each, as the provider runs them; the two alternate. Returns
    per file, summed: prompt tokens and seconds, decoded tokens and seconds.
    """
    files = {
        "as shipped (Q4_1)": runtime_gguf(MODEL, None),
        "requantize: q8_0": runtime_gguf(MODEL, "q8_0"),
    }
    contexts = {name: library_llama(model_path=str(path), n_ctx=USER.n_ctx, n_threads=1,
                                      n_threads_batch=1, verbose=False)
                for name, path in files.items()}
    totals, _ = same_work(contexts, rounds, decoded)
    return totals


def same_work(contexts: dict, rounds: int, decoded: int) -> tuple[dict, dict]:
    """Section 4's work on each context, alternating: totals per context (prompt tokens and
    seconds, decoded tokens and seconds), and each context's logits after the prompt."""
    prompt = next(iter(contexts.values())).tokenize(first_user_prompt().encode(), special=True)
    totals = {name: [0, 0.0, 0, 0.0] for name in contexts}
    logits = {}
    for round_no in range(rounds):
        order = list(contexts) if round_no % 2 == 0 else list(reversed(contexts))
        for name in order:
            context = contexts[name]
            context.reset()
            t0 = time.perf_counter()
            context.eval(prompt)
            t1 = time.perf_counter()
            logits[name] = np.array(context.scores[context.n_tokens - 1])
            for token in prompt[:decoded]:
                context.eval([token])
            t2 = time.perf_counter()
            totals[name][0] += len(prompt)
            totals[name][1] += t1 - t0
            totals[name][2] += min(decoded, len(prompt))
            totals[name][3] += t2 - t1
    return {name: tuple(values) for name, values in totals.items()}, logits


def layouts(rounds: int = 4, decoded: int = 64) -> tuple[dict, float]:
    """Section 5: the Q8_0 file with and without llama.cpp's extra buffer types."""
    path = str(runtime_gguf(MODEL, "q8_0"))
    contexts = {label: LocalContext(model_path=path, n_ctx=USER.n_ctx, n_threads=1, n_threads_batch=1,
                                    verbose=False, repack_weights=repack)
                for label, repack in (("repacked", True), ("plain", False))}
    totals, logits = same_work(contexts, rounds, decoded)
    return totals, float(np.max(np.abs(logits["repacked"] - logits["plain"])))


def main() -> int:
    print(f"embedded model: {MODEL} via llama-cpp-python {llama_cpp.__version__}")
    print(f"machine: {machine()}")

    o = overhead()
    head = f"{'overhead (one call at a time)':<30} {'plain tok/s':>11} {'structured tok/s':>16} {'all tok/s':>9}"
    print(head)
    print("-" * len(head))
    for path, both in o["all"].items():
        print(f"{path:<30} {o['rates'][path, 'plain']:>11.1f} {o['rates'][path, 'structured']:>16.1f} "
              f"{both:>9.1f}")
    print(f"overhead: pressurebench / llama-cpp-python {o['ratio']:.3f} (goal ≥ {GOAL_RATIO}; "
          f"plain replies alone {o['ratio plain']:.3f}); pressurebench / same decoder, direct "
          f"{o['layers']:.3f}; same outputs: {o['same outputs']}")

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

    c = cores()
    r = c["rates"]
    library, n_cores, contexts, share = c["threads"]
    print(f"cores: {len(PLAIN)} plain replies one at a time with llama-cpp-python's defaults "
          f"({library} thread(s)) {r['library']:.1f} tok/s; through the provider one at a time "
          f"({share} of {n_cores} cores each) {r['one by one']:.1f} tok/s, side by side on {contexts} "
          f"contexts of {share} thread(s) {r['side by side']:.1f} tok/s "
          f"(x{c['side by side / one by one']:.2f} and x{c['side by side / library']:.2f}); "
          f"same outputs: {c['same outputs']}")

    p4, d4, p8, d8 = work_table("weights (one thread)", weights())
    print(f"weights: q8_0 / as shipped: prompt evaluation x{p4 / p8:.2f}, decoding x{d4 / d8:.2f}")

    print(f"llama.cpp reports: {llama_cpp.llama_print_system_info().decode().strip()}")
    if local_provider.cpu_reports_amx():
        print("weight layout: skipped, AMX is reported (the repacked layout crashes here)")
        return finish(o, same, c)
    lay, logit_gap = layouts()
    pr, dr, pp, dp = work_table("weight layout (q8_0)", lay)
    print(f"weight layout: plain / repacked: prompt evaluation x{pr / pp:.2f}, decoding x{dr / dp:.2f}; "
          f"largest logit difference {logit_gap:g}; default here: "
          f"{'repacked' if local_provider.weight_repacking(USER) else 'plain'}")
    return finish(o, same, c)


def work_table(title: str, totals: dict) -> tuple[float, float, float, float]:
    """Print section 4's table for two contexts; their prompt and decode seconds, in order."""
    head = f"{title:<22} {'prompt tokens':>13} {'prompt tok/s':>12} {'decode tok/s':>12}"
    print(head)
    print("-" * len(head))
    for name, (tokens, prompt_s, decoded, decode_s) in totals.items():
        print(f"{name:<22} {tokens:>13} {tokens / prompt_s:>12.1f} {decoded / decode_s:>12.1f}")
    (_, (_, prompt_a, _, decode_a)), (_, (_, prompt_b, _, decode_b)) = totals.items()
    return prompt_a, decode_a, prompt_b, decode_b


def finish(o: dict, same: bool, c: dict) -> int:
    print(f"load average after: {machine().rsplit('load average ', 1)[1]}")
    ok = o["ratio"] >= GOAL_RATIO and o["same outputs"] and same and c["same outputs"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
