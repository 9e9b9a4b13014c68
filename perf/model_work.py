"""The embedded model's work in a completed run, and the least time this machine needs for it.

A cold `make repro` on the default params spends most of its time in SmolLM2's
prompt evaluation and decoding. This reads the run's call records (every
request and the tokens of every reply) and counts, per stage:

- prompt tokens as sent, and the prompt tokens an ideal engine must evaluate:
  every distinct prefix once (the nodes of the prompts' token trie), as if
  each prompt reused the longest evaluated prefix of any other, in the best
  order; the provider's prompt states reach most of that
  (`llm/providers/local_prompt_states.py`);
- reply tokens, each decoded once.

A request made twice in one run (another stage's identical call, such as the
simulated user's first message for a second target) is answered from the
response cache the second time, so each request counts once, in the first
stage (in path order) that made it.

It then measures, on this machine, the provider's layout (one-thread contexts
side by side, one per core) evaluating a prompt from the records and decoding
after it, and divides: the floor is the time the run's model work needs with
perfect prompt reuse and every core busy all the time. Outputs must stay
identical, so nothing may change the tokens themselves.

When the records come from a cold run (no call replayed but the run's own repeats), the
stages' own durations (their manifests) are compared with the floor. Goal: the
stages' total at most 1.15 x the floor.

Run after a `make repro` (the call records are under data/):
    .venv/bin/python perf/model_work.py [--data data] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

from common import REPO, machine

from pressurebench.llm.providers.local_context import LocalContext
from pressurebench.llm.providers.local_provider import MAX_CONTEXTS, weight_repacking
from pressurebench.params import ModelSpec
from pressurebench.paths import CALLS, COST, MANIFEST

MODEL = "smollm2-135m-instruct"
DECODED = 64  # decode steps per context per round, after its prompt


def prompt_formatter(context: LocalContext):
    """The chat template the provider's contexts apply (the model file's own), as a function from
    messages to prompt tokens."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    model = context._model
    formatter = Jinja2ChatFormatter(
        template=context.metadata["tokenizer.chat_template"],
        eos_token=model.token_get_text(context.token_eos()),
        bos_token=model.token_get_text(context.token_bos()),
    )

    def tokens(messages: list[dict]) -> tuple[int, ...]:
        text = formatter(messages=messages).prompt
        return tuple(context.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    return tokens


def stage_name(record: Path, data: Path) -> str:
    """The stage's folder (`paths`), relative to the data directory."""
    return record.parent.relative_to(data).as_posix()


def count_work(data: Path, tokens) -> tuple[dict[str, dict], list[tuple[int, ...]], int]:
    """Per stage with local calls: calls, prompt tokens sent, distinct prefixes, reply tokens.
    Also every prompt, for the rate measurement, and how many requests repeated an earlier one."""
    stages: dict[str, dict] = {}
    prompts: list[tuple[int, ...]] = []
    seen: set[str] = set()
    repeated = 0
    for record in sorted(data.rglob(CALLS)):
        work = defaultdict(int)
        prefixes: set[int] = set()
        for line in record.read_text(encoding="utf-8").splitlines():
            call = json.loads(line)
            request, response = call["request"], call["response"]
            if request.get("provider") != "local" or response is None:
                continue
            if call["key"] in seen:
                repeated += 1
                continue
            seen.add(call["key"])
            prompt = tokens(request["messages"])
            if len(prompt) != response["input_tokens"]:
                raise SystemExit(f"{record}: a prompt tokenized to {len(prompt)} tokens, the "
                                 f"model counted {response['input_tokens']}; the template differs")
            prompts.append(prompt)
            prefixes.update(hash(prompt[:n]) for n in range(1, len(prompt) + 1))
            work["calls"] += 1
            work["prompt"] += len(prompt)
            work["reply"] += response["output_tokens"]
        if work["calls"]:
            work["distinct"] = len(prefixes)
            stages[stage_name(record, data)] = dict(work)
    return stages, prompts, repeated


def stage_seconds(data: Path, repeated: int) -> float | None:
    """The stages' own wall time (manifests), or None if the run replayed more calls than it
    repeated (a warm run: the times are not the model's)."""
    seconds, cached = 0.0, 0
    for record in sorted(data.rglob(CALLS)):
        cost = json.loads((record.parent / COST).read_text(encoding="utf-8"))
        cached += sum(m["cached_calls"] for m in cost["by_model"].values())
        manifest = json.loads((record.parent / MANIFEST).read_text(encoding="utf-8"))
        seconds += manifest["duration_s"]
    return seconds if cached == repeated else None


def side_by_side(
    contexts: list[LocalContext], prompt: tuple[int, ...], rounds: int
) -> tuple[float, float]:
    """Tokens/s of all contexts together, each on its own thread as the provider runs them:
    (prompt evaluation from nothing, decoding `DECODED` tokens after it)."""
    barrier = threading.Barrier(len(contexts))
    spans: dict[int, list[tuple[float, float, float]]] = defaultdict(list)  # per context, per round

    def work(i: int, context: LocalContext) -> None:
        for _ in range(rounds):
            context.reset()
            barrier.wait()
            t0 = time.perf_counter()
            context.eval(list(prompt))
            barrier.wait()
            t1 = time.perf_counter()
            for token in prompt[:DECODED]:  # the prompt's tokens fed back: decode steps at real positions
                context.eval([token])
            barrier.wait()
            spans[i].append((t0, t1, time.perf_counter()))

    threads = [threading.Thread(target=work, args=(i, c)) for i, c in enumerate(contexts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    prompt_s = sum(max(s[r][1] for s in spans.values()) - min(s[r][0] for s in spans.values())
                   for r in range(rounds))
    decode_s = sum(max(s[r][2] for s in spans.values()) - max(s[r][1] for s in spans.values())
                   for r in range(rounds))
    n = len(contexts) * rounds
    return n * len(prompt) / prompt_s, n * DECODED / decode_s


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO / "data")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from pressurebench.llm.providers.local_weights import runtime_gguf

    spec = ModelSpec(provider="local", model=MODEL, requantize="q8_0")
    path = str(runtime_gguf(MODEL, "q8_0"))
    contexts = [LocalContext(model_path=path, n_ctx=spec.n_ctx, n_threads=1, n_threads_batch=1,
                             verbose=False, repack_weights=weight_repacking(spec))
                for _ in range(min(os.cpu_count() or 1, MAX_CONTEXTS))]
    stages, prompts, repeated = count_work(args.data, prompt_formatter(contexts[0]))
    if not stages:
        print(f"no local calls recorded under {args.data}: run `make repro` first", file=sys.stderr)
        return 1
    print(f"machine: {machine()}")
    print(f"records: {args.data}\n")
    print("| stage | calls | prompt tokens | distinct prefixes | reply tokens |")
    print("|---|---:|---:|---:|---:|")
    for name, w in stages.items():
        print(f"| {name} | {w['calls']} | {w['prompt']:,} | {w['distinct']:,} | {w['reply']:,} |")
    total = {k: sum(w[k] for w in stages.values()) for k in ("calls", "prompt", "distinct", "reply")}
    print(f"| **all** | {total['calls']} | {total['prompt']:,} | {total['distinct']:,} "
          f"| {total['reply']:,} |")

    prompts.sort(key=len)
    median = prompts[len(prompts) // 2]
    prompt_rate, decode_rate = side_by_side(contexts, median, args.rounds)
    floor = total["distinct"] / prompt_rate + total["reply"] / decode_rate
    print(f"\n{len(contexts)} one-thread contexts side by side, a {len(median)}-token prompt "
          f"from the records, {args.rounds} rounds: prompt {prompt_rate:.0f} tokens/s, "
          f"decoding {decode_rate:.0f} tokens/s (all contexts together)")
    print(f"floor: {total['distinct']:,} / {prompt_rate:.0f} + {total['reply']:,} / "
          f"{decode_rate:.0f} = {floor:.0f} s of model work ({floor / 60:.1f} min), with every "
          "prefix evaluated once and every core busy throughout")
    print(f"({repeated} repeated requests, answered from the response cache, are not counted)")
    spent = stage_seconds(args.data, repeated)
    if spent is None:
        print("the records were replayed from a cache (not a cold run): no stage time to compare")
        return 0
    ratio = spent / floor
    print(f"the stages took {spent:.0f} s: {ratio:.2f} x the floor (goal <= 1.15)")
    return 0 if ratio <= 1.15 else 1


if __name__ == "__main__":
    sys.exit(main())
