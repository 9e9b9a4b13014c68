"""The tables of a release, as Arrow tables with declared types: what `pressurebench release`
writes as Parquet.

Every table has an `arm` column (`main`, or a validation arm such as `evaluator/<model>`), so
one release holds the main run and the arms that finished. A value that does not exist is
null, never 0 or an empty string: a conversation without a verdict has `passed` null and its
reason in `error`. Demographic variants are one `demographic_<axis>` column per axis.

What a table never holds: a model's endpoint, the name of its key variable, anything from the
response cache or a manifest (manifests copy the whole params), or a rater's name (labels,
only on request, carry pseudonyms).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..params import Params
from ..stats.estimates import RateEstimate
from .finished_run import ArmRun
from .inspect_export import model_name

TABLES = ("metrics", "scenarios", "conversations", "scores", "results")
LABEL_TABLES = ("labels", "fidelity_labels")


@dataclass
class Table:
    """One table: its rows, the Arrow type of each column, and what each column means."""

    name: str
    description: str
    columns: dict[str, tuple[Any, str]]  # name -> (pyarrow type, description)
    rows: list[dict] = field(default_factory=list)

    def arrow(self):
        import pyarrow as pa

        schema = pa.schema([(name, kind) for name, (kind, _) in self.columns.items()])
        return pa.Table.from_pylist(self.rows, schema=schema)


def demographic_axes(arms: list[ArmRun]) -> list[str]:
    axes: dict[str, None] = {}
    for run in arms:
        for scenario in run.scenarios.values():
            axes.update(dict.fromkeys(scenario.demographic))
    return list(axes)


def _demo_columns(axes: list[str]) -> dict:
    import pyarrow as pa

    return {f"demographic_{a}": (pa.string(), f"the demographic variant's {a}") for a in axes}


def _demo(axes: list[str], values: dict[str, str]) -> dict:
    return {f"demographic_{a}": values.get(a) for a in axes}


def metrics_table(arms: list[ArmRun]) -> Table:
    import pyarrow as pa

    table = Table("metrics", "The behaviours measured: one row per metric (and arm).", {
        "arm": (pa.string(), "main, or the validation arm"),
        "metric_id": (pa.string(), "metric id, e.g. m01"),
        "name": (pa.string(), "the metric's name"),
        "type": (pa.string(), "positive: passing means the behaviour is present; negative: absent"),
        "definition": (pa.string(), "the definition the judge applies"),
        "examples": (pa.list_(pa.string()), "example phrases of the behaviour"),
    })
    for run in arms:
        if run.inputs.generates:
            table.rows += [{"arm": run.name, "metric_id": m.id, "name": m.name, "type": m.type,
                            "definition": m.definition, "examples": list(m.examples)}
                           for m in run.benchmark.metrics]
    return table


def scenarios_table(arms: list[ArmRun], axes: list[str]) -> Table:
    import pyarrow as pa

    landmark = pa.struct([("turn", pa.int64()), ("instruction", pa.string())])
    table = Table("scenarios", "The scenarios the simulated user played: one row per "
                  "demographic variant of a base scenario.", {
        "arm": (pa.string(), "main, or the validation arm that wrote its own scenarios"),
        "scenario_id": (pa.string(), "metric, base scenario and variant: m01_s002_v01"),
        "base_id": (pa.string(), "the base scenario: the cluster of the intervals"),
        "metric_id": (pa.string(), "the metric the scenario was written for"),
        "persona": (pa.string(), "who the simulated user is"),
        "user_goal": (pa.string(), "what the user says they want"),
        "latent_adversarial_goal": (pa.string(), "what the user steers the assistant toward"),
        "landmarks": (pa.list_(landmark), "the user's plan: what to do at which turn"),
        "system_prompt": (pa.string(), "the scenario's system prompt for the target, if any"),
        **_demo_columns(axes),
    })
    for run in arms:
        if not run.inputs.generates:
            continue
        for s in run.scenarios.values():
            table.rows.append({
                "arm": run.name, "scenario_id": s.id, "base_id": s.base_id,
                "metric_id": s.metric_id, "persona": s.persona, "user_goal": s.user_goal,
                "latent_adversarial_goal": s.latent_adversarial_goal,
                "landmarks": [lm.model_dump() for lm in s.landmarks],
                "system_prompt": s.system_prompt, **_demo(axes, s.demographic),
            })
    return table


def conversations_table(params: Params, arms: list[ArmRun], axes: list[str]) -> Table:
    import pyarrow as pa

    message = pa.struct([("role", pa.string()), ("content", pa.string()),
                         ("truncated", pa.bool_())])
    table = Table("conversations", "The simulated conversations: one row per conversation "
                  "with its turns (the target's system prompt first).", {
        "arm": (pa.string(), "main, or the validation arm that played it"),
        "conv_id": (pa.string(), "scenario, target and sample"),
        "scenario_id": (pa.string(), "the scenario played"),
        "base_id": (pa.string(), "the base scenario"),
        "metric_id": (pa.string(), "the scenario's metric"),
        "target": (pa.string(), "the target's model id in the study"),
        "target_model": (pa.string(), "the target model, provider/model"),
        "user_model": (pa.string(), "the simulated user's model id"),
        "sample": (pa.int64(), "the sample number: the same scenario played again"),
        "status": (pa.string(), "ok, or error: the conversation failed (see error)"),
        "error": (pa.string(), "why the conversation failed; null when ok"),
        "ended_by": (pa.string(), "user: the user ended early; max_turns: all turns played"),
        "turns": (pa.int64(), "assistant replies"),
        "messages": (pa.list_(message), ("system prompt and turns; truncated: cut off at "
                                        "max_tokens")),
        "fidelity_broken": (pa.bool_(), ("the simulated user broke its part (fidelity checks); "
                                        "null when not checked or undecided")),
        "fidelity_breaks": (pa.list_(pa.string()), "the kinds of break found"),
        "test_aware": (pa.bool_(), "the target said it was being tested; null when not checked"),
        **_demo_columns(axes),
    })
    for run in arms:
        if not run.inputs.simulates:
            continue  # an evaluator arm's conversations are the main arm's, in this table once
        for t in run.targets:
            for c in t.conversations:
                system = [{"role": "system", "content": c.system_prompt, "truncated": False}]
                fid = t.fidelity.get(c.conv_id)
                table.rows.append({
                    "arm": run.name, "conv_id": c.conv_id, "scenario_id": c.scenario_id,
                    "base_id": c.base_id, "metric_id": c.metric_id, "target": c.target,
                    "target_model": model_name(params, c.target), "user_model": c.user_model,
                    "sample": c.sample, "status": c.status, "error": c.error,
                    "ended_by": c.ended_by, "turns": c.turns,
                    "messages": system * bool(c.system_prompt)
                    + [m.model_dump() for m in c.transcript],
                    "fidelity_broken": fid.broken if fid else None,
                    "fidelity_breaks": list(fid.breaks) if fid else None,
                    "test_aware": fid.test_aware if fid else None,
                    **_demo(axes, c.demographic),
                })
    return table


def scores_table(arms: list[ArmRun], axes: list[str]) -> Table:
    import pyarrow as pa

    judge = pa.struct([("model_id", pa.string()), ("present", pa.bool_()),
                       ("justification", pa.string()), ("status", pa.string()),
                       ("error", pa.string())])
    turn = pa.struct([("turn", pa.int64()), ("present", pa.bool_()), ("passed", pa.bool_()),
                      ("status", pa.string()), ("error", pa.string())])
    table = Table("scores", "The judge's verdicts: one row per conversation and judged metric, "
                  "with every judge's verdict and the per-turn verdicts.", {
        "arm": (pa.string(), "main, or the validation arm that judged it"),
        "conv_id": (pa.string(), "the conversation judged"),
        "scenario_id": (pa.string(), "its scenario"),
        "base_id": (pa.string(), "its base scenario: the cluster of the intervals"),
        "metric_id": (pa.string(), "the metric judged"),
        "metric_type": (pa.string(), "positive or negative"),
        "target": (pa.string(), "the target's model id"),
        "sample": (pa.int64(), "the sample number"),
        "status": (pa.string(), "ok, or error: no verdict (see error)"),
        "error": (pa.string(), "why there is no verdict; null when ok"),
        "present": (pa.bool_(), "the behaviour was present; null without a verdict"),
        "passed": (pa.bool_(), ("the target passed: present for a positive metric, absent for "
                               "a negative one; null without a verdict")),
        "justification": (pa.string(), "the judge's rationale"),
        "judges": (pa.list_(judge), "every judge's verdict (a panel has several)"),
        "turn_verdicts": (pa.list_(turn), ("the verdict on the transcript up to each reply "
                                          "(empty unless judged per turn)")),
        "onset_turn": (pa.int64(), "the first failing turn; null if it never failed"),
        **_demo_columns(axes),
    })
    for run in arms:
        for t in run.targets:
            for s in t.scores:
                table.rows.append({
                    "arm": run.name, "conv_id": s.conv_id, "scenario_id": s.scenario_id,
                    "base_id": s.base_id, "metric_id": s.metric_id,
                    "metric_type": s.metric_type, "target": s.target, "sample": s.sample,
                    "status": s.status, "error": s.error, "present": s.present,
                    "passed": s.passed, "justification": s.justification,
                    "judges": [j.model_dump(exclude={"model_version"}) for j in s.judges],
                    "turn_verdicts": [tv.model_dump(exclude={"judges"})
                                      for tv in s.turn_verdicts],
                    "onset_turn": s.onset.turn if s.onset else None,
                    **_demo(axes, s.demographic),
                })
    return table


def results_table(params: Params, arms: list[ArmRun], results_by_arm: dict) -> Table:
    """The pass rates as a long table: one row per arm, target and breakdown."""
    import pyarrow as pa

    table = Table("results", "The pass rates the run reported, with their intervals: one row "
                  "per arm, target and breakdown (overall, metric type, metric, demographic "
                  "value). A withheld interval or rate is null with its reason.", {
        "arm": (pa.string(), "main, or the validation arm"),
        "target": (pa.string(), "the target's model id"),
        "scope": (pa.string(), "overall, metric type, metric, or demographic:<axis>"),
        "key": (pa.string(), "the metric id, metric type or demographic value"),
        "rate": (pa.float64(), "passes / rows with a verdict; null without any"),
        "ci_low": (pa.float64(), "the interval's lower end; null when withheld"),
        "ci_high": (pa.float64(), "the interval's upper end; null when withheld"),
        "confidence_level": (pa.float64(), "of the interval"),
        "ci_method": (pa.string(), "how the interval was made"),
        "n": (pa.int64(), "rows with a verdict: the denominator"),
        "n_error": (pa.int64(), "rows without a verdict, left out of the denominator"),
        "base_scenarios": (pa.int64(), "base scenarios with a verdict: the clusters"),
        "reason": (pa.string(), "why the interval or the rate is withheld"),
    })
    level = params.statistics.confidence_level
    for run in arms:
        for t in run.targets:
            rates = t.rates
            entries: list[tuple[str, str, RateEstimate]] = []
            results = results_by_arm.get(run.name)
            if results is not None and t.target in results.targets:
                found = results.targets[t.target]
                entries += [("overall", "all", found.overall),
                            ("metric type", "positive", found.positive),
                            ("metric type", "negative", found.negative)]
                entries += [("metric", k, v) for k, v in found.by_metric.items()]
                entries += [(f"demographic:{axis}", value, est)
                            for axis, values in found.by_demographic.items()
                            for value, est in values.items()]
            elif rates.overall is not None:
                entries.append(("overall", "all", rates.overall))
            if not entries:
                table.rows.append({"arm": run.name, "target": t.target, "scope": "overall",
                                   "key": "all", "confidence_level": level,
                                   "reason": rates.withheld})
            for scope, key, est in entries:
                table.rows.append({
                    "arm": run.name, "target": t.target, "scope": scope, "key": key,
                    "rate": est.rate, "ci_low": est.ci_low, "ci_high": est.ci_high,
                    "confidence_level": level, "ci_method": est.ci_method, "n": est.n,
                    "n_error": est.n_error, "base_scenarios": est.n_clusters,
                    "reason": est.reason,
                })
    return table


def labels_tables(frames) -> list[Table]:
    """The human labels (`labels.label_frames`), each rater under a pseudonym (rater-01, ...,
    in the order they first appear): a rater's name never leaves the project."""
    import pyarrow as pa

    pseudonyms: dict[str, str] = {}

    def pseudonym(name: str) -> str:
        return pseudonyms.setdefault(name, f"rater-{len(pseudonyms) + 1:02d}")

    labels = Table("labels", "People's labels of a sample of judged conversations (main arm), "
                   "to measure the judge: one row per rater and item.", {
        "conv_id": (pa.string(), "the conversation labelled"),
        "metric_id": (pa.string(), "the metric labelled"),
        "target": (pa.string(), "the target"),
        "rater": (pa.string(), "the rater's pseudonym"),
        "label": (pa.string(), "present, absent or unsure"),
        "judge_present": (pa.bool_(), "the judge's verdict on the same item"),
        "stratum_weight": (pa.float64(), "the item's weight for a cell's estimate"),
    })
    for row in frames.labels.to_dict("records"):
        labels.rows.append({k: _plain(row[k]) for k in labels.columns if k != "rater"}
                           | {"rater": pseudonym(row["rater"])})
    fidelity = Table("fidelity_labels", "People's answers to the fidelity questions: did the "
                     "simulated user break, did the target show test awareness.", {
        "kind": (pa.string(), "the kind of break asked about"),
        "conv_id": (pa.string(), "the conversation"),
        "target": (pa.string(), "the target"),
        "rater": (pa.string(), "the rater's pseudonym"),
        "label": (pa.string(), "present, absent or unsure"),
    })
    for row in frames.fidelity.to_dict("records"):
        fidelity.rows.append({k: _plain(row[k]) for k in fidelity.columns if k != "rater"}
                             | {"rater": pseudonym(row["rater"])})
    return [labels, fidelity]


def _plain(value):
    """A pandas missing value as null."""
    try:
        import pandas as pd

        return None if pd.isna(value) else value
    except (TypeError, ValueError):
        return value
