"""What every coverage sweep shares: the band, seeded (and resumable) runs, and the reading of
"the smallest design from which an interval covers".

A sweep simulates many benchmarks per design with known truths, computes each interval with
the package's own functions and counts how often it covers. A design's coverage measured from
B benchmarks is itself uncertain by about √(0.95 · 0.05 / B) (`monte_carlo_error`), so every
verdict here allows two such errors.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import pickle
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import partial
from importlib import resources
from pathlib import Path
from typing import Protocol, TypeVar

import numpy as np
from scipy.stats import beta

from ..interval_rules import rules_lowered

T = TypeVar("T")

# The band an interval's coverage is read against: below LOW it claims a certainty it lacks,
# above HIGH it is wider than it needs to be.
LOW, HIGH = 0.93, 0.975
# The designs every sweep measures: metrics × base scenarios per metric.
METRICS = (4, 20)
BASE_PER_METRIC = (2, 3, 5, 8, 12, 20, 30)


class Measured(Protocol):
    """A sweep's cell: its base scenarios per metric and, per interval type, its coverage
    among the benchmarks where the interval was reported (None: never)."""

    @property
    def base_per_metric(self) -> int: ...

    @property
    def coverage(self) -> dict[str, float | None]: ...


@dataclass(frozen=True)
class MeasuredDesign:
    """What every sweep's cell holds: its number of metrics and base scenarios per metric (the
    rest of its design follows in each sweep's own fields) and, per interval type, its
    coverage among the benchmarks where the interval was reported (None: never) and the share
    of benchmarks where it was (given by name, after the design)."""

    metrics: int
    base_per_metric: int
    coverage: dict[str, float | None] = field(kw_only=True)
    reported: dict[str, float] = field(kw_only=True)


@dataclass(frozen=True)
class Sweep:
    """What a sweep is run with: simulated benchmarks per design, the seed every design's
    stream is spawned from, the intervals' level, the numbers of metrics and of base scenarios
    per metric its own axes are crossed with, and the worker processes."""

    benchmarks: int
    seed: int
    confidence_level: float = 0.95
    metrics: tuple[int, ...] = METRICS
    base_per_metric: tuple[int, ...] = BASE_PER_METRIC
    jobs: int = 1


def probabilities(means: np.ndarray, icc: np.ndarray | float, u: np.ndarray) -> np.ndarray:
    """Each base scenario's pass probability: the `u` quantile of a Beta with mean `means` and
    intra-scenario correlation `icc` (concentration (1 − icc) / icc; icc 0 gives every
    scenario its mean)."""
    icc = np.broadcast_to(np.asarray(icc, dtype=float), np.broadcast(means, u).shape)
    means = np.broadcast_to(np.asarray(means, dtype=float), icc.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        concentration = np.where(icc > 0, (1 - icc) / np.where(icc > 0, icc, 1.0), 1.0)
        drawn = beta.ppf(u, means * concentration, (1 - means) * concentration)
    return np.where(icc > 0, drawn, means)


def columns(x: np.ndarray) -> np.ndarray:
    """(benchmarks, metrics, k) → (clusters, benchmarks), clusters metric-major."""
    return x.reshape(x.shape[0], -1).T.astype(float)


def covered(estimates, truth) -> tuple[np.ndarray, np.ndarray]:
    """Per estimate (RateEstimate or Difference, one per benchmark): whether an interval was
    reported, and whether it covered `truth` (one value, or one per estimate)."""
    truth = np.broadcast_to(np.asarray(truth, dtype=float), (len(estimates),))
    reported = np.array([e.ci_low is not None for e in estimates])
    hits = np.array(
        [e.ci_low is not None and e.ci_low <= t <= e.ci_high for e, t in zip(estimates, truth)]
    )
    return reported, hits


def measured_metrics(n_metrics: int) -> list[int]:
    """The metrics whose own intervals are measured: all of 4; of more, the lowest and highest
    means and two between (the per-metric statistics do not depend on the other metrics)."""
    if n_metrics <= 4:
        return list(range(n_metrics))
    return sorted({0, n_metrics // 3, 2 * n_metrics // 3, n_metrics - 1})


def metric_ends(
    name: str, per_metric: list[tuple[np.ndarray, np.ndarray]]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """"`name` (min)" and "`name` (max)", as every sweep names them: of the measured metrics'
    (reported, covered) per benchmark, those with the lowest and the highest coverage among
    the benchmarks given an interval (the first metric for both where none was)."""
    shares = [cov[rep].mean() if rep.any() else np.nan for rep, cov in per_metric]
    lowest = highest = 0
    if np.isfinite(shares).any():
        lowest, highest = int(np.nanargmin(shares)), int(np.nanargmax(shares))
    return {f"{name} (min)": per_metric[lowest], f"{name} (max)": per_metric[highest]}


def coverage_shares(
    results: dict[str, tuple[np.ndarray, np.ndarray]],
) -> tuple[dict[str, float | None], dict[str, float]]:
    """Per interval type, from (reported, covered) per benchmark: the share covering among
    the benchmarks given an interval (None where none was), and the share given one."""
    coverage = {name: float(cov[rep].mean()) if rep.any() else None
                for name, (rep, cov) in results.items()}
    return coverage, {name: float(rep.mean()) for name, (rep, _) in results.items()}


# Modules whose content never enters a measured cell: the rules decide only what is withheld,
# which every sweep lowers (`interval_rules.rules_lowered`), so a rule moved after a sweep can
# be written into its pages from the same cells.
NOT_MEASURED = ("interval_rules.py",)


def code_version() -> str:
    """A digest of every module of `pressurebench.stats` (this folder's included) but
    `NOT_MEASURED`: a cached cell is reused only by the code that measured it."""
    digest = hashlib.sha256()
    root = resources.files("pressurebench.stats")
    for path in sorted(Path(str(root)).rglob("*.py")):
        if path.name in NOT_MEASURED and path.parent == Path(str(root)):
            continue
        digest.update(path.relative_to(Path(str(root))).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def seeded_runs(
    work: Callable[[tuple], T],
    designs: Sequence[tuple],
    *,
    seed: int,
    jobs: int,
    keep: Callable[[tuple], bool] | None = None,
    cache: Path | None = None,
) -> list[T]:
    """`work((*design, stream))` for each design kept (all by default), each design with its
    own stream spawned from `seed` over all `designs` (so a design draws the same benchmarks
    whichever others run), one after another or in `jobs` worker processes (`work` must then
    be picklable): how every coverage sweep runs its designs.

    With `cache`, each design's result is stored there as it finishes, under a name made of
    the work, the seed, the design and `code_version()`, and a later run with the same code
    reads it instead of measuring it again: an interrupted sweep resumes where it stopped, and
    parts of one can run in separate processes that share the folder."""
    streams = np.random.SeedSequence(seed).spawn(len(designs))
    tasks = [(*design, stream) for design, stream in zip(designs, streams)
             if keep is None or keep(design)]
    files: list[Path | None] = [None] * len(tasks)
    found: dict[int, T] = {}
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
        version = code_version()
        for i, task in enumerate(tasks):
            key = f"{work.__module__}.{work.__qualname__}|{seed}|{task[:-1]!r}|{version}"
            file = cache / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.pickle"
            files[i] = file
            if file.is_file():
                found[i] = pickle.loads(file.read_bytes())
    todo = [i for i in range(len(tasks)) if i not in found]

    def store(i: int, result: T) -> None:
        found[i] = result
        file = files[i]
        if file is not None:
            partial = file.with_suffix(".partial")
            partial.write_bytes(pickle.dumps(result))
            partial.replace(file)

    if jobs <= 1:
        for i in todo:
            store(i, work(tasks[i]))
    else:
        with ProcessPoolExecutor(jobs) as pool:
            running = {pool.submit(work, tasks[i]): i for i in todo}
            for done in as_completed(running):
                store(running[done], done.result())
    return [found[i] for i in range(len(tasks))]


def lowered(simulate: Callable[..., T], task: tuple) -> T:
    """`simulate(*design, benchmarks=, confidence_level=, rng=)` for a task `(*design,
    benchmarks, confidence_level, stream)` of `seeded_runs`, the rules' withholding lowered
    (`rules_lowered`) so that the designs below each rule are measured too: how a sweep's
    picklable task runs one cell."""
    *design, benchmarks, confidence_level, stream = task
    with rules_lowered():
        return simulate(*design, benchmarks=benchmarks, confidence_level=confidence_level,
                        rng=np.random.default_rng(stream))


def add_sweep_options(parser: argparse.ArgumentParser, defaults: Sweep) -> None:
    """A sweep's command-line options for every field of `Sweep` (`defaults` its own; two
    worker processes unless told otherwise), read back by `asked_sweep`."""
    parser.add_argument("--benchmarks", type=int, default=defaults.benchmarks)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--metrics", type=int, nargs="+", default=list(defaults.metrics))
    parser.add_argument("--base-per-metric", type=int, nargs="+",
                        default=list(defaults.base_per_metric))
    parser.add_argument("--confidence-level", type=float, default=defaults.confidence_level)
    parser.add_argument("--seed", type=int, default=defaults.seed)


def asked_sweep(args: argparse.Namespace) -> Sweep:
    """The `Sweep` that the options `add_sweep_options` added ask for."""
    return Sweep(benchmarks=args.benchmarks, seed=args.seed,
                 confidence_level=args.confidence_level, metrics=tuple(args.metrics),
                 base_per_metric=tuple(args.base_per_metric), jobs=args.jobs)


def sweep_designs(simulate: Callable[..., T], run: Sweep, *axes: Sequence) -> list[T]:
    """`simulate(metrics, base_per_metric, *design, benchmarks=, confidence_level=, rng=)` for
    every design of `run`'s metrics × base scenarios per metric × `axes`, in that order, each
    from its own seeded stream and measured below the rules (`lowered`): how a sweep runs its
    designs (`simulate` a module's function, so that workers can run it)."""
    designs = [(*design, run.benchmarks, run.confidence_level)
               for design in itertools.product(run.metrics, run.base_per_metric, *axes)]
    return seeded_runs(partial(lowered, simulate), designs, seed=run.seed, jobs=run.jobs)


def in_band(value: float | None, tolerance: float = 0.0) -> bool:
    """Within [LOW, HIGH], or within `tolerance` of it (Monte-Carlo error)."""
    return value is not None and LOW - tolerance <= value <= HIGH + tolerance


def covers(value: float | None, tolerance: float = 0.0) -> bool:
    """Not short of the band by more than `tolerance`: an interval covering more than HIGH is
    wider than it needs to be (flagged in the tables), one covering less than LOW claims a
    certainty it lacks."""
    return value is not None and value >= LOW - tolerance


def monte_carlo_error(benchmarks: int, confidence_level: float) -> float:
    return float(np.sqrt(confidence_level * (1 - confidence_level) / benchmarks))


def holds_from(
    cells: Sequence[Measured], statistics: Sequence[str], holds: Callable[[float | None], bool]
) -> dict[str, int | None]:
    """Per interval type, the fewest base scenarios per metric from which `holds` is true of
    every cell at that design and at every larger one; None when it fails at the largest."""
    sizes = sorted({c.base_per_metric for c in cells})
    out: dict[str, int | None] = {}
    for name in statistics:
        passing = [all(holds(c.coverage[name]) for c in cells if c.base_per_metric == k)
                   for k in sizes]
        out[name] = next((k for i, k in enumerate(sizes) if all(passing[i:])), None)
    return out


def measured_rules(
    cells: Sequence[Measured], benchmarks: int, statistics: Sequence[str]
) -> dict[str, int | None]:
    """Per interval type, the fewest base scenarios per metric from which no cell (any number
    of metrics, samples, ICC, rate or world) at that design or any larger one covers less than
    LOW by more than two Monte-Carlo standard errors (a cell at 0.95 falls that far in about
    one of 40 cells by chance); None when even the largest design does. A cell that counts
    its own studies (a `benchmarks` attribute above 0) is read with its own error."""
    sizes = sorted({c.base_per_metric for c in cells})
    out: dict[str, int | None] = {}
    for name in statistics:
        passing = [all(covers(c.coverage[name], 2 * monte_carlo_error(
                       getattr(c, "benchmarks", 0) or benchmarks, 0.95))
                       for c in cells if c.base_per_metric == k) for k in sizes]
        out[name] = next((k for i, k in enumerate(sizes) if all(passing[i:])), None)
    return out


def band_rules(
    cells: Sequence[Measured], benchmarks: int, statistics: Sequence[str]
) -> dict[str, int | None]:
    """Per interval type, the fewest base scenarios per metric from which every cell at that
    design and every larger one covers within [LOW, HIGH] up to two Monte-Carlo standard
    errors on either side: where the interval is neither short nor wider than it needs to
    be; None when some cell of the largest design leaves the band."""
    tolerance = 2 * monte_carlo_error(benchmarks, 0.95)
    return holds_from(cells, statistics, lambda value: in_band(value, tolerance))
