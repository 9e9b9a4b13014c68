"""`pressurebench` command line: checks, comparisons and helpers around the DVC pipeline.

Errors the user can act on print as one line (file and field) and exit 2;
a stage above its error budget exits 3; a stage whose process crashed natively
(inside llama.cpp) exits 4 with a report of what to try; a command stopped by Ctrl-C
says so in one line and exits 130.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ConfigError, PressurebenchError, reported
from ..io import read_yaml_model
from ..params import Params, load_params
from ..paths import benchmark_source
from ..schemas import Benchmark
from .arm import add_arm_parser

DEFAULT_PARAMS = "params/pipeline.yaml"
PARAMS_HELP = "the params file: models, roles, targets, benchmarks and every setting"
BENCHMARK_HELP = "one of the params' `benchmarks`; it names the folders the command reads and writes"


def study_of(args: argparse.Namespace) -> tuple[Params, str]:
    """The params a command reads (`--params`) and the benchmark it names (`--benchmark`;
    default: the params' first), which must be one of the params' benchmarks: the name becomes
    part of the paths the command writes."""
    params = load_params(args.params)
    benchmark = args.benchmark or params.benchmarks[0]
    if benchmark not in params.benchmarks:
        raise ConfigError(args.params, f"'{benchmark}' is not one of the benchmarks "
                                       f"({', '.join(params.benchmarks)})", "benchmarks")
    return params, benchmark


def add_study_options(p: argparse.ArgumentParser, *, benchmark_required: bool) -> None:
    """`--benchmark` and `--params`, as every command on one benchmark's study takes them: the
    benchmark required, or the params' first by default."""
    if benchmark_required:
        p.add_argument("--benchmark", required=True, help=BENCHMARK_HELP)
    else:
        p.add_argument("--benchmark", help=f"{BENCHMARK_HELP} (default: the first)")
    p.add_argument("--params", default=DEFAULT_PARAMS, help=PARAMS_HELP)


def refused(problems: list[str]) -> int:
    """Each problem on stderr as one line of the command's error, and the exit code of an
    error the user can act on."""
    for line in problems:
        print(f"pressurebench: {line}", file=sys.stderr)
    return 2


def cmd_check(args: argparse.Namespace) -> int:
    from ..benchmark_checks import check_definitions, name_warning
    from .preflight import dvc_param_problems, endpoint_problems, key_problems

    params = load_params(args.params)
    for name in params.benchmarks:
        bench = read_yaml_model(benchmark_source(name), Benchmark)
        check_definitions(benchmark_source(name), bench)
        warning = name_warning(benchmark_source(name), bench, name)
        if warning:
            print(f"warn  {warning}")
        kind = f"{len(bench.metrics)} hand-written metrics" if bench.metrics else "metrics to generate"
        print(f"ok  benchmark {name}: {kind}")
    shown = args.params
    if Path(args.params).is_symlink():  # `pressurebench use`
        shown = f"{args.params} (links to {os.readlink(args.params)})"
    print(f"ok  {shown}: {len(params.models)} models, targets {', '.join(params.targets)}")
    from ..interop import check_imports

    for line in check_imports(params, args.params):
        print(f"ok  {line}")
    if Path("dvc.yaml").is_file():
        from ..params_fill import fill_defaults, interpolates_from

        if interpolates_from("dvc.yaml", args.params):
            for key, value in fill_defaults(args.params, params).items():
                print(f"wrote  {args.params}: {key}: {json.dumps(value)} (its default; dvc.yaml "
                      "reads the key from this file, so it is written there)")
        watched, problems, files = dvc_param_problems(args.params)
        if problems:
            return refused(problems)
        if watched:
            print(f"ok  dvc.yaml: all {watched} params its stages watch are in {args.params}")
        else:
            print(f"note  dvc.yaml: no stage reads {args.params} (they read "
                  f"{', '.join(sorted(files)) or 'no params file'}); `dvc repro` will not use it "
                  f"until `pressurebench use {args.params}`.")
    from .preflight import used_models
    from .price_list import price_lines

    priced, unpriced = price_lines(params, used_models(params))
    for line in priced:
        print(f"price  {line}")
    for line in unpriced:
        print(f"warn  {line}")
    problems = key_problems(args.params, params)
    unchecked: list[str] = []
    if not problems and not args.offline:
        problems, unchecked = endpoint_problems(params)
    if problems:
        return refused(problems)
    for line in unchecked:
        print(f"warn  {line}")
    print("ok  keys present" + ("" if args.offline else " and every endpoint answers"))
    return 0


def cmd_use(args: argparse.Namespace) -> int:
    from ..params_fill import FILLED_COMMENT
    from .preflight import dvc_param_problems
    from .use import PIPELINE_PARAMS, use_params

    used = use_params(args.params_file)
    if used.filled:
        print(f"wrote  {used.params}: the defaults of {len(used.filled)} keys it leaves out, "
              f"which DVC reads from the file itself ({', '.join(used.filled)}), each marked "
              f"'# {FILLED_COMMENT}'")
    if used.replaced is not None:
        print(f"ok  {PIPELINE_PARAMS} now links to {used.params} (it was {used.replaced})")
    watched, problems, _ = dvc_param_problems(PIPELINE_PARAMS)
    if problems:
        return refused(problems)
    print(f"ok  dvc.yaml: all {watched} params its stages watch are in {used.params}")
    print(f"`dvc repro` now runs {used.params}; so do `pressurebench check`, `estimate` and every "
          "other command without --params")
    return 0


def cmd_estimate(args: argparse.Namespace) -> int:
    from ..llm import recorded_spending
    from ..run_totals import format_cost, format_seconds, read_totals
    from .cost_forecast import cached_share, cap_warning, estimate, format_table, price_notes
    from .time_forecast import expected_times, total_seconds

    params = load_params(args.params)
    lines = estimate(params)
    print(format_table(lines))
    warning = cap_warning(params, lines, recorded_spending(params.run.cache_dir))
    if warning:
        print(f"\nwarn  {warning}")
    print("\nToken counts are planning estimates (replies assumed to use ~60% of max_tokens, "
          "structured repairs not included).")
    print(f"Prompt caching: {cached_share(lines):.0%} of the input is predicted to be read from "
          "the providers' prompt caches ('cached'); 'cost USD' prices it as billed, 'uncached USD' "
          "at the full input price.")
    for note in price_notes(params, lines):
        print(note)
    history = read_totals(params.data_dir) if params.data_dir.is_dir() else None
    times = expected_times(params, lines, history)
    print("\nExpected time of the model calls (stages run one after another, as `dvc repro` does):")
    stage_w = max(len(t.stage) for t in times)
    arm_w = max(len(t.arm) for t in times)
    for t in times:
        print(f"  {t.stage:<{stage_w}}  {t.arm:<{arm_w}}  {format_seconds(t.seconds):>12}  {t.basis}")
    total = total_seconds(times)
    print(f"  {'total':<{stage_w + arm_w + 2}}  {format_seconds(total):>12}"
          + ("" if total is not None else "  (not estimated for every stage)"))
    costed = [t for t in times if t.cost_usd is not None]
    if costed:
        print("\nExpected cost from what the recorded calls cost when they were made "
              "(replayed since or not):")
        for t in costed:
            print(f"  {t.stage:<{stage_w}}  {t.arm:<{arm_w}}  {format_cost(t.cost_usd):>12}  "
                  f"{t.cost_basis}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Two runs side by side: a terminal table, an HTML report listed in `reports/compare/`'s
    own index (the pipeline's index page, a DVC output, is not rewritten: it links that one)."""
    from ..compare import compare_runs, read_run, terminal_text, write_report
    from ..reports import write_index

    params = load_params(args.params)
    comparison = compare_runs(
        read_run(args.run_a), read_run(args.run_b),
        confidence_level=params.statistics.confidence_level,
    )
    print(terminal_text(comparison))
    if not args.no_report:
        page = write_report(comparison, params.reports_dir)
        listing = write_index(page.parent, title="pressurebench run comparisons",
                              comparisons=False)
        print(f"\nwrote {page} (listed in {listing}, which {params.reports_dir / 'index.html'} "
              "links)")
    return 0


def cmd_import_impactbench(args: argparse.Namespace) -> int:
    from ..interop import import_impactbench

    report = import_impactbench(args.dir, name=args.name, data_dir=args.data_dir)
    print("\n".join(report.lines()))
    print(f"add '{report.name}' to `benchmarks` in the params to aggregate it with the other results")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from ..interop import import_conversations

    report = import_conversations(args.params, args.benchmark, args.target, args.files,
                                  cluster_by=args.cluster_by)
    print("\n".join(report.lines()))
    print(f"'{args.target}' is declared in {args.params}: `dvc repro` judges its conversations")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    if args.kind == "inspect":
        return cmd_export_inspect(args)
    if args.arm or args.out:
        print("pressurebench: --arm and --out belong to `export inspect`", file=sys.stderr)
        return 2
    from ..reports import export

    return export.main(["--benchmark", args.benchmark, "--params", args.params])


def cmd_export_inspect(args: argparse.Namespace) -> int:
    from ..interop import export_inspect
    from ..paths import inspect_logs_dir

    params, benchmark = study_of(args)
    out = Path(args.out) if args.out else inspect_logs_dir(params.reports_dir, benchmark)
    written, skipped = export_inspect(args.params, params, benchmark, args.arm, out)
    for log in written:
        print(f"wrote {log.path}: {log.samples} conversations of {log.target} "
              f"({log.arm} arm), {log.errors} of them failed in simulation")
    for reason in skipped:
        print(f"skipped {reason}")
    if not written:
        print("pressurebench: no finished scores to export", file=sys.stderr)
        return 2
    print(f"open them with `inspect view --log-dir {out}`")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    from ..interop import write_release

    params, benchmark = study_of(args)
    release = write_release(args.params, params, benchmark, args.out,
                            include_raters=args.include_raters, license_=args.license)
    for table, rows in release.rows.items():
        print(f"wrote {release.folder}/data/{table}.parquet: {rows} rows")
    print(f"wrote {release.folder}/README.md (the dataset card) and "
          f"{release.folder}/croissant.json")
    for reason in release.skipped:
        print(f"skipped {reason}")
    print(f"push it with `huggingface-cli upload <user>/<dataset> {release.folder} "
          "--repo-type dataset`")
    return 0


def cmd_scenarios_export(args: argparse.Namespace) -> int:
    from ..paths import Layout
    from ..stages import curated_source, export_curated

    params, benchmark = study_of(args)
    source = Layout(params.data_dir, benchmark).scenarios_file
    out = curated_source(benchmark)
    n = export_curated(source, out, force=args.force)
    print(f"wrote {n} scenario rows to {out}: edit or drop them (move a base id to `dropped`), "
          "then `dvc repro` uses them as written and generates only what is missing")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """Base scenarios per metric a study needs, for each number of samples."""
    import math
    from dataclasses import replace

    from ..paths import Layout
    from ..stats import GENERATION_MARGIN, RULES, scenarios_for_intervals, with_margin
    from .sample_size import Design, pilot_design, pilot_icc_interval, required_scenarios

    params, benchmark = study_of(args)
    source = read_yaml_model(benchmark_source(benchmark), Benchmark)
    metrics = len(source.metrics) or params.generation.metrics_per_benchmark
    axes = [len(v) for v in params.generation.demographics.values()]
    variants = math.prod(axes) or 1
    design = Design(metrics=metrics, variants=variants, samples=params.generation.num_samples,
                    rate=args.rate, icc=args.icc, pair_correlation=args.pair_correlation,
                    variant_share=args.variant_share, values=max(axes, default=1))
    icc_high = None
    if args.pilot:
        layout = Layout(params.data_dir, benchmark)
        files = [layout.scores_file(t) for t in params.targets]
        design = pilot_design(design, files)
        low, icc_high, groups = pilot_icc_interval(files, confidence=args.confidence)
        print(f"pilot ({benchmark}, {', '.join(params.targets)}): pass rate {design.rate:.2f}, "
              f"variants' share {design.variant_share:.2f}, "
              f"ICC of base scenarios {design.icc:.2f} ({args.confidence:.0%} bootstrap interval "
              f"{low:.2f}–{icc_high:.2f} over {groups} base scenarios × targets); the last column "
              "plans for the interval's upper end, in case the clustering is as strong as the "
              "pilot allows")
    if args.labels_for is not None:
        return _plan_labels(args, design, benchmark, params)
    goal = {"half_width": args.half_width, "difference": args.difference, "gap": args.gap}
    (name, value), = ((k, v) for k, v in goal.items() if v is not None)
    named = {name: value}
    what = {"half_width": f"a {args.confidence:.0%} interval of ±{value:g} on a target's pass rate",
            "difference": f"80% power at α = 0.05 to detect a difference of {value:g} between two targets",
            "gap": f"80% power at α = 0.05 to detect a demographic gap of {value:g}"}[name]
    print(f"{benchmark}: {metrics} metrics, {variants} variants per base scenario; pass rate "
          f"{design.rate:g}, ICC {design.icc:g}, variants' share {design.variant_share:g}; "
          f"goal: {what}")
    upper = f"at ICC {icc_high:.2f}" if icc_high is not None else ""
    floor = scenarios_for_intervals(metrics)
    print(f"{'samples':>7} {'base scenarios/metric':>21} {'to generate':>11} "
          f"{'conversations/target':>20} {upper:>12}")
    for k in range(1, 6):
        s = required_scenarios(replace(design, samples=k), confidence=args.confidence, **named)
        planned = None if s is None else with_margin(max(s, floor))
        convs = "—" if planned is None else str(metrics * planned * variants * k)
        cautious = ""
        if icc_high is not None:
            c = required_scenarios(replace(design, samples=k, icc=icc_high),
                                   confidence=args.confidence, **named)
            cautious = "over 10000" if c is None else str(with_margin(max(c, floor)))
        mark = "  (params)" if k == params.generation.num_samples else ""
        print(f"{k:>7} {('over 10000' if s is None else s):>21} "
              f"{('—' if planned is None else planned):>11} {convs:>20} {cautious:>12}{mark}")
    print(f"\"to generate\" is the larger of the goal and the interval rules, plus "
          f"{GENERATION_MARGIN:.0%} (at least one) for base scenarios lost in generation (failed, "
          "rejected as near-duplicates, or without a valid row); conversations count those.")
    print("Intervals are reported from these base scenarios per metric with valid rows "
          "(pressurebench.stats.interval_rules, each measured by its coverage simulations):")
    for rule in RULES.values():
        single = ("none for a single metric" if rule.single_unsupported
                  else f"{rule.single} for a single metric")
        print(f"  {rule.statistic}: {rule.per_metric(metrics)} over all {metrics} metrics, "
              f"{single} ({rule.method})")
    print("below that the results withhold them, with the reason and the design that gives one.")
    return 0


def _plan_labels(args: argparse.Namespace, design, benchmark: str, params) -> int:
    """Labels per target for a judge-corrected interval of ±`args.labels_for`."""
    from dataclasses import replace

    from .sample_size import required_labels

    scenarios = args.scenarios or params.generation.scenarios_per_metric
    accuracy = args.judge_accuracy
    print(f"{benchmark}: {design.metrics} metrics × {scenarios} base scenarios × "
          f"{design.variants} variants; pass rate {design.rate:g}, ICC {design.icc:g}; judge "
          f"right on {accuracy:.0%} of present and of absent behaviour; goal: a "
          f"{args.confidence:.0%} judge-corrected interval of ±{args.labels_for:g} on a "
          "target's pass rate")
    print(f"{'samples':>7} {'labels/target':>26} {'conversations/target':>20}")
    for k in range(1, 6):
        d = replace(design, samples=k)
        n = required_labels(d, scenarios, half_width=args.labels_for, accuracy=accuracy,
                            confidence=args.confidence)
        mark = "  (params)" if k == params.generation.num_samples else ""
        rows = design.metrics * scenarios * d.rows_per_scenario
        shown = "more base scenarios needed" if n is None else str(n)
        print(f"{k:>7} {shown:>26} {rows:>20}{mark}")
    print("Labels are per target, drawn at random over its judged conversations "
          "(`labels.per_cell` × metrics); where more base scenarios are needed, the human rate "
          "itself is too uncertain at this design for that interval, however many are labelled.")
    return 0


def cmd_labels_export(args: argparse.Namespace) -> int:
    from ..labels import labels_folder, write_export

    params, benchmark = study_of(args)
    written = write_export(params, benchmark)
    print(f"wrote {written.items} items on {len(written.pages)} page(s) to {written.folder}/ "
          f"(items and hidden fields: {written.manifest})")
    for page in written.pages:
        print(f"  {page}")
    print("Send each page to a rater: they open it in a browser (no server needed), answer every "
          "item and download a labels file. Then run `pressurebench labels import FILE... "
          f"--benchmark {benchmark}`, which checks the files and keeps them in "
          f"{labels_folder(params, benchmark)}/.")
    return 0


def cmd_labels_import(args: argparse.Namespace) -> int:
    from collections import Counter

    from ..labels import import_labels

    params, benchmark = study_of(args)
    report = import_labels(params, benchmark, args.files)
    raters: Counter = Counter()
    for dest, counts in report.imported:
        raters.update(counts)
        print(f"ok  {dest}: {sum(counts.values())} labels")
    for dest in report.unchanged:
        print(f"ok  {dest}: already imported, unchanged")
    for source, reason in report.refused:
        print(f"pressurebench: refused {source}: {reason}", file=sys.stderr)
    for rater, n in sorted(raters.items()):
        print(f"{rater}: {n} labels imported")
    return 2 if report.refused else 0


STAGES = ("gen_metrics", "gen_scenarios", "simulate", "evaluate", "aggregate")
PER_TARGET = ("simulate", "evaluate")


def cmd_run(args: argparse.Namespace) -> int:
    """One stage of one arm (the main arm by default), without its notebook: the same `run`
    the notebook calls."""
    import importlib

    if (args.target is None) == (args.stage in PER_TARGET):
        need = "needs --target" if args.target is None else "takes no --target"
        print(f"pressurebench: stage {args.stage} {need}", file=sys.stderr)
        return 2
    stage = importlib.import_module(f"..stages.{args.stage}", __package__)
    extra = (args.target,) if args.target is not None else ()
    stage.run(args.params, args.benchmark, *extra, arm=args.arm)
    where = " ".join(x for x in (args.benchmark, args.arm, args.target) if x)
    print(f"ok  {args.stage} {where}")
    return 0


def add_command(
    sub: argparse._SubParsersAction, name: str, func: Callable[[argparse.Namespace], int],
    **kwargs: Any,
) -> argparse.ArgumentParser:
    """A command's parser (`kwargs` as `add_parser` takes them), bound to the function that
    runs it."""
    p = sub.add_parser(name, **kwargs)
    p.set_defaults(func=func)
    return p


def add_group(sub: argparse._SubParsersAction, name: str, summary: str) -> argparse._SubParsersAction:
    """A command made of subcommands (`pressurebench NAME SUBCOMMAND`): where they go."""
    return sub.add_parser(name, help=summary).add_subparsers(dest=f"{name}_command", required=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pressurebench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = add_command(
        sub, "check", cmd_check,
        help="validate the params and every benchmark file; keys present, endpoints answering",
    )
    p.add_argument("--params", default=DEFAULT_PARAMS, help=PARAMS_HELP)
    p.add_argument("--offline", action="store_true",
                   help="do not ask the API endpoints (one free model-list request each)")

    p = add_command(
        sub, "use", cmd_use,
        help="make `dvc repro` run this params file: validate it, write into it the "
        "defaults dvc.yaml reads, and link params/pipeline.yaml to it",
    )
    p.add_argument("params_file", metavar="FILE", help="the study's params file, under params/")

    p = add_command(sub, "estimate", cmd_estimate,
                    help="calls, tokens and cost per stage and role, before running")
    p.add_argument("--params", default=DEFAULT_PARAMS, help=PARAMS_HELP)

    p = add_command(
        sub, "compare", cmd_compare,
        help="compare two runs (git revisions, DVC experiments or result folders): rates, "
        "changes with intervals, settings that differ, cost and time",
    )
    p.add_argument("run_a", metavar="A", help="the baseline: a git revision, a DVC experiment "
                   "name, or a folder (a repository root or a data directory)")
    p.add_argument("run_b", metavar="B", help="the run compared with it, in the same forms")
    p.add_argument("--params", default=DEFAULT_PARAMS,
                   help="where the confidence level and the reports folder are read")
    p.add_argument("--no-report", action="store_true", help="print the table only")

    p = add_command(
        sub, "export", cmd_export,
        help="write the results' figures (SVG, PDF) and tables (CSV, LaTeX) for a "
        "paper, or (`export inspect`) the run as Inspect eval logs",
    )
    p.add_argument("kind", nargs="?", choices=("paper", "inspect"), default="paper",
                   help="paper (default): figures and tables under reports/<b>/export/; "
                   "inspect: one Inspect eval log per arm and target (needs the `inspect` extra)")
    add_study_options(p, benchmark_required=True)
    p.add_argument("--arm", help="inspect only: one arm, `main` or a validation arm such as "
                   "evaluator/<model id> (default: the main arm and every configured arm)")
    p.add_argument("--out", help="inspect only: the folder of the logs (default: "
                   "reports/<b>/inspect/)")

    p = add_command(
        sub, "release", cmd_release,
        help="write a finished study as a dataset for the Hugging Face Hub: Parquet "
        "tables, a dataset card and Croissant metadata (needs the `release` extra)",
    )
    add_study_options(p, benchmark_required=False)
    p.add_argument("--out", required=True,
                   help="the release folder: new, empty, or one an earlier release wrote")
    p.add_argument("--include-raters", action="store_true",
                   help="add the human labels, each rater under a pseudonym")
    p.add_argument("--license", default="other",
                   help="the dataset's license as the Hub names it, e.g. cc-by-4.0 (default: "
                   "other); check the terms of the models whose replies it holds")

    # `plan` is the command's former name, kept for one release so scripts that call it run.
    p = add_command(
        sub, "size", cmd_plan, aliases=["plan"],
        help="size a study: the base scenarios per metric, or the human labels, its goal needs "
        "(`plan`, the former name, still runs it in this release)",
    )
    p.add_argument("--params", default=DEFAULT_PARAMS, help=PARAMS_HELP)
    p.add_argument("--benchmark", help=f"{BENCHMARK_HELP} (default: the first)")
    goal = p.add_mutually_exclusive_group(required=True)
    goal.add_argument("--half-width", type=float, help="interval half-width wanted on a pass rate")
    goal.add_argument("--difference", type=float, help="difference between two targets to detect")
    goal.add_argument("--gap", type=float, help="demographic gap to detect")
    goal.add_argument("--labels-for", type=float, metavar="HALF_WIDTH",
                      help="human labels per target for a judge-corrected interval of this half-width")
    p.add_argument("--judge-accuracy", type=float, default=0.85,
                   help="with --labels-for: how often the judge is right (present and absent alike)")
    p.add_argument("--scenarios", type=int,
                   help="with --labels-for: base scenarios per metric (default: the params')")
    p.add_argument("--rate", type=float, default=0.5, help="expected pass rate (0.5 plans for the worst case)")
    p.add_argument("--icc", type=float, default=0.2, help="intra-class correlation of base scenarios")
    p.add_argument("--variant-share", type=float, default=0.0,
                   help="share of the verdicts' variance between the variants of one base "
                   "scenario (rewrite and demographic effects; the results' variance components)")
    p.add_argument("--pair-correlation", type=float, default=0.0,
                   help="how alike two targets' scenario effects are (0: plan for the worst case)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence level of the intervals planned")
    p.add_argument("--pilot", action="store_true",
                   help="estimate the pass rate, the ICC and the variants' share from this "
                   "benchmark's finished scores")

    scenarios = add_group(sub, "scenarios", "curate the generated scenarios")
    p = add_command(
        scenarios, "export", cmd_scenarios_export,
        help="write the generated scenarios to benchmarks/<b>/scenarios.yaml to edit",
    )
    add_study_options(p, benchmark_required=True)
    p.add_argument("--force", action="store_true", help="replace an existing curated file")

    p = add_command(
        sub, "import", cmd_import,
        help="judge conversations another tool had (Inspect eval logs, plain chat JSONL) as a "
        "target's: validate them, keep a normalized copy under imports/, declare the target",
    )
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="Inspect logs (.eval, .json) or JSONL files, one conversation a line: "
                   '{"id", "messages": [{"role", "content"}], "group"?, "metadata"?}')
    p.add_argument("--benchmark", required=True, help=BENCHMARK_HELP)
    p.add_argument("--target", required=True,
                   help="the target id the conversations are judged as (a new model id, or one "
                   "imported before: its conversations for this benchmark are replaced)")
    p.add_argument("--cluster-by", metavar="FIELD",
                   help="cluster the intervals on this field (`group` or a metadata field); "
                   "default: each conversation is its own cluster")
    p.add_argument("--params", default=DEFAULT_PARAMS, help=PARAMS_HELP)

    p = add_command(
        sub, "import-impactbench", cmd_import_impactbench,
        help="import an impactbench benchmark folder (benchmark.yaml, scenarios.json, runs/) into data/",
    )
    p.add_argument("dir", help="the impactbench folder, e.g. impactbench/benchmarks/<name>")
    p.add_argument("--name", help="benchmark id to import it as (default: the folder name)")
    p.add_argument("--data-dir", default="data", help="where pipeline outputs live (default: data)")

    p = add_command(
        sub, "run", cmd_run,
        help="run one stage as its notebook would (exit 2: bad input, 3: too many errors, "
        "4: the stage's process crashed natively, 130: stopped by Ctrl-C)",
    )
    p.add_argument("stage", choices=STAGES, help="the stage to run")
    p.add_argument("--benchmark", required=True, help=BENCHMARK_HELP)
    p.add_argument("--target", help="the target model id (simulate and evaluate only)")
    p.add_argument("--arm", help="a validation arm, generator/<model id>, user/<model id> or "
                   "evaluator/<model id> (default: the main arm)")
    p.add_argument("--params", default=DEFAULT_PARAMS, help=PARAMS_HELP)

    labels = add_group(sub, "labels", "have people label judged conversations, to check the judge")
    p = add_command(
        labels, "export", cmd_labels_export,
        help="draw conversations to label; write rater pages to reports/<b>/labelling/",
    )
    add_study_options(p, benchmark_required=False)
    p = add_command(
        labels, "import", cmd_labels_import,
        help="check labels files (JSONL or CSV) and keep them under <labels.dir>/<b>/",
    )
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="labels files downloaded from the rater pages")
    add_study_options(p, benchmark_required=False)

    add_arm_parser(sub)
    return parser


# Stage commands with an embedded model run in a child process, so a native crash inside
# llama.cpp is reported, not a bare exit status 139.
STAGE_COMMANDS = ("run",)
CHILD_ENV = "PRESSUREBENCH_STAGE_CHILD"


def run_in_child(argv: list[str], args: argparse.Namespace) -> int:
    """The same command in a child process (with Python's fault handler, which prints the
    native stack of a crash); its exit status, or a report and EXIT_NATIVE_CRASH if it died.

    The child runs as a stage's process does (`pipeline.notebook_run.run_stage_process`): a
    Ctrl-C reaches it once, relayed from here, and it stops the way every stage does."""

    from ..pipeline import EXIT_NATIVE_CRASH, crash_message, run_stage_process, signal_name

    code, relayed = run_stage_process(
        [sys.executable, "-X", "faulthandler", "-m", "pressurebench.commands.cli", *argv],
        env={**os.environ, CHILD_ENV: "1"})
    if code >= 0:
        return code
    if -code in relayed:
        print(f"pressurebench: stopped by {signal_name(code)}", file=sys.stderr)
        return 128 - code
    stage = " ".join(str(a) for a in argv if not str(a).startswith("-"))
    how = f"the process was killed by {signal_name(code)}"
    print(f"pressurebench: {crash_message(stage, args.params, how)}", file=sys.stderr)
    return EXIT_NATIVE_CRASH


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command in STAGE_COMMANDS and not os.environ.get(CHILD_ENV):
        from ..pipeline import embedded_models

        if embedded_models(args.params):
            return run_in_child(sys.argv[1:] if argv is None else list(argv), args)
    if os.environ.get(CHILD_ENV):
        from ..pipeline import stop_with_command

        stop_with_command()
    try:
        return args.func(args)
    except (PressurebenchError, KeyboardInterrupt) as exc:
        return reported(exc)


if __name__ == "__main__":
    sys.exit(main())
