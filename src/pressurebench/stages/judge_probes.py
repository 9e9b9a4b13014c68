"""The judge probes' two stages: edit the main arm's conversations, then judge them again.

    python -m pressurebench.stages.judge_probes edit --benchmark B --target T
    python -m pressurebench.stages.judge_probes evaluate --benchmark B --target T

`edit` writes each probe's edited conversations of the study subset (`validation.fraction`,
`validation.seed`: whole base scenarios, as the other studies draw them) to
`probe_edits.json`; the generator writes the edits (`stages.probe_edits`). `evaluate` has the
main arm's judge read every edited conversation exactly as evaluate reads the original (the
same blind prompt, the same panel rule, the whole transcript); for the family probe has
the panel's judges outside the shared family judge the original conversations on their own;
and for the repeat probe asks the main judge once more about the unedited conversations (another
sample index, so a new call): how often it disagrees with itself when nothing changed, the floor
every other flip rate stands on. It writes `probe_scores.json`. Nothing is simulated again. The comparison with the main
arm's verdicts is `validation.judge_probes`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TypeGuard

from ..arms.inputs import declared_params, resolve
from ..arms.study_plan import rows_of, select_base_scenarios
from ..errors import ConfigError
from ..io import read_artifact, read_yaml_model, write_artifact
from ..llm.client import ModelClient, ProviderFactory, run_sync
from ..params import Params, load_params
from ..paths import Layout, probes_layout
from ..schemas import (
    Benchmark,
    Conversation,
    EditProbe,
    Manifest,
    ProbeEdit,
    ProbeEditsFile,
    ProbeScores,
    ProbeScoresFile,
    ScenariosFile,
    Score,
)
from ..stage_run import StageRun
from ..validation.judge_probes import family_check
from .evaluate import (
    JUDGE_PROMPTS,
    JUDGE_SAMPLE,
    PanelDecision,
    load_conversations,
    metrics_to_judge,
    score_conversations,
    score_row,
)
from .probe_edits import NO_OTHER_VARIANT, PROMPTS, edit_conversations, edited_conversation

EDIT_STAGE = "probes_edit"
EVALUATE_STAGE = "probes_evaluate"
EDIT_PROBES: tuple[EditProbe, ...] = ("identity", "paraphrase", "verbosity")
FAMILY = "family"
REPEAT = "repeat"
# The repeat probe's sample index: the main judge's request asked once more (evaluate asks with 0).
REPEAT_SAMPLE = 1
EDIT_FAILED = "edit failed"


def subset_rows(params: Params, scenarios: ScenariosFile) -> list[str]:
    """The study subset's scenario rows: whole base scenarios, a seeded share per metric."""
    v = params.validation
    return rows_of(scenarios.rows, select_base_scenarios(scenarios.rows, v.fraction, v.seed))


def _edits(probe: str) -> TypeGuard[EditProbe]:
    return probe in EDIT_PROBES


def edit_probes(params: Params) -> list[EditProbe]:
    return [p for p in params.validation.judge_probes if _edits(p)]


def require_probe_target(params_path: str | Path, params: Params, target: str) -> None:
    targets = list(params.validation.targets or params.targets)
    if target not in targets:
        raise ConfigError(params_path, f"'{target}' is not a validation target "
                          f"(validation targets: {', '.join(targets)})", "validation.targets")


def _main_conversations(params: Params, benchmark: str, target: str,
                        rows: list[str]) -> tuple[Path, list[Conversation]]:
    path = Layout(params.data_dir, benchmark).conversations_file(target)
    wanted = set(rows)
    return path, [c for c in load_conversations(path, benchmark, target).rows
                  if c.scenario_id in wanted]


def edit_run(params_path: str | Path, benchmark: str, target: str, *,
             provider_factory: ProviderFactory | None = None) -> Manifest:
    """Write `probe_edits.json`: every edit probe's version of the target's conversations."""
    params = load_params(params_path)
    inputs = resolve(params_path, params, benchmark, None)
    require_probe_target(params_path, params, target)
    editor = inputs.generator
    probes = edit_probes(params)
    stage = StageRun(EDIT_STAGE, params_path, benchmark, models_used=[editor] if probes else [],
                     target=target, arm=probes_layout(params.data_dir, benchmark).arm,
                     params=params)
    scenarios_path = Layout(params.data_dir, benchmark).scenarios_file
    scenarios = read_artifact(scenarios_path, ScenariosFile)
    rows = subset_rows(params, scenarios)
    conv_path, convs = _main_conversations(params, benchmark, target, rows)

    async def core(client: ModelClient) -> list[ProbeEdit]:
        async with client:
            return await edit_conversations(client, editor, convs, scenarios.rows, probes)

    client = stage.client(provider_factory)
    edits = run_sync(lambda: core(client)) if probes else []
    stage.replacing_outputs()
    out = stage.layout.probe_edits_file(target)
    write_artifact(out, ProbeEditsFile(benchmark=benchmark, target=target, editor=editor,
                                       probes=probes, scenario_ids=rows, rows=edits))
    counts = {"conversations": len(convs), "edits": len(edits),
              "edits_error": sum(e.status == "error" for e in edits),
              "messages_edited": sum(len(e.edits) for e in edits)}
    for probe in probes:
        counts[f"{probe}_error"] = sum(e.probe == probe and e.status == "error" for e in edits)
    manifest = stage.finish(
        client, counts=counts, prompts=[PROMPTS[p] for p in probes],
        declared=declared_params(EDIT_STAGE, inputs, target),
        provenance={"editor": editor, "conversations": str(conv_path),
                    "scenarios": str(scenarios_path)},
        seeds={"subset": params.validation.seed, editor: params.models[editor].seed},
    )
    # A base scenario with one variant has no other voice to rewrite into: not a failure.
    failed = [e for e in edits if e.status == "error" and not (e.error or "").startswith(NO_OTHER_VARIANT)]
    stage.check_error_rate(len(failed), len(edits), "edits", out,
                           (failed[0].conv_id, failed[0].error) if failed else None)
    return manifest


def _edit_error(conv: Conversation, metrics, edit: ProbeEdit | None, *, all_metrics: bool
                ) -> list[Score]:
    reason = edit.error if edit is not None else "no edit of this conversation"
    decision = PanelDecision(None, error=f"{EDIT_FAILED}: {reason}")
    return [score_row(conv, m, judges=[], decision=decision)
            for m in metrics_to_judge(conv, metrics, all_metrics=all_metrics)]


def evaluate_run(params_path: str | Path, benchmark: str, target: str, *,
                 provider_factory: ProviderFactory | None = None) -> Manifest:
    """Write `probe_scores.json`: the main judge's verdicts on every edited conversation, and the
    family probe's verdicts of the panel's other judges."""
    params = load_params(params_path)
    inputs = resolve(params_path, params, benchmark, None)
    require_probe_target(params_path, params, target)
    evaluators = list(inputs.evaluators)
    probes = list(params.validation.judge_probes)
    check = family_check(params, target)
    inside, others, shared = check.in_family, check.other_judges, check.shared_with
    family_runs = FAMILY in probes and bool(inside) and bool(others)
    used = list(dict.fromkeys(
        (evaluators if any(p in (*EDIT_PROBES, REPEAT) for p in probes) else [])
        + (others if family_runs else [])
    ))
    layout = probes_layout(params.data_dir, benchmark)
    stage = StageRun(EVALUATE_STAGE, params_path, benchmark, models_used=used, target=target,
                     arm=layout.arm, params=params)
    edits_path = layout.probe_edits_file(target)
    edits = read_artifact(edits_path, ProbeEditsFile)
    if edits.benchmark != benchmark or edits.target != target:
        raise ConfigError(edits_path, f"holds {edits.benchmark}/{edits.target}, expected "
                          f"{benchmark}/{target}; re-run the edit stage", "target")
    if edits.probes != edit_probes(params):
        raise ConfigError(edits_path, f"holds the probes {edits.probes}, the params ask for "
                          f"{edit_probes(params)}; re-run the edit stage", "probes")
    conv_path, convs = _main_conversations(params, benchmark, target, edits.scenario_ids)
    met_path = Layout(params.data_dir, benchmark).benchmark_file
    metrics = read_yaml_model(met_path, Benchmark).metrics
    evaluation = params.evaluation
    by_conv = {(e.probe, e.conv_id): e for e in edits.rows}

    async def judge(client: ModelClient, conversations: list[Conversation], judges: list[str],
                    sample: int = JUDGE_SAMPLE):
        return await score_conversations(
            client, conversations, metrics, evaluators=judges,
            evaluate_all_metrics=evaluation.evaluate_all_metrics,
            show_examples=evaluation.show_examples, sample=sample,
        )

    async def core(client: ModelClient) -> dict[str, ProbeScores]:
        out: dict[str, ProbeScores] = {}
        async with client:
            for probe in edits.probes:
                ok = [(c, by_conv.get((probe, c.conv_id))) for c in convs]
                edited = [edited_conversation(c, e) for c, e in ok
                          if e is not None and e.status == "ok"]
                failed = [row for c, e in ok if e is None or e.status != "ok"
                          for row in _edit_error(c, metrics, e,
                                                 all_metrics=evaluation.evaluate_all_metrics)]
                out[probe] = ProbeScores(judges=evaluators,
                                         rows=await judge(client, edited, evaluators) + failed)
            if FAMILY in probes:
                out[FAMILY] = ProbeScores(
                    judges=others if family_runs else [],
                    rows=await judge(client, convs, others) if family_runs else [],
                    reason=None if family_runs else family_reason(inside, others, shared),
                )
            if REPEAT in probes:
                out[REPEAT] = ProbeScores(judges=evaluators, rows=await judge(
                    client, convs, evaluators, sample=REPEAT_SAMPLE))
        return out

    client = stage.client(provider_factory)
    scored = run_sync(lambda: core(client))
    stage.replacing_outputs()
    write_artifact(layout.probe_scores_file(target),
                   ProbeScoresFile(benchmark=benchmark, target=target, evaluators=evaluators,
                                   probes=scored))
    counts = {}
    for probe, result in scored.items():
        counts[f"{probe}_scores"] = len(result.rows)
        counts[f"{probe}_scores_error"] = sum(r.status == "error" for r in result.rows)
    manifest = stage.finish(
        client, counts=counts, prompts=JUDGE_PROMPTS,
        declared=declared_params(EVALUATE_STAGE, inputs, target),
        provenance={"evaluators": evaluators, "family_judges": others if family_runs else [],
                    "repeat_sample": REPEAT_SAMPLE,
                    "edits": str(edits_path), "conversations": str(conv_path),
                    "metrics": str(met_path)},
        seeds={mid: params.models[mid].seed for mid in used},
    )
    rows = [r for result in scored.values() for r in result.rows]
    judged = [r for r in rows if not (r.error or "").startswith(EDIT_FAILED)]
    failed = [r for r in judged if r.status == "error"]
    stage.check_error_rate(len(failed), len(judged), "probe scores",
                           layout.probe_scores_file(target),
                           (failed[0].conv_id, failed[0].error) if failed else None)
    return manifest


def family_reason(inside: list[str], others: list[str], shared: list[str]) -> str:
    """Why the family probe re-judged nothing."""
    if not inside:
        return "no judge shares a model family with the target or the generator"
    return (f"the judge ({', '.join(inside)}) shares a model family with the "
            f"{' and the '.join(shared)}, and the panel has no other judge to re-judge with: "
            "list judges of other families in roles.evaluator")


def main(argv: list[str] | None = None) -> int:
    """`python -m pressurebench.stages.judge_probes edit|evaluate ...`, as DVC runs it."""

    from ..errors import PressurebenchError, reported

    parser = argparse.ArgumentParser(prog="python -m pressurebench.stages.judge_probes")
    parser.add_argument("step", choices=["edit", "evaluate"])
    parser.add_argument("--params", default="params/pipeline.yaml")
    parser.add_argument("--benchmark", required=True)
    parser.add_argument("--target", required=True)
    args = parser.parse_args(argv)
    run = edit_run if args.step == "edit" else evaluate_run
    try:
        run(args.params, args.benchmark, args.target)
    except (PressurebenchError, KeyboardInterrupt) as exc:
        return reported(exc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
