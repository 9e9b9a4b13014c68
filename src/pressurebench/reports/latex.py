"""LaTeX tables a paper can `\\input{}`: booktabs rules, numbers right-aligned, method and design
said once in the caption rather than on every row.

Each table is a complete `table` float with `\\caption` and `\\label`, needing only
`\\usepackage{booktabs}`. Every cell's text is escaped; numbers are typeset by the code here.
Whatever the study's shape, every table fits the page of a one-column article (`latex_fit`
estimates its size): one too long for a page continues in further floats, headed "Table N
(continued)", and a grid of targets too wide for the page gives its targets keys (T1, T2, …)
and, if still too wide, continues with the next targets' columns. The tests compile the
tables with pdflatex over many shapes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pandas as pd

from ..stats.estimates import RateEstimate
from ..stats.results import Results
from . import latex_fit as fit
from .export_tables import FIDELITY_KIND_LABELS, rate_estimate
from .tables import agreement_scopes, frame_records, method_label, methods_by_kind, used_method

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}
DASH = "---"
T = TypeVar("T")
# Target names longer than this become T1, T2, … in the header, with the key in the caption.
LONGEST_HEADER = 10
# The metric column of the pass-rate table: names wrap, ragged right, within this width.
METRIC_WIDTH = "3.0cm"


def latex_escape(text: str) -> str:
    """`text` typeset as written; Markdown's code backticks (in reasons) are dropped."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text.replace("`", ""))


@dataclass
class Tabular:
    """A booktabs tabular before it is set: its column spec, header and rows, which a table
    float spreads over as many pages as they need (`table_float`)."""

    spec: str
    header: list[str]
    body: list[list[str]]

    def render(self, body: Sequence[Sequence[str]] | None = None) -> str:
        rows = self.body if body is None else body
        lines = [f"\\begin{{tabular}}{{{self.spec}}}", "\\toprule", " & ".join(self.header) + " \\\\",
                 "\\midrule"]
        lines += [" & ".join(row) + " \\\\" for row in rows]
        lines += ["\\bottomrule", "\\end{tabular}"]
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.render()

    def pages(self, caption: str) -> list[list[list[str]]]:
        """The rows split into pages: the first under `caption`, the rest under a line saying
        the table continues, each within a float's height (`latex_fit`)."""
        header = fit.row_height(self.header, self.spec) + fit.RULES_PT
        budget = fit.FLOAT_HEIGHT_PT - fit.caption_height(caption) - header
        pages: list[list[list[str]]] = [[]]
        used = 0.0
        for row in self.body:
            height = fit.row_height(row, self.spec) + 1.0
            if pages[-1] and used + height > budget:
                pages.append([])
                used = 0.0
                budget = fit.FLOAT_HEIGHT_PT - fit.caption_height(CONTINUED) - header
            pages[-1].append(row)
            used += height
        return pages


CONTINUED = "\\tablename~\\thetable{} (continued)"


def booktabs(frame: pd.DataFrame) -> Tabular:
    """A bare `booktabs` tabular of `frame` (no index): numeric columns right-aligned, every
    cell's text escaped, a missing value empty."""
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c])
               for c in frame.columns]
    header = [latex_escape(str(c)) for c in frame.columns]
    body = [[_cell(v) for v in row] for row in frame.itertuples(index=False)]
    return _tabular("".join("r" if n else "l" for n in numeric), header, body)


def _cell(value) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    return latex_escape(str(value))


def _tabular(spec: str, header: Sequence[str], body: Sequence[Sequence[str]]) -> Tabular:
    return Tabular(spec, list(header), [list(row) for row in body])


def table_float(tabular: Tabular | Sequence[Tabular], caption: str, label: str) -> str:
    """`tabular` in a captioned, labelled `table` float, small type, centred; where it is too
    long for a page (or given as several tabulars, a grid's column groups), continued in
    further floats headed "Table N (continued)"."""
    parts = [tabular] if isinstance(tabular, Tabular) else list(tabular)
    floats: list[str] = []
    for part in parts:
        for page in part.pages(caption if not floats else CONTINUED):
            head = (f"\\caption{{{caption}}}\n\\label{{{label}}}\n" if not floats
                    else f"{CONTINUED}\\par\\medskip\n")
            floats.append("\\begin{table}[tbp]\n\\centering\n\\small\n"
                          f"\\setlength{{\\tabcolsep}}{{{fit.TABCOLSEP_PT:g}pt}}\n"
                          f"{head}{part.render(page)}\\end{{table}}\n")
    return "".join(floats)


def _percent(value: float | None, digits: int = 1) -> str:
    return DASH if value is None else f"{100 * value:.{digits}f}"


def _rate_cell(est: RateEstimate | None) -> str:
    """The rate in percent, its interval beneath in small type (or a dash where withheld)."""
    if est is None or est.rate is None:
        return DASH
    interval = (f"[{_percent(est.ci_low, 0)}, {_percent(est.ci_high, 0)}]"
                if est.ci_low is not None and est.ci_high is not None else DASH)
    return (f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{_percent(est.rate)}\\\\"
            f"\\scriptsize {interval}\\end{{tabular}}")


def target_names(targets: Sequence[str], *, keyed: bool = False) -> tuple[dict[str, str], str]:
    """How each target is written in a table, and the key to the caption: the escaped names, or
    T1, T2, … where a name is too long for a column (model ids often are) or `keyed`."""
    targets = sorted(targets)
    if not keyed and all(len(t) <= LONGEST_HEADER for t in targets):
        return {t: latex_escape(t) for t in targets}, ""
    short = {t: f"T{i}" for i, t in enumerate(targets, start=1)}
    key = "; ".join(f"{s} = {latex_escape(t)}" for t, s in short.items())
    return short, f" Targets: {key}."


def _row_label(name: str) -> str:
    return f"\\parbox[t]{{{METRIC_WIDTH}}}{{\\raggedright {latex_escape(name)}\\strut}}"


def _grid(rows: Sequence[tuple[str, Mapping[str, T | None]]], targets: Sequence[str], first: str,
          cell: Callable[[T | None], str]) -> tuple[list[Tabular], str]:
    """Rows (a wrapped label) by target (columns): the tabulars, one per group of target
    columns that fits the text width, and the caption's key to the targets' names.

    The targets are written by name where they all fit one tabular; else by key (T1, T2, …),
    as many to a tabular as fit, the groups as even as the count allows."""
    targets = sorted(targets)
    labels = [_row_label(name) for name, _ in rows]
    columns = {t: [cell(cells.get(t)) for _, cells in rows] for t in targets}

    def tabular(group: Sequence[str], written: Mapping[str, str]) -> Tabular:
        body = [[labels[i], *(columns[t][i] for t in group)] for i in range(len(rows))]
        return _tabular("@{}l" + "r" * len(group) + "@{}", [first, *(written[t] for t in group)],
                        body)

    written, key = target_names(targets)
    whole = tabular(targets, written)
    if fit.table_width(whole.spec, [whole.header, *whole.body]) <= fit.TEXT_WIDTH_PT:
        return [whole], key
    written, key = target_names(targets, keyed=True)
    room = fit.TEXT_WIDTH_PT - fit.cell_width(labels[0] if labels else first) - fit.TABCOLSEP_PT
    widths = [fit.table_width("r", [[written[t]], *([c] for c in columns[t])])
              + 2 * fit.TABCOLSEP_PT for t in targets]
    per_group = max(1, int(room // max(widths, default=room)))
    groups = math.ceil(len(targets) / per_group)
    size = math.ceil(len(targets) / groups)
    return [tabular(targets[i:i + size], written) for i in range(0, len(targets), size)], key


def _estimates_by_key(frame: pd.DataFrame) -> dict[tuple[str, str, str], RateEstimate]:
    """The rows of a frame of `export_tables.RATE_COLUMNS` as estimates, by target, scope and
    key, in the frame's order."""
    return {k: rate_estimate(r) for k, r in _rows_by_key(frame).items()}


def _headline_rows(found: Mapping[tuple[str, str, str], T], targets: Sequence[str],
                   metric_names: Mapping[str, str]) -> list[tuple[str, dict[str, T | None]]]:
    """The rows of a headline grid: overall, positive and negative metrics pooled, then each
    metric (id and name); cells by target from `found`, keyed by target, scope and key."""
    def row(name: str, scope: str, key: str) -> tuple[str, dict[str, T | None]]:
        return name, {t: found.get((t, scope, key)) for t in targets}

    metric_ids = sorted({key for _, scope, key in found if scope == "metric"})
    return [row("Overall", "overall", "overall"), row("Positive metrics", "metric type", "positive"),
            row("Negative metrics", "metric type", "negative"),
            *(row(f"{m} {metric_names.get(m, '')}".strip(), "metric", m) for m in metric_ids)]


def rates_table(frame: pd.DataFrame, results: Results, metric_names: Mapping[str, str],
                label: str) -> str:
    """`export_tables.rates_frame` typeset: pass rates (%) by metric (rows) and target (columns),
    each with its interval beneath."""
    found = _estimates_by_key(frame)
    in_order = list(dict.fromkeys(target for target, _, _ in found))
    rows = _headline_rows(found, in_order, metric_names)
    estimates = [e for _, cells in rows for e in cells.values()
                 if e is not None and e.rate is not None]
    tabulars, key = _grid(rows, in_order, "Metric", _rate_cell)
    caption = _rates_caption(results, rows[0][1], len(rows) - 3, estimates)
    return table_float(tabulars, caption + key, label)


def _rates_caption(results: Results, overall: Mapping[str, RateEstimate | None], metrics: int,
                   estimates: list[RateEstimate]) -> str:
    level = f"{results.statistics.confidence_level:.0%}"
    methods = sorted({method_label(e.ci_method) for e in estimates if e.ci_low is not None})
    withheld = sorted({e.reason for e in estimates if e.ci_low is None and e.reason})
    shown = {t: o for t, o in overall.items() if o is not None}
    n = ", ".join(f"{latex_escape(t)} {o.n}" for t, o in sorted(shown.items()))
    text = (f"Pass rates (\\%) of {latex_escape(results.benchmark)} by metric and target, with "
            f"{latex_escape(level)} intervals beneath")
    text += f" ({latex_escape('; '.join(methods))})." if methods else "."
    text += (f" Design: {max((o.n_clusters for o in shown.values()), default=0)} base scenarios "
             f"over {metrics} metrics; conversations judged per target: {n}; rows without a "
             "verdict are left out of the denominators.")
    return text + _withheld(withheld)


def _withheld(reasons) -> str:
    """The caption's note on withheld intervals: why, as said of the data (never advice on
    what to set or run, which belongs to the report, not to a paper)."""
    said = sorted({data_reason(r) for r in reasons if r})
    return f" {DASH}: no interval, because " + "; ".join(latex_escape(r) for r in said) + "." \
        if said else ""


# Words that mark a clause as advice to the tool's user rather than a fact about the data.
_ADVICE = ("set ", "pressurebench", "generation.", "run `", "params")


def data_reason(reason: str) -> str:
    """`reason` without its advice: parenthesised asides and clauses (split at a top-level
    "; ") that tell the user what to set or run are dropped, the facts kept."""
    clauses, depth, current = [], 0, ""
    for i, ch in enumerate(reason):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and reason.startswith("; ", i):
            clauses.append(current)
            current = ""
            continue
        current += ch
    clauses.append(current)
    kept = []
    for clause in clauses:
        clause = clause.lstrip("; ").strip()
        while True:  # an aside with advice goes; the clause around it stays
            start = clause.find("(")
            end = clause.find(")", start)
            if start < 0 or end < 0 or not any(a in clause[start:end] for a in _ADVICE):
                break
            clause = (clause[:start].rstrip() + clause[end + 1:]).strip()
        if clause and not any(a in clause for a in _ADVICE):
            kept.append(clause)
    return "; ".join(kept)


def grid_table(rows: Sequence[tuple[str, Mapping[str, RateEstimate | None]]],
               targets: Sequence[str], first: str, caption: str, label: str) -> str:
    """Rates (%) by row (a wrapped label) and target (columns), each with its interval beneath:
    the layout of the pass-rate table (`_grid`)."""
    tabulars, key = _grid(rows, targets, first, _rate_cell)
    return table_float(tabulars, caption + key, label)


def _interval_note(estimates: Sequence[RateEstimate], level: str) -> str:
    methods = sorted({method_label(e.ci_method) for e in estimates if e.ci_low is not None})
    text = f" with {latex_escape(level)} intervals beneath"
    text += f" ({latex_escape('; '.join(methods))})." if methods else "."
    withheld = [e.reason for e in estimates if e.rate is not None and e.ci_low is None]
    return text + _withheld(withheld)


def fidelity_table(frame: pd.DataFrame, results: Results, label: str) -> str:
    """`export_tables.fidelity_frame` typeset: the simulated user's break shares and the
    targets' test awareness (%), by target."""
    fid = results.fidelity
    assert fid is not None, "a fidelity table is written only for results with fidelity shares"
    found = _estimates_by_key(frame)
    targets = sorted(fid.targets)

    def keys(scope: str) -> list[str]:
        return sorted({key for _, s, key in found if s == scope}, key=_turn_order)

    def row(name: str, scope: str, key: str) -> tuple[str, dict]:
        return name, {t: found.get((t, scope, key)) for t in targets}

    rows = [row("Any break", "any break", "any"),
            *(row(FIDELITY_KIND_LABELS.get(k, k), "kind", k) for k in sorted(keys("kind"))),
            *(row(f"Any break, {m}", "metric", m) for m in sorted(keys("metric"))),
            *(row(f"Broke at turn {k}", "turn", k) for k in keys("turn")),
            row("Test awareness", "test awareness", "any"),
            *(row(f"Test awareness, turn {k}", "test awareness turn", k)
              for k in keys("test awareness turn"))]
    estimates = [e for _, cells in rows for e in cells.values() if e is not None]
    users = sorted({tf.user_model for tf in fid.targets.values()})
    level = f"{results.statistics.confidence_level:.0%}"
    caption = (f"The simulated user in {latex_escape(results.benchmark)} "
               f"(user model {latex_escape(', '.join(users))}): share (\\%) of conversations in "
               "which it broke character, leaked the test, swapped roles, skipped a step of its "
               "plan or applied no pressure (any, per kind, per metric and per turn), and in which "
               "the target showed test awareness,")
    caption += _interval_note(estimates, level)
    return grid_table(rows, targets, "Share", caption, label)


def _turn_order(key: str):
    return (0, int(key)) if str(key).isdigit() else (1, str(key))


def _coefficient_cell(row: Mapping[str, Any] | None, percent: bool) -> str:
    """A share (in %) or a coefficient (two decimals) of a row of `export_tables.AGREEMENT_COLUMNS`,
    its interval beneath, or a dash."""
    if row is None or row["value"] is None:
        return DASH

    def show(v):
        return _percent(v, 0) if percent else f"{v:.2f}"

    value = _percent(row["value"]) if percent else f"{row['value']:.2f}"
    interval = (f"[{show(row['ci_low'])}, {show(row['ci_high'])}]"
                if row["ci_low"] is not None and row["ci_high"] is not None else DASH)
    return (f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{value}\\\\"
            f"\\scriptsize {interval}\\end{{tabular}}")


def agreement_table(frame: pd.DataFrame, results: Results, label: str) -> str:
    """`export_tables.agreement_frame` typeset: agreement of repeated samples (per target and
    pooled) and of the judges of the panel: items, share of items whose samples all agree (%),
    kappa and alpha, intervals beneath."""
    written, key = target_names(list(results.targets))
    body, reasons = [], []
    for of, target, by in agreement_scopes(frame):
        judged = of == "judges"
        first = by["kappa" if judged else "all agree"]
        name = (f"Judges ({len(results.judge_agreement.judges)})" if judged
                else f"Samples, {written[target] if target else 'all targets'}")
        body.append([name, str(int(first["items"])) if first["items"] is not None else DASH,
                     DASH if judged else _coefficient_cell(by["all agree"], True),
                     _coefficient_cell(by["kappa"], False),
                     _coefficient_cell(by["alpha"], False)])
        reasons += [r["reason"] for r in by.values()]
    level = f"{results.statistics.confidence_level:.0%}"
    ja = results.judge_agreement
    kappa = f"{ja.kappa_method.capitalize()}'s" if ja.kappa_method else "Cohen's or Fleiss'"
    caption = (f"Agreement of verdicts in {latex_escape(results.benchmark)}: between the samples "
               "of each scenario (per target and pooled; share of items whose samples all agree, "
               "Fleiss' $\\kappa$, Krippendorff's $\\alpha$, nominal) and between the judges of "
               f"the panel ({kappa} $\\kappa$, Krippendorff's $\\alpha$), with "
               f"{latex_escape(level)} cluster-bootstrap intervals beneath.")
    said = sorted({data_reason(r) for r in reasons if r})
    if said:
        caption += f" {DASH}: not measured or no interval, because " + "; ".join(
            latex_escape(r) for r in said) + "."
    header = ["Verdicts of", "Items", "All agree (\\%)", "$\\kappa$", "$\\alpha$"]
    return table_float(_tabular("@{}lrrrr@{}", header, body), caption + key, label)


def frame_rows(frame: pd.DataFrame) -> Iterable[Any]:
    """The frame's rows as named tuples. pandas-stubs types each attribute of one as a cell of
    any type, `_asdict` included; the tables read columns they know."""
    return frame.itertuples(index=False)


def differences_table(frame: pd.DataFrame, caption: str, label: str, *, lead: Sequence[str],
                      targets: Sequence[str], target_columns: Sequence[str]) -> str:
    """Differences in percentage points with their intervals: `lead` columns first; the values
    of `target_columns` are target names, written as in `target_names`."""
    written, key = target_names(targets)

    def cell(column: str, value) -> str:
        return written.get(value, latex_escape(str(value))) if column in target_columns \
            else latex_escape(str(value))

    body = []
    for row in frame_rows(frame):
        r = row._asdict()
        interval = (f"[{_percent(r['ci_low'])}, {_percent(r['ci_high'])}]"
                    if pd.notna(r["ci_low"]) and pd.notna(r["ci_high"]) else DASH)
        cells = [cell(c, r[c]) for c in lead]
        cells += [f"{cell('a', r['a'])} $-$ {cell('b', r['b'])}",
                  _percent(None if pd.isna(r["difference"]) else r["difference"]), interval]
        if "p_holm" in r:
            starred = pd.notna(r["holm_significant"]) and bool(r["holm_significant"])
            cells += [_p(r["p_value"]), _p(r["p_holm"]) + ("$^{*}$" if starred else "")]
        if "mde" in r:
            cells.append(_percent(None if pd.isna(r["mde"]) else r["mde"]))
        body.append(cells)
    header = [latex_escape(c.capitalize()) for c in lead] + ["Compared", "pp", "Interval (pp)"]
    spec = "l" * len(lead) + "lrr"
    if "p_holm" in frame.columns:
        header += ["$p$", "$p_{\\mathrm{Holm}}$"]
        spec += "rr"
    if "mde" in frame.columns:
        header.append("MDE (pp)")
        spec += "r"
    return table_float(_wrapped(_tabular(f"@{{}}{spec}@{{}}", header, body), len(lead)),
                       caption + key, label)


def _wrapped(tabular: Tabular, column: int) -> Tabular:
    """`tabular` with the cells of `column` wrapped (ragged right) where the table would be
    wider than the text: what is compared (long demographic values) takes the room left."""
    over = fit.table_width(tabular.spec, [tabular.header, *tabular.body]) - fit.TEXT_WIDTH_PT
    if over <= 0:
        return tabular
    widest = max(fit.cell_width(row[column]) for row in [tabular.header, *tabular.body])
    width = f"{max(widest - over, 60.0):.0f}pt"
    body = [[*row[:column], f"\\parbox[t]{{{width}}}{{\\raggedright {row[column]}\\strut}}",
             *row[column + 1:]] for row in tabular.body]
    return _tabular(tabular.spec, tabular.header, body)


def _p(value) -> str:
    return DASH if value is None or pd.isna(value) else f"{value:.3f}"


def onsets_table(frame: pd.DataFrame, caption: str, label: str) -> str:
    """Per target: conversations, how many gave in, and the median turn of giving in."""
    body = []
    for row in frame_rows(frame):
        r = row._asdict()
        median = str(r["median_onset_turn"]) if r["median_reached"] else f"$>{r['turns']}$"
        if r["median_ci_method"] != "none":
            high = f"$>{r['turns']}$" if pd.isna(r["median_ci_high"]) else str(r["median_ci_high"])
            low = DASH if pd.isna(r["median_ci_low"]) else str(r["median_ci_low"])
            median += f" [{low}, {high}]"
        body.append([latex_escape(str(r["target"])), str(r["conversations"]), str(r["gave_in"]),
                     str(r["recovered"]), median])
    header = ["Target", "Conversations", "Gave in", "Recovered", "Median onset (turn)"]
    return table_float(_tabular("@{}lrrrr@{}", header, body), caption, label)


def _corrected_cell(r: Mapping[str, Any] | None) -> str:
    """A row of `export_tables.CORRECTED_COLUMNS`: the corrected rate (%), its interval beneath,
    and the rate as judged (in parentheses) under that."""
    if r is None:
        return DASH
    value = DASH if r["corrected_rate"] is None else _percent(r["corrected_rate"])
    low, high = r["ci_low"], r["ci_high"]
    interval = (f"[{_percent(low, 0)}, {_percent(high, 0)}]"
                if low is not None and high is not None else DASH)
    judged = DASH if r["raw_rate"] is None else _percent(r["raw_rate"])
    return (f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{value}\\\\\\scriptsize {interval}\\\\"
            f"\\scriptsize ({judged})\\end{{tabular}}")


def corrected_table(rows: Sequence[tuple[str, Mapping[str, Mapping[str, Any] | None]]],
                    targets: Sequence[str], what: str, level: str, method: str, label: str) -> str:
    """Rates corrected by human labels (%), by row and target: each cell the corrected value,
    its interval beneath and the rate as judged under that; the layout of `grid_table`."""
    tabulars, key = _grid(rows, targets, "", _corrected_cell)
    reasons = [r["reason"] for _, cells in rows for r in cells.values() if r is not None]
    caption = (f"{what} (\\%), corrected by human labels ({latex_escape(method)}), with "
               f"{latex_escape(level)} intervals beneath and the rate as judged in parentheses."
               + _withheld(reasons))
    return table_float(tabulars, caption + key, label)


def _rows_by_key(frame: pd.DataFrame) -> dict[tuple[str, str, str], dict[str, Any]]:
    """A frame's rows (missing cells as None) by target, scope and key, in the frame's order."""
    return {(r["target"], r["scope"], str(r["key"])): r for r in frame_records(frame)}


def corrected_rates_table(frame: pd.DataFrame, results: Results, metric_names: Mapping[str, str],
                          label: str) -> str:
    """`export_tables.corrected_rates_frame` typeset: pass rates overall, per metric type and per
    metric, corrected by human labels."""
    assert results.judge_validity is not None and results.judge_validity.corrected is not None, \
        "corrected rates are written only for results with judge-corrected rates"
    corrected = results.judge_validity.corrected
    found = _rows_by_key(frame)
    targets = list(dict.fromkeys(target for target, _, _ in found))
    rows = _headline_rows(found, targets, metric_names)
    return corrected_table(rows, targets, f"Pass rates of "
                           f"{latex_escape(results.benchmark)}",
                           f"{results.statistics.confidence_level:.0%}", corrected.method, label)


def fidelity_corrected_table(frame: pd.DataFrame, results: Results, label: str) -> str:
    """`export_tables.fidelity_corrected_frame` typeset: per kind of simulated-user break, its
    share corrected by raters' answers, by target."""
    assert results.judge_validity is not None and results.judge_validity.fidelity is not None \
        and results.judge_validity.corrected is not None, \
        "corrected fidelity shares are written only for results with them"
    found = _rows_by_key(frame)
    kinds = sorted(results.judge_validity.fidelity.by_kind)  # a kind no target has is a row too
    targets = sorted({target for target, _, _ in found})
    rows = [(k.replace("_", " "), {t: found.get((t, "break share", k)) for t in targets})
            for k in kinds]
    return corrected_table(rows, targets, f"Shares of conversations of "
                           f"{latex_escape(results.benchmark)} with each kind of simulated-user "
                           "break", f"{results.statistics.confidence_level:.0%}",
                           results.judge_validity.corrected.method, label)


def interval_coverage_table(results: Results, label: str) -> str:
    """Each kind of interval's method and the coverage the grid measured at the study's design
    (its range over the simulated samples, ICC and rates), or "withheld"."""
    body = []
    used = methods_by_kind(results)
    for i in results.intervals:
        shown = i.reason is None
        body.append([
            latex_escape(i.interval),
            latex_escape(used_method(i.interval, i.method, used)) if shown else "withheld",
            f"{i.grid_metrics} $\\times$ {i.grid_per_metric}" if shown else DASH,
            f"{i.coverage_low:.3f}--{i.coverage_high:.3f}" if shown else DASH,
            f"{i.stress_low:.3f}--{i.stress_high:.3f}" if shown and i.stress_low is not None
            else DASH,
        ])
    per_metric = results.intervals[0].base_scenarios_per_metric if results.intervals else 0
    metrics = results.intervals[0].metrics if results.intervals else 0
    caption = latex_escape(
        f"Coverage of the nominal {results.statistics.confidence_level:.0%} intervals of "
        f"{results.benchmark} ({metrics} metrics, at least {per_metric} base scenarios each) "
        "measured on simulated benchmarks at the largest simulated design not above it "
        "(metrics x base scenarios per metric): lowest and highest over samples, "
        "intra-scenario correlation and rate in the coverage grid, and over the stress grid's "
        "worlds (metrics that cluster differently, targets that find different scenarios "
        "hard, rewrite effects, lost scenarios, errors that depend on the outcome)."
    )
    return table_float(
        _tabular("@{}p{2.8cm}p{3.4cm}lll@{}",
                 ["interval", "method", "design", "coverage", "stress coverage"], body),
        caption,
        label
    )
