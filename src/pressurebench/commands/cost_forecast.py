"""Before spending anything: how many calls each stage makes per role, their tokens and cost.

Token figures are planning estimates from the params (turns, max_tokens,
samples, panel size), not measurements; cost is unknown, never 0, where a
model has no price in the registry. The calls of one conversation and role
repeat a growing prefix (`llm.prompt_cache`): from the planned prompts, each
provider's caching rules (`ModelApi.cached_prefix`) give the input it would
read from its prompt cache, and cost is shown with and without caching.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path

from ..io import read_yaml_model
from ..llm.providers.registry import api_for
from ..params import ModelSpec, Params
from ..paths import benchmark_source
from ..schemas import Benchmark

# Rough sizes in tokens of the fixed parts of prompts, and of a simulated user message.
SYSTEM_TOKENS = {"gen_metrics": 350, "gen_scenarios": 450, "rewrite": 500, "user": 400, "judge": 300,
                 "fidelity": 400, "awareness": 150, "probe_edit": 90}
USER_MESSAGE_TOKENS = 60
STRUCTURED_OVERHEAD = 40


@dataclass
class Line:
    stage: str
    arm: str
    role: str
    model_id: str
    calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # as billed with prompt caching
    cached_input_tokens: int = 0  # of input_tokens, predicted to be read from a prompt cache
    cache_write_tokens: int = 0  # of input_tokens, predicted to be written to it
    uncached_cost_usd: float | None = None  # the same calls without prompt caching


# The reply length assumed for an imported conversation's turns (its files say nothing of it
# before they are read).
REPLY_TOKENS_IMPORTED = 300


def _reply_tokens(spec: ModelSpec) -> int:
    """Assume replies use about 60% of their budget, and a reasoning model half of its room to
    reason (hidden reasoning is billed as output): planning figures, stated as such."""
    hidden = (api_for(spec).token_limit(spec.max_tokens) - spec.max_tokens) // 2
    return max(1, int(spec.max_tokens * 0.6)) + hidden


def _line(params: Params, stage, arm, role, model_id, calls, tin_per_call, tout_per_call,
          writes: bool = True) -> Line:
    """Calls that share no prefix with an earlier call (beyond what no provider would cache);
    `writes`: whether their breakpoints (the provider's default places) write the prompt."""
    return _growing_line(params, stage, arm, role, model_id, calls, [tin_per_call], [0], tout_per_call,
                         last_writes=writes)


def _growing_line(params: Params, stage, arm, role, model_id, groups: int, prompts: list[int],
                  shared: list[int], tout_per_call: int, last_writes: bool = False) -> Line:
    """`groups` times the calls of one conversation and role: call i sends `prompts[i]` tokens,
    of which `shared[i]` repeat a prefix the call before it sent (and its provider may cache).
    The last call, which no later call extends, writes nothing unless `last_writes`
    (`llm.prompt_cache.cache_marks`)."""
    api = api_for(params.models[model_id])
    calls = groups * len(prompts)
    tin, tout = groups * sum(prompts), calls * tout_per_call
    cached = groups * sum(api.cached_prefix(s) for s in shared)
    written = 0
    if api.writes_cache:  # a breakpoint near the end writes what was not read, when long enough
        writing = prompts if last_writes else prompts[:-1]
        written = groups * sum(p - api.cached_prefix(s) for p, s in zip(writing, shared, strict=False)
                               if api.cached_prefix(p) > 0)
    return Line(stage, arm, role, model_id, calls, tin, tout, api.price(tin, tout, cached, written),
                cached, written, api.price(tin, tout))


def variants_per_scenario(params: Params) -> int:
    axes = params.generation.demographics.values()
    return math.prod(len(v) for v in axes) if axes else 1


def estimate(params: Params, root: str | Path = ".") -> list[Line]:
    g = params.generation
    lines: list[Line] = []
    n_var = variants_per_scenario(params)
    for bench_name in params.benchmarks:
        bench = read_yaml_model(benchmark_source(bench_name, root), Benchmark)
        judges = list(params.roles.evaluators)
        arms: list[tuple[str, str | None, str | None, list[str], list[str], float]] = [
            ("main", params.roles.generator, params.roles.user, judges, params.targets, 1.0)]
        val_targets = params.validation.targets or params.simulated_targets()
        fraction = params.validation.fraction
        arms += [(f"generator/{m}", m, params.roles.user, judges, val_targets, fraction)
                 for m in params.validation.generator_bias]
        arms += [(f"user/{m}", None, m, judges, val_targets, fraction)
                 for m in params.validation.user_model_bias]
        # An evaluator arm re-judges the main conversations: no generation, no simulation.
        arms += [(f"evaluator/{m}", None, None, [m], val_targets, fraction)
                 for m in params.validation.evaluator_bias]
        for arm, generator, user, arm_judges, targets, fraction in arms:
            n_metrics = len(bench.metrics) or g.metrics_per_benchmark
            label = f"{bench_name}/{arm}"
            if generator is not None:
                gspec = params.models[generator]
                if not bench.metrics:
                    lines.append(_line(params, "gen_metrics", label, "generator", generator, n_metrics,
                                       SYSTEM_TOKENS["gen_metrics"] + 80 * n_metrics, 250))
                n_base = n_metrics * g.scenarios_per_metric
                lines.append(_line(params, "gen_scenarios", label, "generator (base scenarios)",
                                   generator, n_base, SYSTEM_TOKENS["gen_scenarios"],
                                   min(gspec.max_tokens, 400)))
                if g.demographics:
                    lines.append(_line(params, "gen_scenarios", label,
                                       "generator (demographic rewrites)", generator,
                                       n_base * n_var, SYSTEM_TOKENS["rewrite"] + 300,
                                       min(gspec.max_tokens, 350)))
            rows = math.ceil(n_metrics * g.scenarios_per_metric * n_var * fraction)
            convs = rows * g.num_samples
            judged = convs * (n_metrics if params.evaluation.evaluate_all_metrics else 1)
            for target in targets:
                if api_for(params.models[target]).conversations_imported:
                    if arm == "main":
                        lines += _imported_lines(params, bench_name, target, arm_judges, n_metrics)
                    continue
                reply = _reply_tokens(params.models[target])
                exchange = USER_MESSAGE_TOKENS + reply
                turns = range(1, g.turns + 1)
                # Turn t re-sends the t-1 earlier exchanges. The user model's request repeats the
                # one before up to its own last message (the direction moves on); the target's
                # repeats the whole request before.
                if user is not None:
                    lines.append(_growing_line(
                        params, "simulate", f"{label}/{target}", "user", user, convs,
                        [SYSTEM_TOKENS["user"] + (t - 1) * exchange for t in turns],
                        [SYSTEM_TOKENS["user"] + (t - 2) * exchange if t > 1 else 0 for t in turns],
                        USER_MESSAGE_TOKENS + STRUCTURED_OVERHEAD))
                    lines.append(_growing_line(
                        params, "simulate", f"{label}/{target}", "target", target, convs,
                        [100 + (t - 1) * exchange + USER_MESSAGE_TOKENS for t in turns],
                        [100 + (t - 2) * exchange + USER_MESSAGE_TOKENS if t > 1 else 0 for t in turns],
                        reply))
                # Per-turn mode also judges the prefixes ending at replies 1 .. T-1, in order: each
                # request repeats the one before but for its closing question.
                judged_turns = list(turns) if params.evaluation.per_turn else [g.turns]
                for judge in arm_judges:
                    lines.append(_growing_line(
                        params, "evaluate", f"{label}/{target}", "evaluator", judge, judged,
                        [SYSTEM_TOKENS["judge"] + t * exchange for t in judged_turns],
                        [SYSTEM_TOKENS["judge"] + (t - 1) * exchange if i else 0
                         for i, t in enumerate(judged_turns)],
                        120))
                if params.fidelity.check and user is not None:
                    lines += fidelity_lines(params, f"{label}/{target}", convs, reply)
        n_metrics = len(bench.metrics) or g.metrics_per_benchmark
        convs = math.ceil(n_metrics * g.scenarios_per_metric * n_var * fraction) * g.num_samples
        judged = convs * (n_metrics if params.evaluation.evaluate_all_metrics else 1)
        for target in val_targets:
            lines += probe_lines(params, f"{bench_name}/probes/{target}", target, convs, judged,
                                 n_var)
    return lines


def probe_lines(params: Params, label: str, target: str, convs: int, judged: int,
                n_var: int) -> list[Line]:
    """The judge probes of one validation target's `convs` conversations (`judged` rows): per
    edit probe, one generator call per edited message and one call per judge and row on the
    edited transcript (the identity probe needs two demographic variants; the paraphrase
    probe edits the same user turns in the same voice); for the repeat probe, one call per
    judge and row. The family probe's re-judging repeats the main arm's
    calls, which the cache answers."""
    g = params.generation
    probes = params.validation.judge_probes
    generator, judges = params.roles.generator, params.roles.evaluators
    reply = _reply_tokens(params.models[target])
    exchange = USER_MESSAGE_TOKENS + reply
    lines = []
    edits = {"identity": (USER_MESSAGE_TOKENS, USER_MESSAGE_TOKENS, 0),
             "paraphrase": (USER_MESSAGE_TOKENS, USER_MESSAGE_TOKENS, 0),
             "verbosity": (reply, reply, reply)}
    for probe, (edited_in, edited_out, longer) in edits.items():
        if probe not in probes or (probe == "identity" and n_var < 2):
            continue
        lines.append(_line(params, "probes_edit", label, f"generator ({probe})", generator,
                           convs * g.turns, SYSTEM_TOKENS["probe_edit"] + edited_in,
                           min(edited_out, params.models[generator].max_tokens)))
        lines += [_line(params, "probes_evaluate", label, f"evaluator ({probe})", judge, judged,
                        SYSTEM_TOKENS["judge"] + g.turns * (exchange + longer), 120)
                  for judge in judges]
    if "repeat" in probes:  # the unedited transcript, asked again
        lines += [_line(params, "probes_evaluate", label, "evaluator (repeat)", judge, judged,
                        SYSTEM_TOKENS["judge"] + g.turns * exchange, 120) for judge in judges]
    return lines


def _imported_lines(params: Params, benchmark: str, target: str, judges: list[str],
                    n_metrics: int) -> list[Line]:
    """An imported target is never called: only its judging costs, each conversation on every
    metric (at most: a sample may name one) over `generation.turns` exchanges with replies of
    `REPLY_TOKENS_IMPORTED` tokens. Validation arms leave it out (they vary the simulated side
    it does not have)."""
    declared = (params.models[target].imported or {}).get(benchmark)
    convs = declared.conversations if declared else 0
    g = params.generation
    exchange = USER_MESSAGE_TOKENS + REPLY_TOKENS_IMPORTED
    judged_turns = list(range(1, g.turns + 1)) if params.evaluation.per_turn else [g.turns]
    label = f"{benchmark}/main/{target}"
    lines = [
        _growing_line(
            params, "evaluate", label, "evaluator", judge, convs * n_metrics,
            [SYSTEM_TOKENS["judge"] + t * exchange for t in judged_turns],
            [SYSTEM_TOKENS["judge"] + (t - 1) * exchange if i else 0
             for i, t in enumerate(judged_turns)],
            120)
        for judge in judges
    ]
    if params.fidelity.check:
        for judge in params.roles.fidelity_judges:
            lines.append(_line(params, "evaluate", label, "fidelity (test awareness)", judge,
                               convs * g.turns, 400 + exchange, 80))
    return lines


def fidelity_lines(params: Params, label: str, convs: int, reply: int) -> list[Line]:
    """The fidelity checks of `convs` conversations, per fidelity judge: one call per user
    message, one per conversation for its pressure, one per target reply. An upper bound: a
    break a rule finds needs no call, and a first message every target shares is judged once."""
    turns = params.generation.turns
    lines = []
    for judge in params.roles.fidelity_judges:
        lines += [  # their breakpoints end the instructions and persona only: nothing is written
            _line(params, "evaluate", label, "fidelity (user messages)", judge, convs * turns,
                  SYSTEM_TOKENS["fidelity"] + USER_MESSAGE_TOKENS + reply, 80, writes=False),
            _line(params, "evaluate", label, "fidelity (pressure)", judge, convs,
                  SYSTEM_TOKENS["fidelity"] + USER_MESSAGE_TOKENS * turns, 60, writes=False),
            _line(params, "evaluate", label, "fidelity (test awareness)", judge, convs * turns,
                  SYSTEM_TOKENS["awareness"] + USER_MESSAGE_TOKENS + reply, 60, writes=False),
        ]
    return lines


def price_notes(params: Params, lines: list[Line]) -> list[str]:
    """What the estimate's prices rest on: the models priced from the price table (and the
    date of its prices), those whose cached input has no price of its own, those with none."""
    from ..llm.prices import table_name

    apis = {mid: api_for(params.models[mid]) for mid in dict.fromkeys(x.model_id for x in lines)}
    notes = []
    no_cached_price = sorted({x.model_id for x in lines if x.cached_input_tokens
                              and apis[x.model_id].price(0, 0) is not None
                              and not apis[x.model_id].cached_price_known})
    if no_cached_price:
        notes.append(f"No cached-input price for {', '.join(no_cached_price)} (neither "
                     "price_per_mtok_cached_in nor the price table's): their cached input is "
                     "priced at the full input price.")
    from_table = sorted(mid for mid, api in apis.items() if api.table_price is not None)
    if from_table:
        notes.append(f"Prices of {', '.join(from_table)} from {table_name()} (prices of "
                     f"{apis[from_table[0]].price_date.isoformat()}); `pressurebench check` lists them.")
    unpriced = sorted({x.model_id for x in lines if x.cost_usd is None})
    if unpriced:
        notes.append(f"'unknown' cost: no price for {', '.join(unpriced)}, neither in the params "
                     f"(price_per_mtok_in, price_per_mtok_out) nor in {table_name()}.")
    return notes


def _sum_cost(costs) -> float | None:
    total: float | None = 0.0
    for cost in costs:
        total = None if total is None or cost is None else total + cost
    return total


def totals(lines: list[Line]) -> tuple[int, int, int, float | None]:
    return (sum(x.calls for x in lines), sum(x.input_tokens for x in lines),
            sum(x.output_tokens for x in lines), _sum_cost(x.cost_usd for x in lines))


def cap_warning(params: Params, lines: list[Line], spent_usd: float = 0.0) -> str | None:
    """What the spending cap (`run.max_cost_usd`) will do to a run this estimate exceeds, or None.

    The cap is not a budget the run plans within: it stops the run at the first call that
    could take the spending record past it (`llm.spending`), so a run estimated above it
    ends partway, with the stages after that call unfinished. Said before anything is spent;
    `spent_usd` is what the cache directory's record already holds, which the cap counts too.
    """
    cap = params.run.max_cost_usd
    cost = totals(lines)[3]
    if cap is None or cost is None or cost + spent_usd <= cap:
        return None
    already = (f" plus the ${spent_usd:.2f} already spent through {params.run.cache_dir} (the cap "
               "counts it; calls answered before are replayed for free, so the estimate is an "
               "upper bound)") if spent_usd else ""
    return (f"the estimated cost, ${cost:.2f}{already}, is above run.max_cost_usd = ${cap:.2f}: "
            "the run will stop at the cap, before the first call that could take its spending "
            "past it, with that stage and the ones after it unfinished (exit 2, "
            "SpendingCapReached). Everything answered by then is cached. Raise the cap, or make "
            "the design smaller, to finish in one go.")


def cached_share(lines: list[Line]) -> float:
    """The share of all input tokens predicted to be read from a prompt cache."""
    tin = sum(x.input_tokens for x in lines)
    return sum(x.cached_input_tokens for x in lines) / tin if tin else 0.0


def _usd(cost: float | None) -> str:
    return "unknown" if cost is None else f"{cost:.4f}"


def _share(cached: int, tin: int) -> str:
    return f"{cached / tin:.0%}" if tin else "0%"


def format_table(lines: list[Line]) -> str:
    header = ("stage", "arm / target", "role", "model", "calls", "in tok", "cached", "out tok",
              "cost USD", "uncached USD")
    rows = [header]
    for x in lines:
        rows.append((x.stage, x.arm, x.role, x.model_id, f"{x.calls:,}", f"{x.input_tokens:,}",
                     _share(x.cached_input_tokens, x.input_tokens), f"{x.output_tokens:,}",
                     _usd(x.cost_usd), _usd(x.uncached_cost_usd)))
    calls, tin, tout, cost = totals(lines)
    cached = sum(x.cached_input_tokens for x in lines)
    rows.append(("total", "", "", "", f"{calls:,}", f"{tin:,}", _share(cached, tin), f"{tout:,}",
                 _usd(cost), _usd(_sum_cost(x.uncached_cost_usd for x in lines))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    out = []
    for i, r in enumerate(rows):
        out.append("  ".join(c.ljust(w) if j < 4 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))))
        if i == 0 or i == len(rows) - 2:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def by_stage(lines: list[Line]) -> dict[str, int]:
    out: dict[str, int] = {}
    for stage, group in itertools.groupby(sorted(lines, key=lambda x: x.stage), key=lambda x: x.stage):
        out[stage] = sum(x.calls for x in group)
    return out
