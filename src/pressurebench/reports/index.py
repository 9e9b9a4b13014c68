"""`reports/index.html`: one page linking every report, grouped by benchmark, with headline numbers.

Reports are found by walking the reports directory, so a new stage or
validation study appears without touching this module. The layout it expects
is the pipeline's (`paths`): each stage's report in its own folder,
`reports/<benchmark>/[validation/<study>/[arms/<model>/]][runs/<target>/]<step>/<notebook>.html`,
listed by the arm or study it belongs to (the section) and its target (the part), and
pages that span benchmarks at the top level. Pages the pipeline writes beside its stages' reports — each
benchmark's transcript browser, paper exports and rater pages (`labelling/`),
its labels files, the pages of `pressurebench compare` (`reports/compare/`, listed
by their own index there) — are linked at fixed places rather than found: the
index stage does not wait for them, and its page must not depend on which of
them happened to exist when it ran.
Each benchmark also gets its run totals: calls, tokens, cost and wall time per
stage and for the run, from every cost file and manifest under its data.

    python -m pressurebench.reports.index --reports reports --data data [--out reports/index.html]
"""

from __future__ import annotations

import argparse
import html
import os
import re
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

from .. import __version__
from ..errors import PressurebenchError, reported
from ..io import read_artifact
from ..llm.providers.registry import is_embedded
from ..paths import ARMS, COST, MANIFEST, RUNS, Layout
from ..run_totals import read_totals, totals_frame
from ..schemas import Manifest
from ..stage_run import now_iso
from ..stats.results import Results
from .models_note import EMBEDDED_CAVEAT
from .safety import content_security_policy, read_template_asset, template_env, write_page
from .tables import format_estimate

ACROSS_BENCHMARKS = "Across benchmarks"
COMPARISONS = "Run comparisons"
COMPARE_DIR = "compare"
_HEAD_CHUNK = 1 << 16
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)


class _GeneratedMeta(HTMLParser):
    def __init__(self):
        super().__init__()
        self.generated: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "meta" and attrs.get("name") == "generated" and self.generated is None:
            self.generated = attrs.get("content")


def read_head(path: Path) -> str:
    """The page up to the end of its head (the whole page if it has none)."""
    parts: list[str] = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        while chunk := fh.read(_HEAD_CHUNK):
            seam = (parts[-1][-8:] if parts else "") + chunk
            parts.append(chunk)
            if "</head" in seam.lower():
                break
    text = "".join(parts)
    end = text.lower().find("</head")
    return text if end < 0 else text[:end]


def page_title(head: str) -> str | None:
    """The title as a browser shows it: raw text up to `</title>`, character references decoded."""
    match = _TITLE.search(head)
    title = " ".join(html.unescape(match.group(1)).split()) if match else ""
    return title or None


def page_generated(head: str) -> str | None:
    parser = _GeneratedMeta()
    parser.feed(head)
    return parser.generated


@dataclass
class ReportEntry:
    href: str
    title: str
    stage: str
    part: str
    generated: str


@dataclass
class Section:
    name: str
    reports: list[ReportEntry] = field(default_factory=list)


@dataclass
class Group:
    name: str
    summary: dict | None = None
    totals: dict | None = None
    sections: dict[str, Section] = field(default_factory=dict)
    links: list[dict] = field(default_factory=list)


TRANSCRIPTS = "transcripts.html"
LABELLING = "labelling"  # reports/<b>/labelling/: the rater pages `labels export` writes


def benchmark_links(name: str, index_dir: Path, reports_dir: Path, labels_dir: Path | None
                    ) -> list[dict]:
    """The pages of a benchmark that other commands and stages write, at their fixed places.

    The transcript browser and the exports are stages of the pipeline, which may run after
    this page: they are linked whether or not they exist yet. The rater pages and the labels
    files are written by commands a user runs when they choose to (`labels export`, `labels
    import`): they are linked once they exist, and until then the page says which command
    writes them, rather than linking a folder that is not there. (Importing labels changes the
    results, so `dvc repro` writes this page again then.)"""
    def href(path: Path) -> str:
        return quote(Path(os.path.relpath(path, index_dir)).as_posix())

    def folder(path: Path, title: str, note: str, command: str) -> dict:
        if path.is_dir():
            return {"title": title, "href": href(path) + "/", "note": note}
        return {"title": title, "href": None,
                "note": f"none yet when this page was written: `{command} --benchmark {name}` "
                        f"writes them to {Path(os.path.relpath(path, reports_dir.parent)).as_posix()}/"}

    links = [
        {"title": "Transcript browser", "href": href(reports_dir / name / TRANSCRIPTS),
         "note": "every conversation with its verdicts, filterable"},
        {"title": "Paper exports", "href": href(reports_dir / name / "export" / "index.json"),
         "note": "figures (SVG, PDF) and tables (CSV, LaTeX) under export/, listed in index.json"},
        folder(reports_dir / name / LABELLING, "Labelling pages",
               "rater pages written by `pressurebench labels export`",
               "pressurebench labels export"),
    ]
    if labels_dir is not None:
        links.append(folder(labels_dir / name, "Labels files",
                            "the human labels `pressurebench labels import` keeps",
                            "pressurebench labels import FILE..."))
    return links


def _mtime_iso(path: Path) -> str:
    stamp = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    return stamp.isoformat(timespec="seconds")


def report_place(folders: tuple[str, ...]) -> tuple[str, str]:
    """The section (the arm or study, "" for the main arm) and part (the target) of a report
    in `folders` below its benchmark's: its stage's folder, `runs/<target>/` above it and the
    `arms/` level dropped."""
    folders = folders[:-1] if folders else folders  # the stage's own folder
    part = ""
    if len(folders) >= 2 and folders[-2] == RUNS:
        folders, part = folders[:-2], folders[-1]
    return "/".join(f for f in folders if f != ARMS), part


def report_entry(path: Path, index_dir: Path, part: str) -> ReportEntry:
    head = read_head(path)
    href = Path(os.path.relpath(path, index_dir)).as_posix()
    return ReportEntry(
        href=quote(href),
        title=page_title(head) or path.stem,
        stage=path.stem,
        part=part,
        generated=page_generated(head) or _mtime_iso(path),
    )


def results_summary(results_file: Path) -> dict:
    """Overall pass rate per target from a benchmark's results.json."""
    results = read_artifact(results_file, Results)
    level = f"{results.statistics.confidence_level:.0%}"
    rows = []
    for target, rates in sorted(results.targets.items()):
        o = rates.overall
        rows.append({
            "target": target,
            "rate": format_estimate(o),
            "n": o.n,
            "n_error": o.n_error,
        })
    withheld = sorted({rates.overall.reason for rates in results.targets.values()
                       if rates.overall.rate is not None and rates.overall.ci_low is None
                       and rates.overall.reason})
    return {"caption": f"Overall pass rates ({results_file})", "level": level, "rows": rows,
            "notes": [f"No interval: {reason}." for reason in withheld]}


def collect(reports_dir: Path, data_dir: Path | None, out_path: Path,
            labels_dir: Path | None = None) -> list[Group]:
    """Every report under `reports_dir` (but the index itself and the pages linked at fixed
    places), grouped; results summaries, run totals and the fixed links added."""
    reports_dir, out_path = reports_dir.resolve(), out_path.resolve()
    groups: dict[str, Group] = {}
    for path in sorted(reports_dir.rglob("*.html")):
        if path.resolve() == out_path or not path.is_file():
            continue
        rel = path.relative_to(reports_dir)
        if (rel.parts[0] == COMPARE_DIR or (len(rel.parts) == 2 and rel.name == TRANSCRIPTS)
                or (len(rel.parts) > 2 and rel.parts[1] == LABELLING)):
            continue
        name = ACROSS_BENCHMARKS if len(rel.parts) == 1 else rel.parts[0]
        section, part = report_place(rel.parts[1:-1])
        group = groups.setdefault(name, Group(name))
        entry = report_entry(path.resolve(), out_path.parent, part)
        group.sections.setdefault(section, Section(section)).reports.append(entry)
    if data_dir is not None and data_dir.is_dir():
        for benchmark_dir in sorted(p for p in data_dir.iterdir() if p.is_dir()):
            results_file = Layout(data_dir, benchmark_dir.name).results_file
            if results_file.is_file():
                group = groups.setdefault(benchmark_dir.name, Group(benchmark_dir.name))
                group.summary = results_summary(results_file)
            if any(benchmark_dir.rglob(COST)):
                group = groups.setdefault(benchmark_dir.name, Group(benchmark_dir.name))
                group.totals = totals_table(benchmark_dir)
    for name, group in groups.items():
        if name != ACROSS_BENCHMARKS:
            group.links = benchmark_links(name, out_path.parent, reports_dir,
                                          labels_dir.resolve() if labels_dir else None)
    return sorted(groups.values(), key=lambda g: (g.name == ACROSS_BENCHMARKS, g.name))


def totals_table(benchmark_dir: Path) -> dict:
    """The run totals of one benchmark (every arm) as the page's table, or why there are none."""
    caption = f"Run totals: calls, tokens, cost and wall time per stage ({benchmark_dir})"
    try:
        frame = totals_frame(read_totals(benchmark_dir))
    except PressurebenchError as exc:
        return {"caption": caption, "columns": [], "rows": [], "error": str(exc)}
    return {
        "caption": caption,
        "columns": list(frame.columns),
        "rows": frame.astype(str).values.tolist(),
        "error": None,
    }


def models_in(data_dir: Path | None) -> tuple[list[str], bool]:
    """Every model the stages' manifests record (`id (provider: model)`), and whether an
    embedded one is among them (then the page carries its caveat)."""
    if data_dir is None or not data_dir.is_dir():
        return [], False
    seen: dict[str, dict] = {}
    for path in sorted(data_dir.rglob(MANIFEST)):
        try:
            manifest = read_artifact(path, Manifest)
        except PressurebenchError:
            continue  # an unreadable manifest is reported by the stage that reads it
        for model_id, spec in manifest.models.items():
            seen.setdefault(model_id, spec)
    described = [f"{m} ({spec.get('provider')}: {spec.get('model')})"
                 for m, spec in sorted(seen.items())]
    return described, any(is_embedded(str(spec.get("provider"))) for spec in seen.values())


def write_index(
    reports_dir: str | Path,
    out_path: str | Path | None = None,
    *,
    data_dir: str | Path | None = None,
    labels_dir: str | Path | None = None,
    title: str = "pressurebench reports",
    comparisons: bool = True,
) -> Path:
    """Write the index page (default `<reports_dir>/index.html`) and return its path;
    `comparisons` adds the link to the run comparisons' own index."""
    reports_dir = Path(reports_dir)
    out_path = Path(out_path) if out_path is not None else reports_dir / "index.html"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    groups = collect(reports_dir, Path(data_dir) if data_dir is not None else None, out_path,
                     Path(labels_dir) if labels_dir is not None else None)
    compare_href = quote(Path(os.path.relpath(reports_dir.resolve() / COMPARE_DIR / "index.html",
                                              out_path.resolve().parent)).as_posix())
    models, embedded = models_in(Path(data_dir) if data_dir is not None else None)
    page = template_env().get_template("index.html.j2").render(
        models=models,
        caveat=EMBEDDED_CAVEAT if embedded else None,
        title=title,
        generated_at=now_iso(),
        version=__version__,
        csp=content_security_policy(),
        style=read_template_asset("index.css"),
        reports_dir=str(reports_dir),
        groups=[
            {"name": g.name, "summary": g.summary, "totals": g.totals, "links": g.links,
             "sections": [g.sections[k] for k in sorted(g.sections)]}
            for g in groups
        ],
        comparisons={"title": COMPARISONS, "href": compare_href} if comparisons else None,
    )
    return write_page(out_path, page)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pressurebench.reports.index",
        description="Write an index page linking every HTML report, with per-benchmark pass rates.",
    )
    parser.add_argument("--reports", default="reports", help="directory holding the reports")
    parser.add_argument("--data", default="data",
                        help="data directory with <benchmark>/aggregate/results.json")
    parser.add_argument("--out", default=None, help="page to write (default: <reports>/index.html)")
    parser.add_argument("--labels", default="labels", help="folder of the rater pages and labels")
    args = parser.parse_args(argv)
    try:
        write_index(args.reports, args.out, data_dir=args.data, labels_dir=args.labels)
    except (PressurebenchError, KeyboardInterrupt) as exc:
        return reported(exc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
