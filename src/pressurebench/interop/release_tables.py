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

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
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


# The tables' columns, declared once as data: name, Arrow type and meaning (the dataset card
# and the Croissant metadata show the meanings). A type is "string", "int64", "float64",
# "bool", "list<T>", or a struct the file names under "structs".
DECLARED = Path(__file__).parent / "release_columns" / "tables.json"


@functools.cache
def _declarations() -> dict[str, Any]:
    return json.loads(DECLARED.read_text(encoding="utf-8"))


def _arrow_type(kind: str, structs: dict[str, dict[str, str]]):
    import pyarrow as pa

    if kind.startswith("list<") and kind.endswith(">"):
        return pa.list_(_arrow_type(kind[len("list<"):-1], structs))
    if kind in structs:
        return pa.struct([(name, _arrow_type(k, structs)) for name, k in structs[kind].items()])
    return {"string": pa.string(), "int64": pa.int64(), "float64": pa.float64(),
            "bool": pa.bool_()}[kind]


def declared(name: str, axes: list[str] | None = None) -> Table:
    """The table `name` with no rows, its columns as declared (and one per demographic axis
    where `axes` are given)."""
    declarations = _declarations()
    table = declarations["tables"][name]
    columns = {column: (_arrow_type(kind, declarations["structs"]), meaning)
               for column, (kind, meaning) in table["columns"].items()}
    return Table(name, table["description"], columns | _demo_columns(axes or []))


def _demo(axes: list[str], values: dict[str, str]) -> dict:
    return {f"demographic_{a}": values.get(a) for a in axes}


def metrics_table(arms: list[ArmRun]) -> Table:
    table = declared("metrics")
    for run in arms:
        if run.inputs.generates:
            table.rows += [{"arm": run.name, "metric_id": m.id, "name": m.name, "type": m.type,
                            "definition": m.definition, "examples": list(m.examples)}
                           for m in run.benchmark.metrics]
    return table


def scenarios_table(arms: list[ArmRun], axes: list[str]) -> Table:
    table = declared("scenarios", axes)
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
    table = declared("conversations", axes)
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
    table = declared("scores", axes)
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
    table = declared("results")
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
    pseudonyms: dict[str, str] = {}

    def pseudonym(name: str) -> str:
        return pseudonyms.setdefault(name, f"rater-{len(pseudonyms) + 1:02d}")

    labels = declared("labels")
    for row in frames.labels.to_dict("records"):
        labels.rows.append({k: _plain(row[k]) for k in labels.columns if k != "rater"}
                           | {"rater": pseudonym(row["rater"])})
    fidelity = declared("fidelity_labels")
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
