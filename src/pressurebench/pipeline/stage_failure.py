"""What a failed stage leaves behind: a report that says what to do, and a documented exit code.

A stage that fails is exactly when a reader needs a report, so the executed
notebook is rendered whatever happened, with a first section that names the
error, says what to do about it and, when the stage wrote its artifacts before
failing (an error budget exceeded), lists its error rows grouped by reason.

Exit codes are the command line's (`pressurebench.commands.cli`), under `dvc repro` too:
2 for a problem in the inputs or settings the user can fix (every
`PressurebenchError` but the next two), 3 for a stage above `run.max_error_rate`,
130 for a stage stopped by Ctrl-C, 4 for a native crash (`native_crash`), 1 for anything
unexpected.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from pathlib import Path

import nbformat
import pandas as pd

from ..errors import EXIT_INTERRUPTED, EXIT_UNEXPECTED, PressurebenchError

ADVICE = {
    "StageFailed": (
        "Too many rows failed. Read their reasons below, fix the cause (an endpoint, an API key, "
        "a model name, a token budget), then run `dvc repro` again: calls that finished are "
        "cached and are not repeated. To accept more failures, raise run.max_error_rate."
    ),
    "ConfigError": (
        "A file or setting is wrong: fix the file and field named below, then run again. "
        "`pressurebench check` finds most of these before anything is spent."
    ),
    "ProviderAuthError": (
        "The provider refused the credentials (HTTP 401 or 403): check the API key variable the "
        "params name for this model (`pressurebench check` tries every key)."
    ),
    "ProviderNotFound": (
        "The provider answered HTTP 404 (not found): it serves no model of this name at this "
        "base_url, or the base_url leads to no API of it. `pressurebench check` asks each "
        "endpoint's model list and says which, before anything is spent."
    ),
    "RequestsRefused": (
        "The provider rejected the same request several times: a setting of this model is not "
        "accepted by its API (the message says which). Fix it in the params and run again."
    ),
    "SpendingCapReached": (
        "run.max_cost_usd was reached: nothing more was sent. Raise the cap to continue; "
        "everything already paid for is cached."
    ),
    "StageInterrupted": (
        "The stage was stopped by Ctrl-C (SIGINT). Nothing is wrong with it: run it again (or "
        "`dvc repro`) to continue. Calls answered before the stop are cached and replayed for "
        "free; calls already sent when it came were let finish first, unless a second Ctrl-C "
        "stopped at once, in which case those are sent again."
    ),
}
# A Ctrl-C that stopped the stage outside its model calls is the same stop.
INTERRUPTS = {"KeyboardInterrupt": "StageInterrupted"}
GENERIC_ADVICE = (
    "The stage stopped on an error it does not expect. The executed notebook below shows "
    "where; please report it with this page."
)
STAGE_ERROR_ROWS = {"gen_metrics", "gen_scenarios", "simulate", "evaluate"}


def _user_errors() -> dict[str, type[PressurebenchError]]:
    """Every error a user can act on (subclasses of PressurebenchError), by class name."""
    from ..llm import spending, types  # noqa: F401 - their classes join the hierarchy

    found, todo = {}, [PressurebenchError]
    while todo:
        cls = todo.pop()
        found[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return found


def _user_error_names() -> set[str]:
    return set(_user_errors()) | set(INTERRUPTS)


def exit_code(error_name: str) -> int:
    """The command line's exit code for a stage that raised `error_name`."""
    if error_name in INTERRUPTS:
        return EXIT_INTERRUPTED
    cls = _user_errors().get(error_name)
    return EXIT_UNEXPECTED if cls is None else cls.exit_code


def stage_of(notebook: str | Path) -> str:
    """`notebooks/03_simulate.ipynb` → `simulate`."""
    return re.sub(r"^\d+_", "", Path(notebook).stem)


def reason_pattern(reason: str) -> str:
    """A reason with its stand-alone numbers and quoted values generalised, so rows failing alike
    group. Numbers inside hosts, ports, versions and model names (`127.0.0.1:8765`, `gpt-4o`)
    are part of what failed and stay."""
    text = re.sub(r"'[^']*'", "'…'", " ".join(reason.split()))
    return re.sub(r"(?<![\w.:/-])\d+(\.\d+)?(?![\w/-]|[.:]\d)", "N", text)


# The fix for each kind of failed call, by what the provider or transport said. Patterns are
# tried in order on the reason; `{url}`, `{model}` and `{key}` come from the reason and params.
FIXES = [
    (re.compile(r"connection error|cannot connect|connection refused|name or service not known",
                re.IGNORECASE),
     ("Nothing answered at {url}: is a server running there, and is `base_url` of {model} right? "
      "`pressurebench check` tries every endpoint before anything is spent.")),
    (re.compile(r"HTTP 401|HTTP 403", re.IGNORECASE),
     ("The provider refused the credentials of {model}: check the key in {key} "
      "(`pressurebench check` tries every key).")),
    (re.compile(r"HTTP 404", re.IGNORECASE),
     ("The provider does not serve the model {model} at {url} (or this key cannot use it): "
      "check its `model` name against the provider's model list, and its `base_url` "
      "(`pressurebench check` asks the list).")),
    (re.compile(r"HTTP 429|rate limit", re.IGNORECASE),
     ("The provider kept rate-limiting {model}: lower its `max_concurrency` or set "
      "`requests_per_minute`, then run again; finished calls are cached.")),
    (re.compile(r"timed? ?out|timeout", re.IGNORECASE),
     ("Calls to {model} timed out: raise its `timeout_s`, or check that {url} is up.")),
    (re.compile(r"HTTP 400|HTTP 422", re.IGNORECASE),
     ("The provider rejected the request of {model}; its own message is quoted below. Fix the "
      "setting it names in the params.")),
]


def _culprit(reason: str, parameters: dict[str, str]) -> dict[str, str]:
    """The url, model and key variable a failed call's reason names, as far as they can be found
    (the reason starts with the provider's `describe()`: `<provider> <model> at <url>`)."""
    found = {"url": "the model's endpoint", "model": "the model", "key": "its `api_key_env` variable"}
    if url := re.search(r"https?://[^\s:/]+(:\d+)?[^\s:]*", reason):
        found["url"] = url.group(0).rstrip(".,;)")
    try:
        from ..params import load_params

        models = load_params(parameters["params_path"]).models
    except Exception:  # noqa: BLE001 - advice without the params is still advice
        return found
    for model_id, spec in models.items():
        if re.search(rf"(^|\s){re.escape(spec.model)}(\s|:|$)", reason):
            found["model"] = f"`{model_id}` ({spec.model})"
            if spec.api_key_env:
                found["key"] = f"${spec.api_key_env}"
            break
    return found


def fix_for(reason: str, parameters: dict[str, str]) -> str | None:
    """What to do about a failed call, from its reason; None when the reason is of no known kind.
    The values quoted come from a provider's error text, so they are HTML-escaped for the page."""
    for pattern, fix in FIXES:
        if pattern.search(reason):
            return fix.format(**{k: html.escape(v) for k, v in _culprit(reason, parameters).items()})
    return None


def error_reasons(stage: str, parameters: dict[str, str]) -> tuple[Path | None, pd.DataFrame]:
    """The artifact holding the stage's error rows, and those rows grouped by reason (the first
    row's reason in full, count, its id); no path and no rows when it wrote none."""
    from ..arms.inputs import resolve
    from ..io import read_artifact, read_yaml_model
    from ..params import load_params
    from ..schemas import Benchmark, ConversationsFile, ScenariosFile, ScoresFile

    columns = ["reason (the first row's, in full)", "rows", "first row"]
    if stage not in STAGE_ERROR_ROWS:
        return None, pd.DataFrame(columns=columns)
    try:
        params_path = parameters["params_path"]
        params = load_params(params_path)
        inputs = resolve(params_path, params, parameters["benchmark"], parameters.get("arm") or None)
        target = parameters.get("target")
        if stage == "gen_metrics":
            path = inputs.metrics_file
            rows: list[tuple[str | None, str]] = [
                (e.reason, e.metric_id or "—") for e in read_yaml_model(path, Benchmark).errors]
        elif stage == "gen_scenarios":
            path = inputs.scenarios_file
            rows = [(e.reason, e.base_id or e.metric_id or "—")
                    for e in read_artifact(path, ScenariosFile).errors]
        elif stage == "simulate":
            assert target is not None, "a target's stage is run with its target"
            path = inputs.layout.conversations_file(target)
            rows = [(c.error, c.conv_id)
                    for c in read_artifact(path, ConversationsFile).rows if c.status == "error"]
        else:
            assert target is not None, "a target's stage is run with its target"
            path = inputs.layout.scores_file(target)
            rows = [(s.error, s.conv_id)
                    for s in read_artifact(path, ScoresFile).rows if s.status == "error"]
    except Exception:  # noqa: BLE001 - the report must render even when the artifacts cannot
        return None, pd.DataFrame(columns=columns)
    counts = Counter(reason_pattern(r or "no reason") for r, _ in rows)
    example: dict[str, tuple[str, str]] = {}
    for reason, row_id in rows:
        example.setdefault(reason_pattern(reason or "no reason"), (reason or "no reason", row_id))
    return Path(path), pd.DataFrame(
        [(example[pattern][0], n, example[pattern][1]) for pattern, n in counts.most_common()],
        columns=columns,
    )


def failure_cells(
    notebook: str | Path, parameters: dict[str, str], error_name: str, error_value: str
) -> list[nbformat.NotebookNode]:
    """The cells put in front of a failed stage's executed notebook."""
    stage = stage_of(notebook)
    named = INTERRUPTS.get(error_name, error_name)
    advice = ADVICE.get(named, GENERIC_ADVICE if named not in _user_error_names()
                        else ADVICE["ConfigError"])
    if named == "StageInterrupted":  # stopped on request: the files on disk are an earlier run's
        artifact, reasons, fix = None, pd.DataFrame(), None
    else:
        artifact, reasons = error_reasons(stage, parameters)
        fix = fix_for(str(reasons.iloc[0, 0]) if len(reasons) else error_value, parameters)
    what = " · ".join(v for k, v in parameters.items() if k != "params_path")
    cells = [nbformat.v4.new_markdown_cell(
        f"# {stage} {'stopped' if named == 'StageInterrupted' else 'failed'} ({what})\n\n"
        + (f"**What to do:** {fix}\n\n{advice}" if fix else f"**What to do:** {advice}")
        + f"\n\n**Error** (`{error_name}`, exit code {exit_code(error_name)}):"
    )]
    message = nbformat.v4.new_code_cell(source="")
    message.outputs = [nbformat.v4.new_output("stream", name="stdout", text=error_value)]
    cells.append(message)
    if len(reasons):
        cells.append(nbformat.v4.new_markdown_cell(
            f"## Error rows by reason\n\n{int(reasons['rows'].sum())} error rows in "
            f"`{artifact}`, grouped by reason (rows whose reasons differ only in stand-alone "
            "numbers and quoted values count together), each with its first row's reason in full."
        ))
        table = nbformat.v4.new_code_cell(source="")
        table.outputs = [nbformat.v4.new_output(
            "display_data", data={"text/html": reasons.to_html(index=False, escape=True),
                                  "text/plain": reasons.to_string(index=False)},
        )]
        cells.append(table)
    cells.append(nbformat.v4.new_markdown_cell(
        "## The notebook as far as it ran\n\nEverything below is the stage's own notebook, up "
        "to and including the cell that failed."
    ))
    return cells


def ran_cells(cells: list[nbformat.NotebookNode]) -> list[nbformat.NotebookNode]:
    """The cells up to and including the one that failed: the sections after it never ran, and
    their headings over nothing would read as empty results."""
    for i, cell in enumerate(cells):
        if cell.get("metadata", {}).get("papermill", {}).get("exception"):
            return cells[: i + 1]
    return cells


def write_failure_notebook(
    executed: Path, notebook: str | Path, parameters: dict[str, str], error_name: str,
    error_value: str,
) -> Path:
    """Put the failure section in front of the executed copy (written by papermill even on
    failure, or empty if no cell ran) and save it in place."""
    try:
        nb = nbformat.read(executed, as_version=4)
    except (OSError, ValueError):
        nb = nbformat.v4.new_notebook()
    nb.cells = failure_cells(notebook, parameters, error_name, error_value) + ran_cells(nb.cells)
    nbformat.write(nb, executed)
    return executed


def title_for(notebook: str | Path, parameters: dict[str, str], failed: bool = False) -> str:
    """`simulate · pressure-core · smollm2`, and `FAILED` when it did."""
    parts = [stage_of(notebook)] + [v for k, v in parameters.items() if k != "params_path"]
    return " · ".join(parts) + (" · FAILED" if failed else "")
