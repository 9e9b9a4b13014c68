"""An imported target's conversations, as the simulate stage writes them for the rest of the
pipeline (evaluate, aggregate, labels, compare read them unchanged).

One row per imported conversation. A sample that names its metric (metadata `metric`) is
judged on that metric alone; one that names none is judged on every metric of the benchmark
from its one row, as `evaluation.evaluate_all_metrics` judges a simulated conversation: its
row's own metric (the stratum its cluster is resampled in) is the benchmark's first, and every
judgement of it lies in one cluster, so intervals pooled over metrics count it once.

A row's `base_id` is its resampling cluster: the value of the declared `cluster_by` field, else
the sample's id (its epochs together). Clusters lie within one stratum, so the cluster of a
sample that names its metric is prefixed with that metric. There are no demographic variants,
hence no gaps; and no scenario, hence no check of the simulated user (only the target's test
awareness).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import ConfigError
from ..io import read_artifact
from ..llm.providers.registry import api_class
from ..params import ImportedConversations, Params
from ..paths import imported_file
from ..schemas import Benchmark, Conversation, conv_id
from .records import ImportedConversation, ImportedFile

USER_MODEL = "imported"
PROVENANCE_KEY = "imported"
# The scenario id's prefix of a conversation judged on every metric (its sample named none).
EVERY_METRIC = "all"


def is_imported(params: Params, target: str) -> bool:
    spec = params.models.get(target)
    return spec is not None and api_class(spec.provider).conversations_imported


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


def skip_reason(params: Params, benchmark: str, target: str) -> str:
    """Why `benchmark` does not run the imported `target` (`Params.imported_elsewhere`)."""
    imported_for = ", ".join(sorted(params.models[target].imported or {})) or "no benchmark"
    return (f"'{target}' is imported for {imported_for} only: `pressurebench import --benchmark "
            f"{benchmark} --target {target} FILE...` adds conversations for '{benchmark}'")


def judged_on_every_metric(conv: Conversation) -> bool:
    """Whether `conv` is an imported conversation whose sample named no metric."""
    return conv.scenario_id.startswith(f"{EVERY_METRIC}:")


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
    if not known:
        raise ConfigError(path, "the benchmark defines no metric to judge the conversations on")
    rows = []
    for i, row in enumerate(imported.rows):
        if row.metric is not None and row.metric not in known:
            raise ConfigError(
                path, f"sample '{row.key}' names metric '{row.metric}', which the benchmark does "
                f"not define (known: {', '.join(known)})", f"rows[{i}].metric",
            )
        cluster = cluster_of(row, imported.cluster_by)
        # An Inspect sample's epochs are samples of one scenario, as simulated samples are.
        scenario = f"{row.metric or EVERY_METRIC}:{row.id}"
        rows.append(Conversation(
            conv_id=conv_id(scenario, target, row.sample), scenario_id=scenario,
            # A cluster lies within one stratum (the row's metric): see the module's docstring.
            base_id=f"{row.metric}/{cluster}" if row.metric else cluster,
            metric_id=row.metric or known[0], target=target, sample=row.sample,
            user_model=USER_MODEL, system_prompt=row.system_prompt, transcript=row.messages,
            status="ok", turns=sum(m.role == "user" for m in row.messages),
            model_versions={"target": row.model} if row.model else {},
        ))
    return sorted(rows, key=lambda r: (r.scenario_id, r.sample))


def import_provenance(declared: ImportedConversations, benchmark: str, target: str) -> dict:
    """What the simulate manifest of an imported target records of its import; the results
    read it back (`imported_notes`), so aggregate needs no param beyond the ones it declares."""
    return {"file": str(imported_file(benchmark, target)), **declared.model_dump(mode="json")}


def check_imports(params: Params, params_path: str | Path) -> list[str]:
    """`pressurebench check`: every imported target has, for each benchmark it was imported
    for, the normalized copy its entry declares (a missing or edited one is an error naming
    it); a line each, and one per benchmark that skips it."""
    lines = []
    for target in params.targets:
        if not is_imported(params, target):
            continue
        for benchmark in params.benchmarks:
            if params.imported_elsewhere(target, benchmark):
                lines.append(f"imported target {target}: none imported for {benchmark}, which "
                             "skips it (its reports say so)")
                continue
            declared = declaration(params, params_path, benchmark, target)
            read_imported(params, params_path, benchmark, target)
            clustering = (f"clustered by `{declared.cluster_by}`" if declared.cluster_by
                          else "each conversation its own cluster")
            lines.append(f"imported target {target} of {benchmark}: {declared.conversations} "
                         f"conversations from {len(declared.sources)} file(s), {clustering}")
    return lines
