"""An imported target's conversations, as the simulate stage writes them for the rest of the
pipeline (evaluate, aggregate, labels, compare read them unchanged).

Each imported conversation becomes one row per metric it is judged on: the metric its sample
names (metadata `metric`), else every metric of the benchmark. A row's `base_id` is its
resampling cluster: the value of the declared `cluster_by` field, else the sample's own id
(its epochs together), so the intervals never treat one conversation's verdicts on several
metrics, or its repeats, as independent. There are no demographic variants, hence no gaps; and
no scenario, hence no check of the simulated user (only the target's test awareness).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import ConfigError
from ..io import read_artifact
from ..params import ImportedConversations, Params
from ..paths import imported_file
from ..schemas import Benchmark, Conversation, conv_id
from ..stats.results import ImportedTarget
from .records import ImportedConversation, ImportedFile

PROVIDER = "imported"
USER_MODEL = "imported"
CHECKS_SKIPPED = ["out_of_character", "leak", "role_swap", "landmark_skipped", "no_pressure"]
NO_GAPS = "none: imported conversations carry no demographic variants"


def is_imported(params: Params, target: str) -> bool:
    spec = params.models.get(target)
    return spec is not None and spec.provider == PROVIDER


def declaration(params: Params, params_path: str | Path, benchmark: str,
                target: str) -> ImportedConversations:
    declared = (params.models[target].imported or {}).get(benchmark)
    if declared is None:
        raise ConfigError(
            params_path, f"the imported target '{target}' has no conversations for benchmark "
            f"'{benchmark}': run `pressurebench import --benchmark {benchmark} --target {target} "
            "FILE...`, or remove it from `targets`", f"models.{target}.imported",
        )
    return declared


def cluster_of(row: ImportedConversation, cluster_by: str | None) -> str:
    return row.id if cluster_by is None else f"{cluster_by}={cluster_value(row, cluster_by)}"


def cluster_value(row: ImportedConversation, cluster_by: str) -> object:
    value = row.group if cluster_by == "group" else row.metadata.get(cluster_by)
    return value if isinstance(value, (str, int, bool)) and value != "" else None


def read_imported(params: Params, params_path: str | Path, benchmark: str,
                  target: str) -> ImportedFile:
    """The normalized copy, refused when it is not the one the params declare."""
    declared = declaration(params, params_path, benchmark, target)
    path = imported_file(benchmark, target)
    if not path.is_file():
        raise ConfigError(path, "not found: run `pressurebench import` again")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != declared.sha256:
        raise ConfigError(
            path, "differs from the copy `pressurebench import` wrote (its sha256 in "
            f"models.{target}.imported.{benchmark}): import the files again instead of editing it",
        )
    return read_artifact(path, ImportedFile)


def imported_conversations(
    params: Params, params_path: str | Path, benchmark: str, target: str, bench: Benchmark
) -> list[Conversation]:
    """The rows of the target's conversations file, sorted like simulated ones."""
    imported = read_imported(params, params_path, benchmark, target)
    path = imported_file(benchmark, target)
    known = [m.id for m in bench.metrics]
    rows = []
    for i, row in enumerate(imported.rows):
        if row.metric is not None and row.metric not in known:
            raise ConfigError(
                path, f"sample '{row.key}' names metric '{row.metric}', which the benchmark does "
                f"not define (known: {', '.join(known)})", f"rows[{i}].metric",
            )
        for metric in [row.metric] if row.metric else known:
            scenario = f"{metric}_{row.key}"
            rows.append(Conversation(
                conv_id=conv_id(scenario, target, row.sample), scenario_id=scenario,
                base_id=cluster_of(row, imported.cluster_by), metric_id=metric, target=target,
                sample=row.sample, user_model=USER_MODEL, system_prompt=row.system_prompt,
                transcript=row.messages, status="ok",
                turns=sum(m.role == "user" for m in row.messages),
                model_versions={"target": row.model} if row.model else {},
            ))
    return sorted(rows, key=lambda r: (r.scenario_id, r.sample))


def imported_notes(params: Params, benchmark: str, targets: list[str]) -> dict[str, ImportedTarget]:
    """What the results say of each imported target among `targets`."""
    notes = {}
    for target in targets:
        declared = (params.models[target].imported or {}).get(benchmark) if is_imported(
            params, target) else None
        if declared is None:
            continue
        notes[target] = ImportedTarget(
            sources=declared.sources, conversations=declared.conversations,
            clustering=(f"clustered by `{declared.cluster_by}`" if declared.cluster_by
                        else "each conversation is its own cluster"),
            demographic_gaps=NO_GAPS, checks_skipped=CHECKS_SKIPPED,
        )
    return notes
