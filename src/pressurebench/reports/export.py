"""Paper exports: every results figure as SVG and PDF, every results table as CSV and LaTeX.

A paper needs vector figures and tables it can typeset, not PNGs inside HTML.
`export_benchmark` writes them to `reports/<b>/export/` from the aggregate
results, the same figures and tables the aggregate report shows:

- `figures/<name>.svg` and `.pdf`: forest plot, heatmap, demographic gaps,
  pairwise comparisons, errors;
- `tables/<name>.csv` and `.tex`: pass rates with intervals (and their method),
  judge and inter-sample agreement, error breakdown, and with human labels
  every pass rate, target difference and demographic gap as judged beside
  its judge-corrected value (`judge_corrected_rates`,
  `judge_corrected_differences`). The LaTeX is a `booktabs`
  tabular (`\\toprule`, `\\midrule`, `\\bottomrule`) with special characters
  escaped, ready for `\\input{}`; `\\usepackage{booktabs}` in the preamble.

`export/index.json` lists every file written. Files are written with fixed
metadata (no creation date), so the same results give the same bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib
import pandas as pd
from matplotlib.figure import Figure

from .. import views
from ..io import atomic_write_text, read_artifact, read_yaml_model
from ..paths import Layout
from ..results import Results
from ..schemas import Benchmark
from . import figures, judge, tables

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
    for name, fig in {
        "forest_plot": figures.forest_plot(results, names),
        "heatmap": figures.heatmap(results, names),
        "demographic_gaps": figures.demographic_gap_plot(results),
        "pairwise_comparisons": figures.comparison_plot(results),
        "errors": figures.error_plot(errors, targets),
    }.items():
        written["figures"] += save_figure(fig, out_dir / "figures", name)
    for name, frame in {
        "pass_rates": tables.results_table(results, names),
        "agreement": views.agreement_frame(results),
        "errors": errors,
        **(
            {
                "judge_corrected_rates": judge.corrected_table(results),
                "judge_corrected_differences": judge.corrected_differences_table(results),
            }
            if results.judge_validity is not None and results.judge_validity.corrected
            else {}
        ),
    }.items():
        written["tables"] += save_table(frame, out_dir / "tables", name)
    index = {kind: sorted(str(Path(p).relative_to(out_dir)) for p in paths) for kind, paths in written.items()}
    atomic_write_text(out_dir / "index.json", json.dumps(index, indent=2) + "\n")
    return written


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


def save_table(frame: pd.DataFrame, folder: Path, name: str) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    csv, tex = folder / f"{name}.csv", folder / f"{name}.tex"
    atomic_write_text(csv, frame.to_csv(index=False))
    atomic_write_text(tex, booktabs(frame))
    return [str(csv), str(tex)]


def booktabs(frame: pd.DataFrame) -> str:
    """A LaTeX `booktabs` tabular of `frame` (no index), every cell's text escaped."""
    escaped = frame.copy()
    escaped.columns = [latex_escape(str(c)) for c in frame.columns]
    for column in escaped.columns:
        escaped[column] = escaped[column].map(lambda v: "" if v is None or pd.isna(v) else latex_escape(str(v)))
    spec = "l" * len(escaped.columns)
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\toprule", " & ".join(escaped.columns) + " \\\\", "\\midrule"]
    lines += [" & ".join(row) + " \\\\" for row in escaped.astype(str).itertuples(index=False)]
    lines += ["\\bottomrule", "\\end{tabular}"]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def main(argv: list[str] | None = None) -> int:
    """`python -m pressurebench.reports.export --benchmark B`, as the DVC stage runs it."""
    import argparse
    import sys

    from ..errors import PressurebenchError
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
    except PressurebenchError as exc:
        print(f"pressurebench: {exc}", file=sys.stderr)
        return 2
    print(f"ok  {len(written['figures'])} figure files and {len(written['tables'])} table files in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
