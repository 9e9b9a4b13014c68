"""A run comparison as a terminal table and as an HTML report beside the others.

The report is a notebook built in memory (markdown and table outputs, nothing
executed) and rendered by `reports.render`, so it gets the same page, the same
cleaning of every output and the same Content Security Policy as the stage
reports; tables come from `DataFrame.to_html`, which escapes every value.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import nbformat
import pandas as pd

from ..io import write_artifact
from ..reports.figures import ReportFigure, differences_panel, palette
from ..reports.index import COMPARE_DIR
from ..reports.render import render_node
from ..reports.tables import MISSING, format_rate, method_label
from ..run_totals import RunTotals, format_cost, format_seconds, totals_frame
from ..stats import methods
from ..stats.estimates import Difference
from .comparison import BenchmarkComparison, RunComparison
from .differences import GroupChange

TABLE_COLUMNS = ["group", "A", "B", "B − A", "interval", "n A", "n B", "errors A", "errors B"]


def format_change(change: GroupChange) -> str:
    """`+12.5 pp [+3.1, +21.9]` (percentage points), "—" where there is no change."""
    d = change.change
    if d.difference is None:
        return MISSING
    text = f"{d.difference * 100:+.1f} pp"
    if d.ci_low is not None and d.ci_high is not None:
        text += f" [{d.ci_low * 100:+.1f}, {d.ci_high * 100:+.1f}]"
    return text


def _group(change: GroupChange) -> str:
    return "overall" if change.kind == "overall" else f"{change.kind}: {change.group}"


def target_table(changes: list[GroupChange], notes: dict[str, int]) -> pd.DataFrame:
    """One target's groups; an interval withheld points to its reason in `notes` (numbered)."""
    rows = []
    for c in changes:
        d = c.change
        if d.ci_method == methods.NONE:
            reason = d.reason or "no interval"
            number = notes.setdefault(reason, len(notes) + 1)
            interval = f"no interval ({number})"
        else:
            interval = method_label(d.ci_method)
        rows.append([
            _group(c),
            format_rate(c.rate_a.rate, c.rate_a.ci_low, c.rate_a.ci_high),
            format_rate(c.rate_b.rate, c.rate_b.ci_low, c.rate_b.ci_high),
            format_change(c),
            interval,
            c.rate_a.n,
            c.rate_b.n,
            c.rate_a.n_error,
            c.rate_b.n_error,
        ])
    return pd.DataFrame(rows, columns=TABLE_COLUMNS)


def settings_table(comparison: RunComparison) -> pd.DataFrame:
    return pd.DataFrame(
        [
            [s.key, MISSING if s.value_a is None else s.value_a,
             MISSING if s.value_b is None else s.value_b, ", ".join(s.stages)]
            for s in comparison.settings
        ],
        columns=["setting", "A", "B", "recorded by"],
    )


def totals_side_by_side(a: RunTotals, b: RunTotals) -> pd.DataFrame:
    def column(t: RunTotals) -> list[str]:
        cached = MISSING if t.cached_calls is None else f"{t.cached_calls:,}"
        return [f"{len(t.stages)}", f"{t.calls:,}", cached, f"{t.failed_calls:,}",
                f"{t.input_tokens:,}", f"{t.cached_input_tokens:,}", f"{t.cache_write_tokens:,}",
                f"{t.output_tokens:,}", format_cost(t.cost_usd), format_cost(t.recorded_cost_usd),
                format_seconds(t.wall_s)]

    return pd.DataFrame(
        {"A": column(a), "B": column(b)},
        index=["stages", "calls", "cached calls", "failed calls", "input tokens",
               "of them cache reads", "cache writes", "output tokens", "cost paid by the last run",
               "cost of its calls when made", "wall time (sum of stages)"],
    )


def change_plot(bench: BenchmarkComparison) -> ReportFigure:
    """Every group's change B − A with its interval, one colour per target, around 0."""
    rows = list(dict.fromkeys(_group(c) for c in bench.changes))
    series: dict[str, dict[str, Difference]] = {}
    for c in bench.changes:
        series.setdefault(c.target, {})[_group(c)] = c.change
    colours = palette(len(series))
    fig = ReportFigure(figsize=(8, 0.9 + 0.35 * len(rows) * max(1, len(series)) ** 0.5))
    ax = fig.subplots()
    half = differences_panel(ax, rows, series, colours)
    ax.set_xlim(-half, half + 0.35 * half)
    ax.set_xlabel("change in pass rate, B − A")
    ax.legend(
        handles=[ax.plot([], [], marker="o", linestyle="", color=c, label=t)[0]
                 for t, c in zip(series, colours)],
        title="target", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
    )
    fig.tight_layout()
    return fig


def _png(fig: ReportFigure) -> nbformat.NotebookNode:
    data = base64.b64encode(fig._repr_png_()).decode("ascii")
    return nbformat.v4.new_output("display_data", data={"image/png": data})


def _interval_label(change: GroupChange) -> str:
    """The name a row's interval column shows, and the header counts."""
    d = change.change
    return "no interval" if d.ci_method == methods.NONE else method_label(d.ci_method)


def _pairing_text(bench: BenchmarkComparison) -> str:
    """How the runs are compared, and the method of every row's interval by the name the rows
    show: a paired comparison falls back to Newcombe's interval where a group's per-scenario
    differences do not vary, so the header cannot name one method for all rows."""
    how = "paired by base scenario" if bench.pairing.paired else "unpaired"
    used: dict[str, int] = {}
    for change in bench.changes:
        label = _interval_label(change)
        used[label] = used.get(label, 0) + 1
    each = "; ".join(f"{label} ({n} row{'s' if n != 1 else ''})" for label, n in used.items())
    text = f"Differences {how}: {bench.pairing.reason}. Intervals of B − A: {each or 'none'}."
    for run, only in (("A", bench.targets_only_a), ("B", bench.targets_only_b)):
        if only:
            text += f" Only in run {run} (not compared): {', '.join(only)}."
    return text


def _target_tables(bench: BenchmarkComparison) -> tuple[list[tuple[str, pd.DataFrame]], dict]:
    notes: dict[str, int] = {}
    by_target: dict[str, list[GroupChange]] = {}
    for change in bench.changes:
        by_target.setdefault(change.target, []).append(change)
    return [(t, target_table(cs, notes)) for t, cs in by_target.items()], notes


def _notes_text(notes: dict[str, int]) -> str:
    return "\n".join(f"({n}) {reason}" for reason, n in notes.items())


def terminal_text(comparison: RunComparison) -> str:
    """The comparison as plain text for a terminal."""
    level = f"{comparison.confidence_level:.0%}"
    out = [f"A = {comparison.run_a}", f"B = {comparison.run_b}",
           f"rates with {level} intervals; B − A in percentage points"]
    for bench in comparison.benchmarks:
        out += ["", f"== {bench.benchmark} ==", _pairing_text(bench)]
        tables, notes = _target_tables(bench)
        for target, table in tables:
            width = table["group"].str.len().max()
            left = {"group": lambda v, w=width: f"{v:<{w}}"}
            out += ["", f"-- {target} --", table.to_string(index=False, formatters=left)]
        if notes:
            out += ["", _notes_text(notes)]
    for run, only in (("A", comparison.benchmarks_only_a), ("B", comparison.benchmarks_only_b)):
        if only:
            out.append(f"benchmarks only in run {run} (not compared): {', '.join(only)}")
    out += ["", "== settings that differ (from the stages' manifests) =="]
    if comparison.settings:
        out.append(settings_table(comparison).to_string(index=False, max_colwidth=60))
    else:
        out.append("none: both runs recorded the same params, models, prompts and packages")
    out += ["", "== cost and time ==",
            totals_side_by_side(comparison.totals_a, comparison.totals_b).to_string()]
    return "\n".join(out)


def _html(frame: pd.DataFrame, index: bool = False) -> nbformat.NotebookNode:
    return nbformat.v4.new_output(
        "display_data",
        data={"text/html": frame.to_html(index=index, escape=True, border=0),
              "text/plain": frame.to_string(index=index)},
    )


def _cell(*outputs: nbformat.NotebookNode) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = list(outputs)
    return cell


def _escape_md(text: str) -> str:
    """Text for a markdown cell: markdown and markup characters shown as they are."""
    return re.sub(r"([\\`*_{}\[\]<>()#+!|])", r"\\\1", text)


def report_notebook(comparison: RunComparison) -> nbformat.NotebookNode:
    level = f"{comparison.confidence_level:.0%}"
    a, b = _escape_md(comparison.run_a), _escape_md(comparison.run_b)
    cells = [nbformat.v4.new_markdown_cell(
        f"# Run comparison\n\n**A** = {a}, **B** = {b}.\n\n"
        f"Each target's pass rates in both runs with their {level} intervals, and the change "
        "B − A in percentage points with its interval. Where both runs played the same scenarios "
        "the change is paired by base scenario (what makes a scenario hard in both runs cancels); "
        "otherwise the runs are independent samples of scenarios and the interval is wider. "
        "An interval that excludes 0 is a change beyond the noise of the scenarios; one that "
        "includes 0 is not evidence of no change. Where the design has too few base scenarios "
        "for an interval to keep its coverage, it is withheld and the note says why, as in the "
        "results report. Per-metric and per-demographic changes are many comparisons: expect "
        "one in twenty intervals to exclude 0 by chance."
    )]
    for bench in comparison.benchmarks:
        cells.append(nbformat.v4.new_markdown_cell(
            f"## {_escape_md(bench.benchmark)}\n\n{_escape_md(_pairing_text(bench))}"
        ))
        cells.append(_cell(_png(change_plot(bench))))
        tables, notes = _target_tables(bench)
        for target, table in tables:
            cells.append(nbformat.v4.new_markdown_cell(f"### {_escape_md(target)}"))
            cells.append(_cell(_html(table)))
        if notes:
            cells.append(nbformat.v4.new_markdown_cell(
                "\n\n".join(f"({n}) {_escape_md(r)}" for r, n in notes.items())
            ))
    for run, only in (("A", comparison.benchmarks_only_a), ("B", comparison.benchmarks_only_b)):
        if only:
            cells.append(nbformat.v4.new_markdown_cell(
                f"Benchmarks only in run {run} (not compared): {_escape_md(', '.join(only))}."
            ))
    cells.append(nbformat.v4.new_markdown_cell(
        "## What differs between the runs\n\nEvery param, model setting (system prompts "
        "included), reported model version, prompt template hash and package version the "
        "stages' manifests recorded, where the runs differ."
    ))
    if comparison.settings:
        cells.append(_cell(_html(settings_table(comparison))))
    else:
        cells.append(nbformat.v4.new_markdown_cell(
            "None: both runs recorded the same params, models, prompts and packages."
        ))
    cells.append(nbformat.v4.new_markdown_cell(
        "## Cost and time\n\nEvery stage of each run, validation arms included. Cost is "
        "*unknown*, not 0, where a model has no price; wall time is each stage's duration when "
        "it last ran, summed."
    ))
    cells.append(_cell(_html(totals_side_by_side(comparison.totals_a, comparison.totals_b), True)))
    for run, totals in (("A", comparison.totals_a), ("B", comparison.totals_b)):
        cells.append(nbformat.v4.new_markdown_cell(f"Run {run}, per stage:"))
        cells.append(_cell(_html(totals_frame(totals))))
    return nbformat.v4.new_notebook(cells=cells)


def report_name(run_a: str, run_b: str) -> str:
    """A file name for the pair: each label's characters outside `[A-Za-z0-9._-]` become `-`."""

    def slug(label: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.") or "run"

    return f"{slug(run_a)}__vs__{slug(run_b)}"


def write_report(comparison: RunComparison, reports_dir: str | Path) -> Path:
    """Write `<reports_dir>/compare/<A>__vs__<B>.html` and the comparison as JSON beside it."""
    folder = Path(reports_dir) / COMPARE_DIR
    name = report_name(comparison.run_a, comparison.run_b)
    write_artifact(folder / f"{name}.json", comparison)
    return render_node(
        report_notebook(comparison),
        folder / f"{name}.html",
        f"Run comparison: {comparison.run_a} vs {comparison.run_b}",
    )
