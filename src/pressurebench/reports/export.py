"""Paper exports: every results figure as SVG and PDF, every results table as CSV and LaTeX.

A paper needs vector figures and tables it can typeset, not PNGs inside HTML.
`export_benchmark` writes them to `reports/<b>/export/` from the aggregate
results, the same figures the aggregate report shows:

- `figures/<name>.svg` and `.pdf`: forest plot, heatmap, demographic gaps,
  pairwise comparisons, capitulation curves (with per-turn judging), errors;
- `tables/<name>.csv`: numbers, not display text (rates as fractions, counts as
  integers, a missing value empty), each with its interval's method and, where
  it is withheld, the reason: pass rates (overall, per metric type, metric and
  demographic value), pairwise differences, demographic gaps with Holm's
  decisions, onsets of giving in, judge and inter-sample agreement, each kind of
  interval's method and the coverage the grid measured at the study's design
  (`interval_coverage`), errors, and
  with fidelity checks the simulated user's break shares (`fidelity`) and the
  pass rates without the conversations where it broke (`fidelity_sensitivity`), and
  with human labels every pass rate, target difference and demographic gap as
  judged beside its judge-corrected value (`judge_corrected_rates`,
  `judge_corrected_differences`), and with raters' fidelity answers each break share
  as checked beside its corrected value (`fidelity_corrected`);
- `tables/<name>.tex`: each a captioned `table` float (`reports.latex`) with
  booktabs rules and right-aligned numbers, the method and the design in the
  caption; `\\usepackage{booktabs}` in the preamble.

With the validation studies' comparison artifacts present, each arm's figures and
tables are written beside them (`reports.export_studies`), and the judge probes' too
(`reports.export_probes`).

`export/index.json` lists every file written. Files are written with fixed
metadata (no creation date), so the same results give the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import pandas as pd
from matplotlib.figure import Figure

from ..io import atomic_write_text, frame_csv, read_artifact, read_yaml_model
from ..paths import Layout
from ..schemas import Benchmark
from ..stats.results import Results
from . import export_tables, figures, latex, pressure, tables
from .export_probes import export_probes
from .export_studies import export_studies

FIGURE_FORMATS = ("svg", "pdf")
# Matplotlib writes a creation date (and its version) into SVG and PDF files unless told not to.
FIXED_METADATA = {"svg": {"Date": None, "Creator": None}, "pdf": {"CreationDate": None, "Creator": None}}


def export_benchmark(layout: Layout, out_dir: str | Path) -> dict[str, list[str]]:
    """Write the benchmark's figures and tables under `out_dir`; what was written, by kind."""
    out_dir = Path(out_dir)
    results = read_artifact(layout.results_file, Results)
    names = {m.id: m.name for m in read_yaml_model(layout.benchmark_file, Benchmark).metrics}
    targets = list(results.targets)
    errors = tables.error_breakdown_for(layout, targets)
    written: dict[str, list[str]] = {"figures": [], "tables": []}
    plots = {
        "forest_plot": figures.forest_plot(results, names),
        "heatmap": figures.heatmap(results, names),
        "demographic_gaps": figures.demographic_gap_plot(results),
        "pairwise_comparisons": figures.comparison_plot(results),
        "errors": figures.error_plot(errors, targets),
    }
    if results.pressure is not None:
        plots["capitulation"] = pressure.capitulation_plot(results)
    for name, fig in plots.items():
        written["figures"] += save_figure(fig, out_dir / "figures", name)
    for name, (frame, tex) in paper_tables(results, names, errors).items():
        written["tables"] += save_table(frame, tex, out_dir / "tables", name)
    for export in (export_studies, export_probes):
        for kind, paths in export(layout, out_dir, save_figure, save_table).items():
            written[kind] += paths
    index = {kind: sorted(str(Path(p).relative_to(out_dir)) for p in paths) for kind, paths in written.items()}
    atomic_write_text(out_dir / "index.json", json.dumps(index, indent=2) + "\n")
    return written


def paper_tables(results: Results, names: dict[str, str], errors: pd.DataFrame
                 ) -> dict[str, tuple[pd.DataFrame, str]]:
    """Each table's numbers (for the CSV) and its LaTeX float."""
    b = results.benchmark
    level = f"{results.statistics.confidence_level:.0%}"
    rates = export_tables.rates_frame(results, names)
    out = {"pass_rates": (rates, latex.rates_table(rates, results, names, f"tab:{b}-pass-rates"))}

    def typeset(frame: pd.DataFrame, caption: str, name: str, lead: list[str],
                target_columns: list[str]) -> tuple[pd.DataFrame, str]:
        return frame, latex.differences_table(frame, caption, f"tab:{b}-{name}", lead=lead,
                                              targets=list(results.targets),
                                              target_columns=target_columns)

    out["pairwise"] = typeset(
        export_tables.pairwise_frame(results),
        f"Differences of overall pass rates between targets of {latex.latex_escape(b)}, in "
        f"percentage points, with {latex.latex_escape(level)} intervals; paired: both targets "
        "answered the same scenarios. $p$ inverts the interval; $^{*}$: significant after Holm's "
        "correction over the pairs; MDE: the difference the design detects with 80\\% power.",
        "pairwise", [], ["a", "b"])
    by_metric = export_tables.metric_pairwise_frame(results)
    if len(by_metric):
        out["pairwise_by_metric"] = typeset(
            by_metric, f"Differences of pass rates between targets of {latex.latex_escape(b)} on "
            f"each metric, in percentage points, with {latex.latex_escape(level)} intervals on "
            "the metric's own base scenarios; $^{*}$: significant after Holm's correction over the "
            "pair's metrics; MDE as above.", "pairwise-by-metric", ["metric"], ["a", "b"])
    out["demographic_gaps"] = typeset(
        export_tables.gaps_frame(results),
        f"Demographic gaps of pass rates in {latex.latex_escape(b)}, in percentage points, "
        f"with {latex.latex_escape(level)} intervals and two-sided tests of no gap ($p$ inverts "
        "the interval); $^{*}$: significant after Holm's correction within each axis and target; "
        "MDE: the gap the design detects with 80\\% power.",
        "demographic-gaps", ["target", "axis"], ["target"])
    if results.pressure is not None:
        onsets = export_tables.onsets_frame(results)
        out["onsets"] = (onsets, latex.onsets_table(
            onsets, f"Giving in under pressure in {latex.latex_escape(b)}: conversations judged "
            "turn by turn, how many gave in, how many of those passed again by the last turn, and "
            f"the median turn of giving in with its {latex.latex_escape(level)} interval "
            f"($>T$: later than the last turn).", f"tab:{b}-onsets"))
    if results.fidelity is not None:
        shares = export_tables.fidelity_frame(results)
        out["fidelity"] = (shares, latex.fidelity_table(shares, results, f"tab:{b}-fidelity"))
        out["fidelity_sensitivity"] = typeset(
            export_tables.sensitivity_frame(results),
            f"Pass rates of {latex.latex_escape(b)} without the conversations where the simulated "
            "user broke, minus on all of them, in percentage points, with "
            f"{latex.latex_escape(level)} intervals; paired: the same base scenarios.",
            "fidelity-sensitivity", ["target", "rate_on"], ["target"])
    agreement = export_tables.agreement_frame(results)
    out["agreement"] = (agreement, latex.agreement_table(agreement, results, f"tab:{b}-agreement"))
    out["interval_coverage"] = (export_tables.interval_coverage_frame(results),
                                latex.interval_coverage_table(results, f"tab:{b}-interval-coverage"))
    out["errors"] = (errors, latex.table_float(
        latex.booktabs(errors), latex.latex_escape(f"Errors ({b})."), f"tab:{b}-errors"))
    if results.judge_validity is not None and results.judge_validity.corrected is not None:
        method = results.judge_validity.corrected.method
        corrected = export_tables.corrected_rates_frame(results)
        out["judge_corrected_rates"] = (corrected, latex.corrected_rates_table(
            corrected, results, names, f"tab:{b}-judge-corrected-rates"))
        differences = export_tables.corrected_differences_frame(results)
        shown = differences.assign(difference=differences["corrected_difference"],
                                   target=differences["target"].fillna(""))
        out["judge_corrected_differences"] = (differences, latex.differences_table(
            shown, f"Differences between targets (scope: targets) and demographic gaps (scope: "
            f"the axis) in {latex.latex_escape(b)}, corrected by human labels "
            f"({latex.latex_escape(method)}), in percentage points, with "
            f"{latex.latex_escape(level)} intervals.", f"tab:{b}-judge-corrected-differences",
            lead=["target", "scope"], targets=list(results.targets),
            target_columns=["target", "a", "b"]))
        fidelity = results.judge_validity.fidelity
        if fidelity is not None and fidelity.status == "ok":
            shares = export_tables.fidelity_corrected_frame(results)
            out["fidelity_corrected"] = (shares, latex.fidelity_corrected_table(
                shares, results, f"tab:{b}-fidelity-corrected"))
    return out


def save_figure(fig: Figure, folder: Path, name: str) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in FIGURE_FORMATS:
        path = folder / f"{name}.{fmt}"
        # SVG element ids are random unless salted.
        with matplotlib.rc_context({"svg.hashsalt": name}):
            fig.savefig(path, format=fmt, bbox_inches="tight", metadata=FIXED_METADATA[fmt])
        paths.append(str(path))
    return paths


def save_table(frame: pd.DataFrame, tex: str, folder: Path, name: str) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    csv, tex_path = folder / f"{name}.csv", folder / f"{name}.tex"
    atomic_write_text(csv, frame_csv(frame))
    atomic_write_text(tex_path, tex)
    return [str(csv), str(tex_path)]


def main(argv: list[str] | None = None) -> int:
    """`python -m pressurebench.reports.export --benchmark B`, as the DVC stage runs it."""
    import argparse

    from ..errors import PressurebenchError, reported
    from ..params import load_params

    parser = argparse.ArgumentParser(prog="python -m pressurebench.reports.export",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--benchmark", required=True)
    parser.add_argument("--params", default="params/pipeline.yaml")
    args = parser.parse_args(argv)
    try:
        params = load_params(args.params)
        if args.benchmark not in params.benchmarks:
            raise PressurebenchError(f"'{args.benchmark}' is not one of the benchmarks")
        out = params.reports_dir / args.benchmark / "export"
        written = export_benchmark(Layout(params.data_dir, args.benchmark), out)
    except (PressurebenchError, KeyboardInterrupt) as exc:
        return reported(exc)
    print(f"ok  {len(written['figures'])} figure files and {len(written['tables'])} table files in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
