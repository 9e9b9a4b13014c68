"""The transcript browser: one static HTML page to read every conversation next to its verdict.

A pass rate is only as credible as the verdicts behind it, so a reader must be
able to open any transcript and see what the judges saw and said, and which
scenario produced it. The page is a single file with its data embedded as JSON
(see `safety`) and a small script that builds the list with `textContent`
only: model text never becomes markup.

With per-turn verdicts (`evaluation.per_turn`) every assistant reply shows
the verdict on the transcript up to it, and the reply at which the behaviour
first failed is marked.

Rows are scores: with `evaluation.evaluate_all_metrics` one conversation is
judged on several metrics and appears once per metric. With fidelity checks (`fidelity.check`)
every flagged user message or reply
carries its break and reason, and the list can be filtered by kind of break.

A conversation without
a score row (not evaluated yet, or skipped) appears once with verdict "error"
and says so; a score whose conversation is missing says that too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..paths import Layout
from ..schemas import (
    Conversation,
    ConversationFidelity,
    Metric,
    Scenario,
    Score,
)
from ..stage_run import now_iso
from .judged_files import metrics_of, read_judged_files, scenarios_in
from .safety import (
    content_security_policy,
    json_for_script,
    read_template_asset,
    template_env,
    write_page,
)

NOT_SCORED = "not scored: the scores file has no row for this conversation"
NO_CONVERSATION = "conversation not found in the conversations files"


def verdict_of(score: Score | None) -> str:
    """pass / fail, or error for anything that has no usable verdict."""
    if score is None or score.status != "ok" or score.passed is None:
        return "error"
    return "pass" if score.passed else "fail"


# What the page shows of a conversation and of the scenario its user played, in the models'
# own field order.
_CONVERSATION_SHOWN = {"conv_id", "scenario_id", "target", "sample", "user_model", "system_prompt",
                       "transcript", "status", "error", "ended_by", "turns"}
_SCENARIO_SHOWN = {"metric_id", "base_id", "persona", "user_goal", "latent_adversarial_goal",
                   "landmarks", "demographic", "system_prompt"}


def _conversation_entry(conv: Conversation) -> dict[str, Any]:
    return conv.model_dump(include=_CONVERSATION_SHOWN)


def _scenario_entry(s: Scenario) -> dict[str, Any]:
    return s.model_dump(include=_SCENARIO_SHOWN)


def _fidelity_entry(row: ConversationFidelity | None) -> dict[str, Any] | None:
    """What the page shows of a conversation's fidelity checks: the flags and the undecided."""
    if row is None:
        return None
    return {
        "status": row.status,
        "error": row.error,
        "broken": row.broken,
        "breaks": list(row.breaks),
        "test_aware": row.test_aware,
        "flags": [
            {"kind": c.kind, "turn": c.turn, "reason": c.reason, "decided_by": c.decided_by}
            for c in row.checks
            if c.flagged
        ],
        "undecided": [
            {"kind": c.kind, "turn": c.turn, "error": c.error}
            for c in row.checks
            if c.status == "error"
        ],
    }


def _row(
    score: Score | None,
    conv: Conversation | None,
    conv_index: int | None,
    fidelity: ConversationFidelity | None = None,
) -> dict:
    """A browser row: a score with its conversation, or a conversation no score refers to."""
    source = score if score is not None else conv
    if source is None:
        raise ValueError("a row needs a score or a conversation")
    return {
        "conv": conv_index,
        "conv_id": source.conv_id,
        "scenario_id": source.scenario_id,
        "target": source.target,
        "sample": source.sample,
        "metric_id": source.metric_id,
        "demographic": source.demographic,
        "status": conv.status if conv is not None else "missing",
        "verdict": verdict_of(score),
        "present": score.present if score else None,
        "passed": score.passed if score else None,
        "justification": score.justification if score else None,
        "error": score.error if score is not None else NOT_SCORED,
        "conv_error": None if conv is not None else NO_CONVERSATION,
        "judges": [
            {
                "model_id": j.model_id,
                "present": j.present,
                "justification": j.justification,
                "status": j.status,
                "error": j.error,
            }
            for j in (score.judges if score else [])
        ],
        "turn_verdicts": [
            {
                "turn": t.turn,
                "verdict": "error" if t.passed is None else ("pass" if t.passed else "fail"),
                "justification": next(
                    (j.justification for j in t.judges if j.status == "ok"), None
                ),
                "error": t.error,
            }
            for t in (score.turn_verdicts if score else [])
        ],
        "onset": score.onset.model_dump() if score is not None and score.onset else None,
        "fidelity": _fidelity_entry(fidelity),
    }


def browser_data(
    *,
    benchmark: str,
    metrics: Sequence[Metric],
    scenarios: Iterable[Scenario],
    conversations: Iterable[Conversation],
    scores: Iterable[Score],
    fidelity: Iterable[ConversationFidelity] = (),
) -> dict[str, Any]:
    """The JSON the page embeds: metrics, scenarios and conversations once, one row per score."""
    convs = list(conversations)
    index = {c.conv_id: i for i, c in enumerate(convs)}
    checked = {f.conv_id: f for f in fidelity}
    rows: list[dict] = []
    scored: set[str] = set()
    for score in scores:
        i = index.get(score.conv_id)
        rows.append(_row(score, convs[i] if i is not None else None, i, checked.get(score.conv_id)))
        scored.add(score.conv_id)
    for i, conv in enumerate(convs):
        if conv.conv_id not in scored:
            rows.append(_row(None, conv, i, checked.get(conv.conv_id)))
    rows.sort(key=lambda r: (r["target"], r["metric_id"], r["scenario_id"], r["sample"]))
    return {
        "benchmark": benchmark,
        "metrics": {
            m.id: {"name": m.name, "type": m.type, "definition": m.definition} for m in metrics
        },
        "scenarios": {s.id: _scenario_entry(s) for s in scenarios},
        "conversations": [_conversation_entry(c) for c in convs],
        "rows": rows,
    }


def render_browser(data: dict[str, Any], title: str, notes: Sequence[str] = ()) -> str:
    """The page's HTML: trusted assets inline, data as escaped JSON, a CSP allowing only our script."""
    script = read_template_asset("browser.js")
    style = read_template_asset("browser.css")
    if "</script" in script.lower() or "</style" in style.lower():
        raise ValueError("a browser asset contains a closing tag and cannot be inlined")
    return template_env().get_template("browser.html.j2").render(
        title=title,
        generated_at=now_iso(),
        version=__version__,
        csp=content_security_policy(script),
        notes=list(notes),
        style=style,
        script=script,
        data_json=json_for_script(data),
    )


def write_transcript_browser(
    out_path: str | Path,
    *,
    benchmark: str,
    metrics: Sequence[Metric],
    scenarios_file: str | Path | None,
    conversation_files: Sequence[str | Path],
    score_files: Sequence[str | Path] = (),
    title: str | None = None,
    notes: Sequence[str] = (),
) -> Path:
    """Read the artifacts (validated), and write the browser page to `out_path`.

    `scenarios_file` may be None when the scenarios are not at hand; each row
    then says its scenario was not found rather than showing nothing.
    """
    scenarios = scenarios_in(scenarios_file) if scenarios_file else []
    judged = read_judged_files(conversation_files, score_files)
    data = browser_data(
        benchmark=benchmark,
        metrics=metrics,
        scenarios=scenarios,
        conversations=judged.all_conversations(),
        scores=judged.scores,
        fidelity=judged.fidelity,
    )
    return write_page(out_path, render_browser(data, title or f"{benchmark}: transcripts", notes))


def write_transcript_browser_for(
    layout: Layout, targets: Sequence[str], out_path: str | Path, *, title: str | None = None,
    notes: Sequence[str] = (),
) -> Path:
    """The browser for one benchmark (or validation arm) from its standard artifact paths."""
    arm = f" ({layout.arm})" if layout.arm else ""
    return write_transcript_browser(
        out_path,
        benchmark=layout.benchmark,
        metrics=metrics_of(layout),
        scenarios_file=layout.scenarios_file,
        conversation_files=[layout.conversations_file(t) for t in targets],
        score_files=[layout.scores_file(t) for t in targets],
        title=title or f"{layout.benchmark}{arm}: transcripts",
        notes=notes,
    )


def main(argv: list[str] | None = None) -> int:
    """`python -m pressurebench.reports.browser --benchmark B [--arm A] [--out F]` (the DVC stage)."""
    import argparse

    from ..errors import PressurebenchError, reported
    from ..params import load_params
    from .models_note import models_note

    parser = argparse.ArgumentParser(description="Write the static transcript browser of a benchmark.")
    parser.add_argument("--params", default="params/pipeline.yaml")
    parser.add_argument("--benchmark", required=True)
    parser.add_argument("--arm", default=None, help="a validation arm, e.g. user/<model id>")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        params = load_params(args.params)
        targets = (params.targets_of(args.benchmark) if args.arm is None
                   else (params.validation.targets or params.targets))
        # The models line and caveat of every report, as plain text (the page is escaped).
        notes = [line.replace("**", "") for line in
                 models_note(args.params, args.benchmark, args.arm).split("\n\n")]
        write_transcript_browser_for(Layout(params.data_dir, args.benchmark, args.arm), targets,
                                     args.out, notes=notes)
    except (PressurebenchError, KeyboardInterrupt) as exc:
        return reported(exc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
