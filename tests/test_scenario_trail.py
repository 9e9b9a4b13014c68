"""The "Follow one scenario" trail of docs/how-it-works.md is true.

The trail is a numbered list, one step per package file: the file, the functions
(and row models) to read there, and what happens to the scenario. It names at
most `MAX_FILES` package files, and each name must be defined in its file. Then
one scenario (one metric generated from a description, one base scenario, two
demographic variants, one target) runs through every stage in-process against
the mock OpenAI server under a profiler: every function the trail names must run,
first called in the trail's order (the stages run in pipeline order, so this is
also the order within each stage), and every row model it names must be built
or read. A step renamed, moved to another file or bypassed fails here.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

import pressurebench
from mock_providers import MockLLMServer
from pressurebench.io import read_artifact
from pressurebench.paths import Layout
from pressurebench.schemas import ScenariosFile, ScoresFile
from pressurebench.stats.results import Results
from support import REPO, TINY_BENCHMARK, tiny_params

HEADING = "## Follow one scenario"
MAX_FILES = 15
STEP = re.compile(r"^(?P<number>\d+)\. `(?P<path>[^`]+)` — (?P<names>`[^`]+`(?:, `[^`]+`)*) — \S")
PACKAGE_DIR = Path(pressurebench.__file__).parent

PARAMS = "params/pipeline.yaml"
BENCHMARK = "tiny"
TARGET = "target"
KEY_ENV = "PB_TRAIL_KEY"
SCENARIO = "m01_s001"


@dataclass(frozen=True)
class Step:
    number: int
    path: str
    """Relative to the package folder, with `/`."""
    names: tuple[str, ...]


def trail_section(readme: str) -> str:
    start = readme.index(HEADING) + len(HEADING)
    end = re.search(r"^#", readme[start:], flags=re.MULTILINE)
    return readme[start : start + end.start()] if end else readme[start:]


def trail_steps(section: str) -> list[Step]:
    """Every numbered line of the section, each required to read `file` — `names` — what happens."""
    steps = []
    for line in section.splitlines():
        if not re.match(r"^\d+\. ", line):
            continue
        match = STEP.match(line)
        assert match, f"a trail step must read N. `file` — `name`, `name` — what happens: {line!r}"
        names = tuple(re.findall(r"`([^`]+)`", match["names"]))
        steps.append(Step(int(match["number"]), match["path"], names))
    assert [s.number for s in steps] == list(range(1, len(steps) + 1)), "steps are numbered 1..n"
    return steps


def definition(path: str, name: str):
    """The function or class `name` (dotted for methods) as defined in package file `path`."""
    assert (PACKAGE_DIR / path).is_file(), f"the trail names {path}, which is not a package file"
    module_name = f"{pressurebench.__name__}.{path.removesuffix('.py').replace('/', '.')}"
    obj = importlib.import_module(module_name)
    for part in name.split("."):
        assert hasattr(obj, part), f"{path} defines no {name}"
        obj = getattr(obj, part)
    if inspect.isclass(obj):
        assert obj.__module__ == module_name and obj.__qualname__ == name, (
            f"{name} is imported into {path}, not defined there ({obj.__module__}.{obj.__qualname__})"
        )
        assert issubclass(obj, BaseModel), f"{path}: {name} is a class but not a row model"
        return obj
    code = inspect.unwrap(obj).__code__
    assert Path(code.co_filename).samefile(PACKAGE_DIR / path) and code.co_qualname == name, (
        f"{name} is imported into {path}, not defined there ({code.co_filename}: {code.co_qualname})"
    )
    return obj


_MODEL_ENTRIES = {
    BaseModel.__init__.__code__: "self",
    BaseModel.model_validate.__func__.__code__: "cls",
    BaseModel.model_validate_json.__func__.__code__: "cls",
}


@dataclass
class CallTracer:
    """The first call of every package function, by file and qualified name, and the stage that
    made it; and the row models built or validated. Module and class bodies (imports) are not
    calls: only code objects with their own locals count."""

    stage: str = ""
    first: dict[tuple[str, str], int] = field(default_factory=dict)
    stage_of: dict[tuple[str, str], str] = field(default_factory=dict)
    models: set[type] = field(default_factory=set)

    def __post_init__(self):
        self._prefix = str(PACKAGE_DIR) + os.sep

    def __call__(self, frame, event, arg) -> None:
        if event != "call":
            return
        code = frame.f_code
        owner = _MODEL_ENTRIES.get(code)
        if owner is not None:
            found = frame.f_locals.get(owner)
            self.models.add(found if isinstance(found, type) else type(found))
        elif code.co_flags & inspect.CO_NEWLOCALS and code.co_filename.startswith(self._prefix):
            key = (code.co_filename[len(self._prefix) :].replace(os.sep, "/"), code.co_qualname)
            if key not in self.first:
                self.first[key] = len(self.first)
                self.stage_of[key] = self.stage

    def run(self, stage: str, call) -> None:
        self.stage = stage
        previous, previous_threads = sys.getprofile(), threading.getprofile()
        sys.setprofile(self)
        threading.setprofile(self)
        try:
            call()
        finally:
            sys.setprofile(previous)
            threading.setprofile(previous_threads)


@pytest.fixture(scope="module")
def steps() -> list[Step]:
    return trail_steps(trail_section((REPO / "docs" / "how-it-works.md").read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> tuple[CallTracer, Layout]:
    """One scenario through every stage, from a description-only benchmark, under the tracer."""
    from pressurebench.stages import aggregate, evaluate, gen_metrics, gen_scenarios, simulate

    root = tmp_path_factory.mktemp("trail")
    tracer = CallTracer()
    with MockLLMServer(api_key="trail-key") as server, pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.setenv(KEY_ENV, "trail-key")

        def model(name: str) -> dict:
            return {"provider": "openai", "model": name, "base_url": server.openai_base_url,
                    "api_key_env": KEY_ENV, "max_tokens": 400}

        params = tiny_params(
            models={m: model(f"{m}-model") for m in ("gen", "user", "judge", TARGET)},
            targets=[TARGET],
            generation={"metrics_per_benchmark": 1, "scenarios_per_metric": 1,
                        "scenario_turns": 2, "turns": 2, "num_samples": 1,
                        "demographics": {"age": ["teenager", "retiree"]}},
            evaluation={"per_turn": True},
        )
        (root / "params").mkdir()
        (root / PARAMS).write_text(yaml.safe_dump(params, sort_keys=False))
        described = {k: v for k, v in TINY_BENCHMARK.items() if k != "metrics"}
        (root / "benchmarks" / BENCHMARK).mkdir(parents=True)
        (root / "benchmarks" / BENCHMARK / "benchmark.yaml").write_text(yaml.safe_dump(described))

        tracer.run("gen_metrics", lambda: gen_metrics.run(PARAMS, BENCHMARK))
        tracer.run("gen_scenarios", lambda: gen_scenarios.run(PARAMS, BENCHMARK))
        tracer.run("simulate", lambda: simulate.run(PARAMS, BENCHMARK, TARGET))
        tracer.run("evaluate", lambda: evaluate.run(PARAMS, BENCHMARK, TARGET))
        tracer.run("aggregate", lambda: aggregate.run(PARAMS, BENCHMARK))
    return tracer, Layout(root / "data", BENCHMARK)


def test_the_trail_names_few_package_files_that_define_what_it_names(steps):
    section = trail_section((REPO / "docs" / "how-it-works.md").read_text(encoding="utf-8"))
    named = {s.path for s in steps} | {
        p for p in re.findall(r"`([^`\s]+\.py)`", section) if (PACKAGE_DIR / p).is_file()
    }
    assert len(named) <= MAX_FILES, f"the trail names {len(named)} package files: {sorted(named)}"
    assert len(steps) == len({s.path for s in steps}), "one step per file"
    for step in steps:
        for name in step.names:
            definition(step.path, name)


def test_the_scenario_is_the_one_the_trail_follows(traced):
    _, layout = traced
    rows = read_artifact(layout.scenarios_file, ScenariosFile).rows
    assert [r.id for r in rows] == [f"{SCENARIO}_v01", f"{SCENARIO}_v02"]
    assert {r.base_id for r in rows} == {SCENARIO}


def test_every_function_of_the_trail_runs_in_the_trails_order(steps, traced):
    tracer, _ = traced
    functions = [(s.path, name) for s in steps for name in s.names
                 if not inspect.isclass(definition(s.path, name))]
    never = [f"{path}: {name}" for path, name in functions if (path, name) not in tracer.first]
    assert not never, f"named on the trail but never run for the scenario: {never}"
    late = [
        f"{a[1]} ({a[0]}, first run in {tracer.stage_of[a]}) runs after "
        f"{b[1]} ({b[0]}, first run in {tracer.stage_of[b]})"
        for a, b in pairwise(functions)
        if tracer.first[a] > tracer.first[b]
    ]
    assert not late, f"the trail's order is not the order of the run: {late}"


def test_every_row_model_of_the_trail_is_built_or_read(steps, traced):
    tracer, _ = traced
    named = [definition(s.path, name) for s in steps for name in s.names]
    models = [obj for obj in named if inspect.isclass(obj)]
    unused = [m.__qualname__ for m in models if m not in tracer.models]
    assert not unused, f"named on the trail but never built or read: {unused}"


def test_the_trail_ends_at_the_scenarios_pass_rate_in_the_results(traced):
    """The results' rate is the scores' passes over their verdicts; one base scenario gets no
    interval, and the results say why."""
    _, layout = traced
    scores = read_artifact(layout.scores_file(TARGET), ScoresFile).rows
    judged = [s for s in scores if s.status == "ok"]
    assert {s.base_id for s in scores} == {SCENARIO} and len(judged) == 2
    overall = read_artifact(layout.results_file, Results).targets[TARGET].overall
    assert (overall.n, overall.n_error, overall.n_clusters) == (2, 0, 1)
    assert overall.rate == sum(s.passed for s in judged) / len(judged)
    assert overall.ci_low is None and overall.ci_high is None and overall.reason
