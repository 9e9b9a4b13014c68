"""A stage's `run`, as its notebook calls it: with the params file, the benchmark, the target
for the stages that write one (`target_stage`) or none for those that write for the whole
benchmark (`benchmark_stage`), and by keyword the arm (None: the main arm) and the providers.

Every stage reads its params and resolves its arm's inputs (`arms.inputs`) the same way before
its own work, which gets them together as one `StageCall`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..arms.inputs import ArmInputs, resolve
from ..llm.client import ProviderFactory
from ..params import Params, load_params
from ..schemas import Manifest


@dataclass(frozen=True)
class StageCall:
    """The call a stage's work answers: the params (and the file they come from), the
    benchmark, the arm asked for and its inputs, and the providers (None: the configured
    ones)."""

    params_path: str | Path
    params: Params
    benchmark: str
    arm: str | None
    inputs: ArmInputs
    provider_factory: ProviderFactory | None


def stage_call(
    params_path: str | Path,
    benchmark: str,
    arm: str | None,
    provider_factory: ProviderFactory | None,
) -> StageCall:
    """The params of `params_path` and the inputs of `arm` of `benchmark`."""
    params = load_params(params_path)
    inputs = resolve(params_path, params, benchmark, arm)
    return StageCall(params_path, params, benchmark, arm, inputs, provider_factory)


class BenchmarkRun(Protocol):
    """The `run` of a stage that writes for the whole benchmark, as callers type-check it."""

    def __call__(self, params_path: str | Path, benchmark: str, *, arm: str | None = None,
                 provider_factory: ProviderFactory | None = None) -> Manifest: ...


class TargetRun(Protocol):
    """The `run` of a stage that writes for one target, as callers type-check it."""

    def __call__(self, params_path: str | Path, benchmark: str, target: str, *,
                 arm: str | None = None,
                 provider_factory: ProviderFactory | None = None) -> Manifest: ...


def _name_as(run: Callable[..., Manifest], work: Callable[..., Manifest]) -> None:
    """Document and name `run` as the stage's `work`, which readers, errors and `inspect.unwrap`
    find it by, while `inspect.signature` keeps the call's own signature."""
    signature = inspect.signature(run)
    functools.update_wrapper(run, work)
    run.__signature__ = signature  # type: ignore[attr-defined]  # read by inspect.signature


def benchmark_stage(work: Callable[[StageCall], Manifest]) -> BenchmarkRun:
    """`run(params_path, benchmark, *, arm=None, provider_factory=None)` of a stage that
    writes for the whole benchmark: `work` on the call."""

    def run(params_path: str | Path, benchmark: str, *, arm: str | None = None,
            provider_factory: ProviderFactory | None = None) -> Manifest:
        return work(stage_call(params_path, benchmark, arm, provider_factory))

    _name_as(run, work)
    return run


def target_stage(work: Callable[[StageCall, str], Manifest]) -> TargetRun:
    """`run(params_path, benchmark, target, *, arm=None, provider_factory=None)` of a stage
    that writes for one target: `work` on the call and the target."""

    def run(params_path: str | Path, benchmark: str, target: str, *, arm: str | None = None,
            provider_factory: ProviderFactory | None = None) -> Manifest:
        return work(stage_call(params_path, benchmark, arm, provider_factory), target)

    _name_as(run, work)
    return run
