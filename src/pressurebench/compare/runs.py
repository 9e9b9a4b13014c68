"""A run to compare, read from a result folder, a git revision or a DVC experiment.

A revision or an experiment is read from git and the local DVC cache through
`dvc.api.DVCFileSystem` (experiment names resolve like branch names), so the
working tree is never checked out or touched. A folder is either a repository
root (its `params/pipeline.yaml` names the data directory) or a data directory
itself (`<benchmark>/runs/<target>/evaluate/scores.json` below it, `paths.Layout`). Every file is
validated as its stage wrote it, and an error names the run and the file.

Only the main arm is compared (the validation arms are studies of their own);
the run's totals count every stage, arms included.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol, TypeVar

import yaml
from pydantic import BaseModel

from ..errors import ConfigError
from ..io import check_schema_version, read_text, validate_as
from ..paths import COST, MANIFEST, RUNS, VALIDATION, Layout
from ..run_totals import RunTotals, manifest_beside, run_totals, stage_totals
from ..schemas import Cost, Manifest, ScenariosFile, ScoresFile

PARAMS_FILE = "params/pipeline.yaml"
DEFAULT_DATA_DIR = "data"
M = TypeVar("M", bound=BaseModel)


class Files(Protocol):
    """Read access to one run's files, paths relative to its data directory."""

    def paths(self) -> list[str]: ...

    def read(self, path: str) -> str: ...

    def where(self, path: str) -> str: ...


class FolderFiles:
    def __init__(self, data_dir: Path):
        self.data_dir = data_dir

    def paths(self) -> list[str]:
        return sorted(
            p.relative_to(self.data_dir).as_posix()
            for p in self.data_dir.rglob("*.json")
            if p.is_file()
        )

    def read(self, path: str) -> str:
        return read_text(self.data_dir / path)

    def where(self, path: str) -> str:
        return str(self.data_dir / path)


class RevisionFiles:
    """Files of a git revision or DVC experiment: git-tracked ones from git, outputs from the
    DVC cache."""

    def __init__(self, repo: Path, rev: str):
        from dvc.api import DVCFileSystem
        from dvc.exceptions import DvcException
        from dvc.repo import Repo
        from dvc.scm import resolve_rev

        self.rev = rev
        try:
            with Repo(str(repo)) as project:
                commit = resolve_rev(project.scm, rev)  # experiment names resolve too
        except DvcException as exc:
            raise ConfigError(
                Path(repo).resolve(),
                f"'{rev}' is neither a folder nor a git revision or DVC experiment here ({exc})",
            ) from None
        self.fs = DVCFileSystem(str(repo), rev=commit)
        params = self.fs.read_text(PARAMS_FILE) if self.fs.exists(PARAMS_FILE) else ""
        self.data_dir = data_dir_of(yaml.safe_load(params) if params else None)

    def paths(self) -> list[str]:
        if not self.fs.exists(self.data_dir):
            return []
        prefix = self.data_dir.rstrip("/") + "/"
        try:
            found = self.fs.find(self.data_dir)
        except Exception as exc:  # noqa: BLE001 - a missing cache entry surfaces as several kinds
            raise ConfigError(
                f"{self.rev}:{self.data_dir}",
                f"cannot list it from git or the DVC cache ({exc.__class__.__name__}: {exc}); "
                + missing_baseline(self.rev),
            ) from None
        return sorted(p.lstrip("/")[len(prefix):] for p in found if p.endswith(".json"))

    def read(self, path: str) -> str:
        full = f"{self.data_dir}/{path}"
        try:
            return self.fs.read_text(full, encoding="utf-8")
        except Exception as exc:  # noqa: BLE001 - a missing cache entry surfaces as several kinds
            raise ConfigError(
                self.where(path),
                f"cannot read it from git or the DVC cache ({exc.__class__.__name__}: {exc}); "
                + missing_baseline(self.rev),
            ) from None

    def where(self, path: str) -> str:
        return f"{self.rev}:{self.data_dir}/{path}"


def missing_baseline(rev: str) -> str:
    """How to get the outputs of `rev` when the local DVC cache lacks them, in one line.

    A fresh clone's cache holds no outputs of the committed run, and `dvc exp run` leaves its
    params in the working tree, so the baseline is run from an unchanged checkout."""
    return (f"a fresh clone's DVC cache holds no outputs of {rev}: make the baseline with "
            "`git stash && dvc exp run -n baseline` and compare `baseline` instead, or fetch "
            "them with `dvc pull` (`dvc exp pull` for a colleague's experiment)")


def data_dir_of(params: Any) -> str:
    """`run.data_dir` of a params mapping, `data` when it is not set."""
    run = params.get("run") if isinstance(params, dict) else None
    found = run.get("data_dir") if isinstance(run, dict) else None
    return str(found or DEFAULT_DATA_DIR).strip("/")


def open_files(spec: str, repo: Path) -> Files:
    """The files of run `spec`: a folder when one exists at that path, else a revision of `repo`."""
    folder = Path(spec)
    if folder.is_dir():
        params = folder / PARAMS_FILE
        if params.is_file():
            return FolderFiles(folder / data_dir_of(yaml.safe_load(read_text(params))))
        return FolderFiles(folder)
    return RevisionFiles(repo, spec)


@dataclass
class BenchmarkRun:
    scores: dict[str, ScoresFile]
    scenarios: ScenariosFile | None


@dataclass
class Run:
    """What a comparison needs of one run."""

    label: str
    benchmarks: dict[str, BenchmarkRun]
    manifests: dict[str, Manifest]  # of the main arm, by path
    totals: RunTotals


def parse(files: Files, path: str, model: type[M]) -> M:
    where = files.where(path)
    try:
        data = json.loads(files.read(path))
    except json.JSONDecodeError as exc:
        raise ConfigError(where, f"corrupted JSON at line {exc.lineno}: {exc.msg}") from None
    check_schema_version(where, data, model.model_fields["schema_version"].default)
    return validate_as(where, model, data)


def _main_arm(path: str) -> bool:
    return VALIDATION not in PurePosixPath(path).parts[1:-1]


def read_run(spec: str, repo: Path = Path(".")) -> Run:
    """Every main-arm score file, scenarios file and manifest of run `spec`, and its totals."""
    files = open_files(spec, repo)
    paths = files.paths()
    benchmarks: dict[str, BenchmarkRun] = {}
    for path in paths:
        parts = PurePosixPath(path).parts
        if (len(parts) > 2 and parts[1] == RUNS
                and path == Layout(Path("."), parts[0]).scores_file(parts[2]).as_posix()):
            bench = benchmarks.setdefault(parts[0], BenchmarkRun({}, None))
            bench.scores[parts[2]] = parse(files, path, ScoresFile)
    if not benchmarks:
        raise ConfigError(
            files.where(""),
            f"no scores ({Layout(Path('.'), '<benchmark>').scores_file('<target>').as_posix()}) "
            "in this run",
        )
    for name, bench in benchmarks.items():
        scenarios = Layout(Path("."), name).scenarios_file.as_posix()
        if scenarios in paths:
            bench.scenarios = parse(files, scenarios, ScenariosFile)
    manifests = {
        p: parse(files, p, Manifest) for p in paths
        if PurePosixPath(p).name == MANIFEST and _main_arm(p)
    }
    stages = []
    for path in (p for p in paths if PurePosixPath(p).name == COST):
        manifest_path = manifest_beside(path)
        manifest = None
        if manifest_path in paths:
            manifest = manifests.get(manifest_path) or parse(files, manifest_path, Manifest)
        stages.append(stage_totals(path, parse(files, path, Cost), manifest))
    return Run(spec, benchmarks, manifests, run_totals(stages))
