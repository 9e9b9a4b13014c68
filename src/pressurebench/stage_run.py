"""Plumbing every stage shares: params, the model client, progress, provenance, the error gate.

Stages differ in what they ask models; they must not differ in how they record
what happened. Everything a manifest, a cost file or an exit code says comes from here.
"""

from __future__ import annotations

import platform
import shutil
import sys
import time
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from tqdm import tqdm

from . import __version__
from .errors import ConfigError, StageFailed
from .io import is_write_in_progress, write_artifact
from .llm.client import ModelClient, ProviderFactory, add_cost
from .llm.providers.registry import api_class, provider_names
from .params import Params, load_params, param_values, require_api_keys
from .paths import CALLS, Layout
from .prompts import prompt_hashes
from .schemas import Cost, Manifest, ModelUsage, RecordedUsage

# What a stage calling no model records as its cache counts (those of a client never asked).
NO_CALLS_CACHE_STATS = {"hits": 0, "misses": 0, "repaired": 0, "replayed_from_record": 0}
# Beside every provider's own distributions (`ModelApi.distributions`).
RECORDED_PACKAGES = ("pressurebench", "pydantic", "numpy", "scipy", "pandas", "dvc", "papermill")


def package_versions() -> dict[str, str | None]:
    """The installed versions of the packages that decide a stage's outputs (None: not installed)."""
    providers = [name for p in provider_names() for name in api_class(p).distributions]
    out: dict[str, str | None] = {}
    for name in (*RECORDED_PACKAGES, *providers):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Progress:
    """A progress bar that shows done, ok and error counts as rows finish."""

    def __init__(self, total: int, desc: str):
        self.ok = 0
        self.error = 0
        self._bar = tqdm(total=total, desc=desc, unit="row", file=sys.stderr, dynamic_ncols=True,
                         mininterval=1.0)

    def update(self, ok: bool) -> None:
        if ok:
            self.ok += 1
        else:
            self.error += 1
        self._bar.set_postfix(ok=self.ok, error=self.error, refresh=False)
        self._bar.update(1)

    def close(self) -> None:
        self._bar.close()


def adopt_old_calls(old: Path, calls: Path) -> None:
    """Move a stage's call record from where the layout before one folder per stage kept it
    (`Layout.old_calls_file`) into the stage's folder, when the stage has none there yet, and
    say so on stderr: a study made before the layout changed replays its calls instead of
    making them again. A record already in the stage's folder is never replaced; the old file
    is then left where it is, and named."""
    if calls.exists():
        if old.is_file():
            print(f"pressurebench: {old} left in place: the stage reads its calls from {calls}",
                  file=sys.stderr)
        return
    if not old.is_file():
        return
    calls.parent.mkdir(parents=True, exist_ok=True)
    try:
        old.replace(calls)
    except FileNotFoundError:
        if not calls.is_file():  # not moved by another process of the same stage either
            raise
        return
    print(f"pressurebench: moved the call record {old} to {calls}, where this layout keeps "
          "it", file=sys.stderr)


class StageRun:
    """One execution of one stage for one benchmark (and target, and arm)."""

    def __init__(
        self,
        stage: str,
        params_path: str | Path,
        benchmark: str,
        *,
        models_used: list[str],
        target: str | None = None,
        arm: str | None = None,
        params: Params | None = None,
    ):
        self.stage = stage
        self.params_path = str(params_path)
        self.params = params or load_params(params_path)
        if benchmark not in self.params.benchmarks:
            raise ConfigError(params_path, f"'{benchmark}' is not one of the benchmarks", "benchmarks")
        require_api_keys(params_path, self.params, models_used)
        self.benchmark = benchmark
        self.target = target
        self.arm = arm
        self.layout = Layout(self.params.data_dir, benchmark, arm)
        self.started_at = now_iso()
        self._t0 = time.perf_counter()

    @property
    def folder(self) -> Path:
        """The one folder the stage writes into (`paths.Layout.stage_dir`)."""
        return self.layout.stage_dir(self.stage, self.target)

    def replacing_outputs(self) -> None:
        """Called right before the stage writes its first artifact: empty the stage's folder
        but for its call records, which this run read and replaces at the end (`finish`).

        DVC keeps the folder across runs (`persist: true`, for the call records), so the stage
        removes what its last run wrote, as DVC removes the outputs of a stage it does not
        keep; the old manifest and cost file go with the artifacts they describe, so a crash
        before the new manifest leaves none, never the old one beside new artifacts. Input
        errors found earlier leave everything as it was. A file being written (the temporary
        file of another run of the same stage, say) is its writer's to rename or remove."""
        if not self.folder.is_dir():
            return
        for entry in self.folder.iterdir():
            if entry.name == CALLS or is_write_in_progress(entry):
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def client(self, provider_factory: ProviderFactory | None = None) -> ModelClient:
        """The stage's model client, reading the stage's recorded calls in front of the cache.
        A stage calling no model builds none (`finish(None, ...)`)."""
        calls = self.layout.calls_file(self.stage, self.target)
        adopt_old_calls(self.layout.old_calls_file(self.stage, self.target), calls)
        return ModelClient.from_params(self.params, provider_factory=provider_factory, record=calls)

    def progress(self, total: int, counted: str | None = None) -> Progress:
        """A progress bar over `total` rows; `counted` says what they are where a row is not
        simply one of the stage's artifact rows (shown after the stage's name)."""
        label = "/".join(x for x in (self.stage, self.benchmark, self.arm, self.target) if x)
        return Progress(total, f"{label} ({counted})" if counted else label)

    def finish(
        self,
        client: ModelClient | None,
        *,
        counts: dict[str, int],
        prompts: list[str],
        declared: list[str],
        provenance: dict | None = None,
        seeds: dict[str, int | None] | None = None,
    ) -> Manifest:
        """Write `calls.jsonl` (the calls this run used, when the client records them),
        `cost.json` and `manifest.json` into the stage's folder; `client` None for a stage
        that calls no model (it records nothing, used nothing and was cached nothing).

        The manifest's params are the values of `declared`, the param paths the stage
        reads, which are also its `params:` in dvc.yaml (tests/pipeline/test_declared_params.py),
        and the `provenance` of its inputs (files, ids) beside them.
        """
        params_used = _no_header_values(param_values(self.params, declared)) | (provenance or {})
        if client is None:
            cost, cache = cost_summary({}, {}), NO_CALLS_CACHE_STATS
            usage, versions, prices = {}, {}, {}
        else:
            recorded = client.write_record()
            usage, versions = client.usage(), client.model_versions()
            prices = client.price_sources()
            cost = cost_summary(usage, client.recorded_usage()).model_copy(update={
                "concurrency": client.concurrency_report(), "cache_repaired": client.cache.repaired,
                "prices": prices,
                "cached_price_unknown_models": sorted(
                    mid for mid, u in usage.items()
                    if u.cached_input_tokens and not client.api(mid).cached_price_known
                ),
            })
            cache = client.cache_stats() | (
                {"recorded": recorded} if client.record is not None else {})
        write_artifact(self.layout.cost_file(self.stage, self.target), cost)
        models = {
            mid: self.params.models[mid].model_dump(mode="json", exclude={"extra_headers"})
            for mid in usage
        }
        manifest = Manifest(
            stage=self.stage,
            benchmark=self.benchmark,
            target=self.target,
            arm=self.arm,
            started_at=self.started_at,
            finished_at=now_iso(),
            duration_s=round(time.perf_counter() - self._t0, 3),
            pressurebench_version=__version__,
            python_version=platform.python_version(),
            packages=package_versions(),
            params_sha256=self.params.digest(params_used),
            params=params_used,
            prompt_sha256=prompt_hashes(prompts),
            models=models,
            model_versions=versions,
            seeds=seeds or {},
            counts=counts,
            cache=cache,
            cost_usd=cost.total_cost_usd,
            prices=prices,
        )
        write_artifact(self.layout.manifest_file(self.stage, self.target), manifest)
        return manifest

    def check_error_rate(
        self, n_error: int, n_total: int, what: str, artifact: Path,
        first_error: tuple[str, str | None] | None = None,
    ) -> None:
        """Artifacts are written first; then a run with too many errors exits non-zero, naming
        the file that holds the error rows and quoting the first (`(row id, reason)`)."""
        limit = self.params.run.max_error_rate
        if n_total and n_error / n_total > limit:
            first = (f"; the first, {first_error[0]}: {first_error[1] or 'no reason'}"
                     if first_error else "")
            raise StageFailed(
                f"{self.stage} {self.benchmark}"
                + (f" {self.target}" if self.target else "")
                + f": {n_error} of {n_total} {what} are errors ({n_error / n_total:.1%}), above "
                f"run.max_error_rate={limit:.1%}. The error rows are in {artifact}{first}"
            )


def _no_header_values(value):
    """Values as recorded, with each model's `extra_headers` reduced to their names: a header
    may carry a credential, and manifests are shared."""
    if isinstance(value, dict):
        return {k: sorted(v) if k == "extra_headers" and isinstance(v, dict) else _no_header_values(v)
                for k, v in value.items()}
    return value


def cost_summary(
    usage: dict[str, ModelUsage], recorded: dict[str, RecordedUsage] | None = None
) -> Cost:
    """What the run paid per model and in all, beside what its calls cost when they were made
    (`recorded`, replays included; None in all without it)."""
    total: float | None = 0.0
    unknown = []
    for mid, u in usage.items():
        total = add_cost(total, u.cost_usd)
        if u.cost_usd is None:
            unknown.append(mid)
    made: float | None = None
    if recorded is not None:
        made = 0.0
        for r in recorded.values():
            made = add_cost(made, r.cost_usd)
    return Cost(by_model=usage, total_cost_usd=total, unknown_price_models=sorted(unknown),
                recorded=recorded or {}, recorded_cost_usd=made)
