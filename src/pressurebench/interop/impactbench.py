"""Import an impactbench benchmark folder into pressurebench's layout.

impactbench writes plain JSON lists without envelopes or schema versions:
`benchmark.yaml`, `scenarios.json`, `runs/<target>/conversations.json` and
`runs/<target>/scores.json`. Rows accumulate keys as they pass through its
stages (`_sample`, `_usage`, `metric_name`, the target's config ...), and its
format drifted between versions, so the reader is liberal in what it accepts
and strict in what it writes: every output row validates against our schemas.

What is taken from where, and why:
- A variant's persona is `user_persona` when present: impactbench's rewrite adds
  the demographic persona there and leaves the base persona in `persona`.
- `base_id` missing: derived from the lineage id; `demographic` missing: `{}`
  (scores carry none, so theirs comes from the scenario with the same id).
- A verdict counts only if `present` is a real JSON boolean. impactbench
  applied `bool()`, under which the string "false" is True; a string, a number
  or null becomes an error row with the reason and no verdict. `passed` is
  recomputed from `present` and the metric type in benchmark.yaml (impactbench's
  score rows can carry the scenario's metric type instead of the scored one's);
  a stored `passed` that contradicts it is an error row too.
- A conversation's system prompt is the one impactbench used: the scenario's
  `target_system_prompt`, else the benchmark's `user_context`, else its default.
- The user model and per-model usage were not recorded per row: `user_model` is
  "unknown" and usage is left empty rather than guessed.

A row that cannot be represented at all (no usable id, an unknown metric, a
repeated key) is dropped and listed, with its file and index, in the report.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from ..errors import ConfigError, field_path
from ..io import (
    read_artifact,
    read_json,
    read_yaml,
    read_yaml_model,
    validate_as,
    write_artifact,
    write_yaml_model,
)
from ..paths import Layout
from ..schemas import (
    Benchmark,
    Conversation,
    ConversationsFile,
    GenerationError,
    Message,
    Scenario,
    ScenariosFile,
    Score,
    ScoresFile,
    base_id_of,
    conv_id,
)

IMPACTBENCH_DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
UNKNOWN_USER_MODEL = "unknown"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
R = TypeVar("R", Conversation, Score)


@dataclass
class RunReport:
    conversations: int = 0
    conversation_errors: int = 0
    scores: int = 0
    score_errors: int = 0


@dataclass
class ImpactbenchReport:
    """What was imported, how much of it became error rows, and what could not be imported."""

    name: str
    root: Path
    metrics: int = 0
    scenarios: int = 0
    scenario_errors: int = 0
    runs: dict[str, RunReport] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)

    @property
    def error_rows(self) -> int:
        return self.scenario_errors + sum(
            r.conversation_errors + r.score_errors for r in self.runs.values()
        )

    def lines(self) -> list[str]:
        out = [
            f"imported '{self.name}' into {self.root}",
            f"  benchmark.yaml    {self.metrics} metrics",
            f"  scenarios.json    {self.scenarios} rows, {self.scenario_errors} error rows",
        ]
        for target, r in self.runs.items():
            out.append(
                f"  runs/{target}: {r.conversations} conversations ({r.conversation_errors} error rows), "
                f"{r.scores} scores ({r.score_errors} error rows)"
            )
        out.append(f"  {self.error_rows} error rows in total; {len(self.dropped)} rows dropped")
        out += [f"    dropped {d}" for d in self.dropped]
        return out


def import_impactbench(
    src: str | Path, name: str | None = None, data_dir: str | Path = "data"
) -> ImpactbenchReport:
    """Read the impactbench folder `src` and write `data_dir/<name>/...`; refuse to overwrite."""
    src = Path(src)
    if not src.is_dir():
        raise ConfigError(src, "not a directory")
    name = name or src.resolve().name
    if not _NAME.match(name):
        raise ConfigError(
            src, f"'{name}' cannot be a benchmark id (letters, digits, . _ -); pass --name"
        )
    layout = Layout(Path(data_dir), name)
    if layout.root.exists():
        raise ConfigError(layout.root, "already exists; remove it or import under another --name")

    report = ImpactbenchReport(name=name, root=layout.root)
    bench = _benchmark(src / "benchmark.yaml", name)
    report.metrics = len(bench.metrics)
    scenarios = (
        _scenarios(src / "scenarios.json", bench, report)
        if (src / "scenarios.json").exists()
        else None
    )
    by_id = {s.id: s for s in scenarios.rows} if scenarios else {}
    runs: dict[str, tuple[ConversationsFile | None, ScoresFile | None]] = {}
    for run_dir in sorted(p for p in (src / "runs").glob("*") if p.is_dir()):
        target = run_dir.name
        rows = _run_rows(run_dir, "conversations.json", report,
                         partial(_conversation, target=target, bench=bench, scenarios=by_id))
        conversations = (None if rows is None
                         else ConversationsFile(benchmark=name, target=target, rows=rows))
        scored = _run_rows(run_dir, "scores.json", report,
                           partial(_score, target=target, bench=bench, scenarios=by_id))
        scores = None if scored is None else ScoresFile(benchmark=name, target=target, rows=scored)
        report.runs[target] = RunReport(
            conversations=len(rows or []),
            conversation_errors=sum(c.status == "error" for c in rows or []),
            scores=len(scored or []),
            score_errors=sum(s.status == "error" for s in scored or []),
        )
        runs[target] = (conversations, scores)

    write_yaml_model(layout.benchmark_file, bench)
    read_yaml_model(layout.benchmark_file, Benchmark)
    if scenarios is not None:
        _write(layout.scenarios_file, scenarios)
    for target, (conversations, scores) in runs.items():
        if conversations is not None:
            _write(layout.conversations_file(target), conversations)
        if scores is not None:
            _write(layout.scores_file(target), scores)
    return report


def _write(path: Path, artifact: ScenariosFile | ConversationsFile | ScoresFile) -> None:
    """Write an artifact and read it back as every later stage will."""
    write_artifact(path, artifact)
    read_artifact(path, type(artifact))


# --- files --------------------------------------------------------------------


def _benchmark(path: Path, name: str) -> Benchmark:
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError(path, "expected a mapping with name, description and metrics")
    metrics = data.get("metrics") or []
    if not isinstance(metrics, list):
        raise ConfigError(path, "expected a list", "metrics")
    scenario = data.get("scenario")
    if not isinstance(scenario, dict):
        scenario = {}
    return validate_as(
        path,
        Benchmark,
        {
            "name": name,
            "description": _stripped(data.get("description")),
            "scenario": {"user_context": _stripped(scenario.get("user_context")) or None},
            "metrics": [_metric(m) for m in metrics],
        },
    )


def _metric(m: Any) -> Any:
    if not isinstance(m, dict):
        return m  # validation reports it with its index
    kind = m.get("type")
    examples = m.get("examples") or []
    return {
        "id": m.get("id"),
        "name": _stripped(m.get("name")),
        "type": kind.strip().lower() if isinstance(kind, str) else kind,
        "definition": _stripped(m.get("definition")),
        "examples": [_stripped(e) for e in examples] if isinstance(examples, list) else examples,
    }


def _list_file(path: Path) -> list:
    data = read_json(path)
    if isinstance(data, dict) and isinstance(data.get("rows"), list):
        return data["rows"]
    if not isinstance(data, list):
        raise ConfigError(path, f"expected a JSON list of rows, found {type(data).__name__}")
    return data


class Dropped(Exception):
    """A row that cannot become any valid row, not even an error row."""


def _rows(
    path: Path, label: str, report: ImpactbenchReport, convert: Callable[[dict, str], R]
) -> list[R]:
    """Convert every row; drop (and report) unusable ones and repeated keys."""
    out: list[R] = []
    seen = set()
    for i, row in enumerate(_list_file(path)):
        where = f"{label}[{i}]"
        try:
            if not isinstance(row, dict):
                raise Dropped(f"not an object but {type(row).__name__}")
            converted = convert(row, where)
        except Dropped as exc:
            report.dropped.append(f"{where}: {exc}")
            continue
        key = _key(converted)
        if key in seen:
            report.dropped.append(f"{where}: repeats {key}")
            continue
        seen.add(key)
        out.append(converted)
    return out


def _run_rows(
    run_dir: Path, file: str, report: ImpactbenchReport, convert: Callable[[dict, str], R]
) -> list[R] | None:
    """The converted rows of one of a target's files (`_rows`); None without the file."""
    path = run_dir / file
    return _rows(path, f"runs/{run_dir.name}/{file}", report, convert) if path.exists() else None


def _key(row: Conversation | Score) -> str:
    return row.conv_id if isinstance(row, Conversation) else f"{row.conv_id} metric {row.metric_id}"


# --- scenarios ------------------------------------------------------------------


def _scenarios(path: Path, bench: Benchmark, report: ImpactbenchReport) -> ScenariosFile:
    metric_ids = {m.id for m in bench.metrics}
    rows: list[Scenario] = []
    errors: list[GenerationError] = []
    seen: set[str] = set()
    for i, raw in enumerate(_list_file(path)):
        where = f"scenarios.json[{i}]"
        if not isinstance(raw, dict):
            report.dropped.append(f"{where}: not an object but {type(raw).__name__}")
            continue
        sid = raw.get("id")
        if sid in seen:
            report.dropped.append(f"{where}: repeats scenario id '{sid}'")
            continue
        try:
            row = _scenario(raw)
            if row.metric_id not in metric_ids:
                raise ValueError(f"metric '{row.metric_id}' is not in benchmark.yaml")
        except (ValueError, ValidationError) as exc:
            errors.append(
                GenerationError(
                    stage="gen_scenarios",
                    metric_id=_str_or_none(raw.get("metric_id")),
                    base_id=_base_id_or_none(sid),
                    demographic=_demographic(raw.get("demographic"))
                    if isinstance(raw.get("demographic"), dict)
                    else None,
                    reason=f"imported {where} (id {sid!r}) is invalid: {_why(exc)}",
                )
            )
            continue
        seen.add(row.id)
        rows.append(row)
    report.scenarios, report.scenario_errors = len(rows), len(errors)
    return ScenariosFile(benchmark=bench.name, rows=rows, errors=errors)


def _scenario(raw: dict) -> Scenario:
    sid = raw.get("id")
    if not isinstance(sid, str):
        raise ValueError("no scenario id")
    return Scenario.model_validate(
        {
            "id": sid,
            "metric_id": raw.get("metric_id") or sid.split("_", 1)[0],
            "base_id": raw.get("base_id") or base_id_of(sid),
            "persona": raw.get("user_persona") or raw.get("persona"),
            "user_goal": raw.get("user_goal"),
            "latent_adversarial_goal": raw.get("latent_adversarial_goal"),
            "landmarks": raw.get("landmarks") or [],
            "demographic": _demographic(raw.get("demographic")),
            "system_prompt": raw.get("system_prompt") or raw.get("target_system_prompt"),
        }
    )


# --- conversations ----------------------------------------------------------------


def _conversation(
    row: dict, where: str, target: str, bench: Benchmark, scenarios: dict[str, Scenario]
) -> Conversation:
    sid = _scenario_id(row)
    sample = _sample(row)
    scenario = scenarios.get(sid)
    fields = {
        "conv_id": conv_id(sid, target, sample),
        "scenario_id": sid,
        "base_id": base_id_of(sid),
        "metric_id": sid.split("_", 1)[0],
        "target": target,
        "sample": sample,
        "demographic": _demographic(row.get("demographic"))
        or (scenario.demographic if scenario else {}),
        "user_model": _str_or_none(row.get("user_model")) or UNKNOWN_USER_MODEL,
        "system_prompt": (
            _str_or_none(row.get("target_system_prompt"))
            or (scenario.system_prompt if scenario else None)
            or bench.scenario.user_context
            or IMPACTBENCH_DEFAULT_SYSTEM_PROMPT
        ),
    }
    try:
        transcript = [
            Message.model_validate(m) for m in _as_list(row.get("transcript"), "transcript")
        ]
        problem = _transcript_problem(transcript)
    except (ValueError, ValidationError) as exc:
        transcript, problem = [], f"unreadable transcript: {_why(exc)}"
    if problem:
        return Conversation(
            **fields,
            transcript=transcript,
            status="error",
            error=f"imported {where}: {problem}",
            turns=_user_turns(transcript),
        )
    return Conversation(**fields, transcript=transcript, status="ok", turns=_user_turns(transcript))


def _transcript_problem(transcript: list[Message]) -> str | None:
    if not any(m.role == "assistant" for m in transcript):
        return "no assistant reply in the transcript"
    empty = [i for i, m in enumerate(transcript) if not m.content.strip()]
    if empty:
        return f"empty message at transcript[{empty[0]}]"
    return None


def _user_turns(transcript: list[Message]) -> int:
    return sum(m.role == "user" for m in transcript)


# --- scores ----------------------------------------------------------------------


def _score(
    row: dict, where: str, target: str, bench: Benchmark, scenarios: dict[str, Scenario]
) -> Score:
    sid = _scenario_id(row)
    sample = _sample(row)
    metric_id = row.get("metric_id")
    try:
        if not isinstance(metric_id, str):  # never a metric's id
            raise KeyError(metric_id)
        metric = bench.metric(metric_id)
    except KeyError:
        raise Dropped(f"scored metric {metric_id!r} is not in benchmark.yaml") from None
    scenario = scenarios.get(sid)
    fields = {
        "conv_id": conv_id(sid, target, sample),
        "scenario_id": sid,
        "base_id": base_id_of(sid),
        "metric_id": metric.id,
        "scenario_metric_id": sid.split("_", 1)[0],
        "metric_type": metric.type,
        "target": target,
        "sample": sample,
        "demographic": _demographic(row.get("demographic"))
        or (scenario.demographic if scenario else {}),
        "justification": _str_or_none(row.get("justification")),
    }
    present = row.get("present")
    if not isinstance(present, bool):
        if present is None:
            why = "no verdict (present is null)"
            if fields["justification"]:
                why += f": {fields['justification']}"
        else:
            why = f"present is {present!r} ({type(present).__name__}), not a JSON boolean; not coerced"
        return Score(**fields, status="error", error=f"imported {where}: {why}")
    passed = present if metric.type == "positive" else not present
    stored = row.get("passed")
    if stored is not None and stored is not passed:
        return Score(
            **fields,
            status="error",
            error=(
                f"imported {where}: stored passed={stored!r} contradicts present={present} "
                f"for {metric.type} metric {metric.id}"
            ),
        )
    return Score(**fields, present=present, passed=passed, status="ok")


# --- fields ------------------------------------------------------------------------


def _scenario_id(row: dict) -> str:
    sid = row.get("scenario_id") or row.get("id")
    if not isinstance(sid, str):
        raise Dropped("no scenario id")
    try:
        base_id_of(sid)
    except ValueError as exc:
        raise Dropped(str(exc)) from None
    return sid


def _sample(row: dict) -> int:
    sample = row.get("sample", row.get("_sample", 0))
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise Dropped(f"sample index {sample!r} is not a non-negative integer")
    return sample


def _demographic(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def _as_list(value: Any, what: str) -> list:
    if not isinstance(value, list):
        raise ValueError(f"{what} is {type(value).__name__}, not a list")
    return value


def _stripped(value: Any) -> Any:
    """YAML block scalars end in a newline; other types are left for validation to report."""
    return value.strip() if isinstance(value, str) else value


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def _base_id_or_none(sid: Any) -> str | None:
    try:
        return base_id_of(sid) if isinstance(sid, str) else None
    except ValueError:
        return None


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return f"{field_path(tuple(err.get('loc', ())))}: {err.get('msg')}"
    return str(exc)
