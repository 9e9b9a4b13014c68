"""Where every artifact lives. One place, so stages, DVC and reports agree.

The rule (also the header of dvc.yaml and docs/repository.md): every stage writes its data
into one folder of its own, named after its step, and its report into the same path under
`reports/` instead of `data/`:

    data/<benchmark>/[validation/<study>/[arms/<model>/]][runs/<target>/]<step>/

The main arm's root is `data/<benchmark>/`; a validation arm runs the main stages with the
same layout below `data/<benchmark>/validation/<study>/arms/<model>/`. A stage's folder
holds its artifact, `manifest.json`, `cost.json` and, for a stage calling models,
`calls.jsonl` (the calls its last run used, kept across runs: replay reads them). The
stage's name is the folder's path below `data/<benchmark>/` without the matrix values
(benchmark, model, target) and the `arms/` and `runs/` levels, joined with `_`:
`data/b/runs/t/simulate/` is the stage `simulate`,
`data/b/validation/generator/arms/m/runs/t/evaluate/` is `validation_generator_evaluate`.
The judge probes, a study without arms, edit and re-judge the main arm's conversations in
`data/<b>/validation/probes/runs/<target>/edit/` and `.../evaluate/`.

Each study's comparison (`data/<b>/validation/<study>/bias/`) depends on the one folder every
step of the study writes below: its `arms/` (the judge probes': `runs/`). The study's plan,
`plan.json`, lies there too, written by a stage that runs whatever the params say, so that folder
exists even when the study runs no arm or no target: DVC refuses a dependency that does not
exist, and a comparison must not depend on a folder that exists only by accident.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

RUNS = "runs"
VALIDATION = "validation"
ARMS = "arms"
MANIFEST = "manifest.json"
COST = "cost.json"
CALLS = "calls.jsonl"
# Before one folder per stage, a stage's calls lay beside its artifacts as `<stage>.calls.jsonl`.
OLD_CALLS_SUFFIX = ".calls.jsonl"
# Each validation study's comparison stage (named as the params key listing its arms,
# `validation.<stage>`) and the step folder it writes below `validation/<study>/`.
STUDY_COMPARISONS = {"generator": "generator_bias", "user": "user_model_bias",
                     "evaluator": "evaluator_bias", "probes": "judge_probes"}
COMPARISON_STEP = "bias"
# The judge probes: a study without arms, whose steps run per target below
# `validation/probes/runs/<target>/`; each code stage and the step folder it writes.
PROBES = "probes"
PROBE_STEPS = {"probes_edit": "edit", "probes_evaluate": "evaluate"}
# Each study's plan, in the folder the study's comparison depends on (`study_steps_dir`).
PLAN_FILE = "plan.json"


def benchmark_source(benchmark: str, root: str | Path = ".") -> Path:
    """The hand-edited input definition; never overwritten."""
    return Path(root) / "benchmarks" / benchmark / "benchmark.yaml"


# The report folder `pressurebench export inspect` writes by default, `reports/<b>/inspect/`:
# a command writing no data writes one report folder named after it (rule 4 above).
INSPECT_STEP = "inspect"
INSPECT_LOG_SUFFIX = ".eval"


def inspect_logs_dir(reports_dir: str | Path, benchmark: str) -> Path:
    """Where `pressurebench export inspect` writes a benchmark's Inspect eval logs by default."""
    return Path(reports_dir) / benchmark / INSPECT_STEP


def arm_path(arm: str | None) -> Path:
    """An arm's place below `data/<benchmark>/`: nothing for the main arm,
    `validation/<study>/arms/<model>` for the validation arm `<study>/<model>`, and
    `validation/<study>` for a study without arms (`probes`)."""
    if not arm:
        return Path()
    study, _, model = arm.partition("/")
    return Path(VALIDATION, study, ARMS, model) if model else Path(VALIDATION, study)


def inspect_log_file(logs_dir: str | Path, arm: str | None, target: str) -> Path:
    """One arm's eval log of one target inside the logs folder, at the arm's and target's place
    in the layout: `runs/<target>.eval` for the main arm,
    `validation/<study>/arms/<model>/runs/<target>.eval` for a validation arm."""
    return Path(logs_dir) / arm_path(arm) / RUNS / f"{target}{INSPECT_LOG_SUFFIX}"


# Normalized copies of imported conversations (`pressurebench import`), tracked in git. The
# folder always exists (its README says what it holds): every simulate stage depends on it, and
# a dependency that does not exist is an error to DVC.
IMPORTS_DIR = "imports"


def imported_file(benchmark: str, target: str, root: str | Path = ".") -> Path:
    """The normalized, validated copy of the conversations imported as `target`'s."""
    return Path(root) / IMPORTS_DIR / benchmark / f"{target}.json"


def validation_dir(data_dir: str | Path, benchmark: str) -> Path:
    """`data/<benchmark>/validation/`: every study's folder."""
    return Path(data_dir) / benchmark / VALIDATION


def study_dir(data_dir: str | Path, benchmark: str, study: str) -> Path:
    """`data/<benchmark>/validation/<study>/`: the study's arms (`arms/<model>/`) and plan
    (`arms/plan.json`), and its comparison (`bias/`)."""
    return validation_dir(data_dir, benchmark) / study


def study_steps_dir(data_dir: str | Path, benchmark: str, study: str) -> Path:
    """The folder every step of a study writes below, which its comparison depends on:
    `validation/<study>/arms/`, or for the judge probes (no arms) `validation/probes/runs/`."""
    return study_dir(data_dir, benchmark, study) / (RUNS if study == PROBES else ARMS)


def plan_file(data_dir: str | Path, benchmark: str, study: str) -> Path:
    """The study's plan: `validation/<study>/arms/plan.json` (`validation/probes/runs/plan.json`).
    A plan is a file, not a folder: no model or target id (`[A-Za-z0-9_-]`) names it."""
    return study_steps_dir(data_dir, benchmark, study) / PLAN_FILE


@dataclass(frozen=True)
class Layout:
    data_dir: Path
    benchmark: str
    arm: str | None = None

    @property
    def root(self) -> Path:
        """The arm's root: `data/<b>/`, `data/<b>/validation/<study>/arms/<model>/`, or for a
        study without arms (`probes`) `data/<b>/validation/<study>/`."""
        return Path(self.data_dir) / self.benchmark / arm_path(self.arm)

    def run_dir(self, target: str) -> Path:
        """Every folder of one target's stages: `<root>/runs/<target>/`."""
        return self.root / RUNS / target

    def stage_dir(self, stage: str, target: str | None = None) -> Path:
        """The one folder `stage` writes into (for `target`, below its run folder)."""
        study = next((s for s, name in STUDY_COMPARISONS.items() if name == stage), None)
        if study is not None:
            return study_dir(self.data_dir, self.benchmark, study) / COMPARISON_STEP
        if stage in PROBE_STEPS:
            if not target:
                raise ValueError(f"the stage {stage} runs per target")
            probes = study_dir(self.data_dir, self.benchmark, PROBES)
            return probes / RUNS / target / PROBE_STEPS[stage]
        return (self.run_dir(target) if target else self.root) / stage

    @property
    def benchmark_file(self) -> Path:
        return self.stage_dir("gen_metrics") / "benchmark.yaml"

    @property
    def scenarios_file(self) -> Path:
        return self.stage_dir("gen_scenarios") / "scenarios.json"

    def conversations_file(self, target: str) -> Path:
        return self.stage_dir("simulate", target) / "conversations.json"

    def scores_file(self, target: str) -> Path:
        return self.stage_dir("evaluate", target) / "scores.json"

    def manifest_file(self, stage: str, target: str | None = None) -> Path:
        return self.stage_dir(stage, target) / MANIFEST

    def cost_file(self, stage: str, target: str | None = None) -> Path:
        return self.stage_dir(stage, target) / COST

    def calls_file(self, stage: str, target: str | None = None) -> Path:
        """The model calls the stage's last run used (`llm.call_record`), versioned by DVC."""
        return self.stage_dir(stage, target) / CALLS

    def old_calls_file(self, stage: str, target: str | None = None) -> Path:
        """Where the layout before one folder per stage kept the same calls:
        `data/<b>/[validation/<study>/<model>/][runs/<target>/]<stage>.calls.jsonl` (a
        validation arm's root had no `arms/` level). `StageRun.client` moves such a file to
        `calls_file` when that is absent, so a study made then replays its calls."""
        root = Path(self.data_dir) / self.benchmark
        if self.arm:
            study, _, model = self.arm.partition("/")
            root = root / VALIDATION / study / model
        return (root / RUNS / target if target else root) / f"{stage}{OLD_CALLS_SUFFIX}"

    @property
    def results_file(self) -> Path:
        return self.stage_dir("aggregate") / "results.json"

    @property
    def metrics_summary_file(self) -> Path:
        """`dvc metrics show`'s summary, beside the aggregate folder (DVC keeps no metrics file
        inside an output folder)."""
        return self.root / "metrics.json"

    @property
    def pass_rates_plot_file(self) -> Path:
        """`dvc plots show`'s table, beside the aggregate folder for the same reason."""
        return self.root / "plots" / "pass_rates.csv"

    def study_file(self, stage: str) -> Path:
        """A validation study's comparison artifact (`stage`: `generator_bias`, ...)."""
        return self.stage_dir(stage) / f"{stage}.json"

    def probe_edits_file(self, target: str) -> Path:
        """The judge probes' edited conversations of one target."""
        return self.stage_dir("probes_edit", target) / "probe_edits.json"

    def probe_scores_file(self, target: str) -> Path:
        """The judge probes' verdicts on one target's edited conversations."""
        return self.stage_dir("probes_evaluate", target) / "probe_scores.json"


def probes_layout(data_dir: str | Path, benchmark: str) -> Layout:
    """The judge probes' layout: rooted at `data/<benchmark>/validation/probes/`."""
    return Layout(Path(data_dir), benchmark, PROBES)
