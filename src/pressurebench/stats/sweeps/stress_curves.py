"""The stress grid's capitulation curves and fidelity sensitivity difference.

The capitulation sweep (`sweeps.capitulation`) gives every metric's base scenarios one
distribution of the hazard of giving in, both targets the same scenarios' hazards, every
scenario the same number of conversations. Here (`CURVE_WORLDS`) one metric's hazard clusters
far more than the others' (ICC 0.44 against 0.02), or the ICCs spread over the metrics; the
second target's hazards are drawn on their own; base scenarios are lost and their number of
conversations varies; half the conversations end early. The fidelity sensitivity difference
(`sweeps.sensitivity`) is measured with metrics whose pass probability and propensity to break
cluster differently (`SENSITIVITY_WORLDS`).

Every band and difference is the package's own (`stats.capitulation`, `stats.differences`),
the rules' withholding lowered; the truths are closed-form: a pooled Kaplan–Meier curve over
metrics of equal expected size estimates the mean of the metrics' curves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..capitulation import curve_differences, estimate_curves, kaplan_meier
from . import sensitivity
from .capitulation import TURNS, points_covered
from .common import coverage_shares, measured_metrics, metric_ends, probabilities

HAZARD_MEAN = 0.2


@dataclass(frozen=True)
class CurveWorld:
    """Per metric the ICC of a base scenario's hazard (mean `HAZARD_MEAN`): `icc`, the first
    metric's `icc_apart`, or `icc_spread` over the metrics; `independent`: the second target's
    hazards drawn on their own; `lost`: the share of base scenarios lost; `unequal`: each base
    scenario's conversations from one to twice the design's less one; `early_end`: the share of
    conversations the user ends early."""

    what: str
    icc: float = 1 / 6
    icc_apart: float | None = None
    icc_spread: tuple[float, float] | None = None
    independent: bool = False
    lost: float = 0.0
    unequal: bool = False
    early_end: float = 0.3

    def beta(self, metrics: int) -> tuple[np.ndarray, np.ndarray]:
        """Per metric, the Beta parameters of a base scenario's hazard."""
        if self.icc_spread is not None:
            icc = np.linspace(*self.icc_spread, metrics)
        else:
            icc = np.full(metrics, self.icc)
            if self.icc_apart is not None:
                icc[0] = self.icc_apart
        size = 1 / icc - 1
        return HAZARD_MEAN * size, (1 - HAZARD_MEAN) * size


APART: dict[str, Any] = {"icc": 0.02, "icc_apart": 0.44}
CURVE_WORLDS: dict[str, CurveWorld] = {
    "hazard of one metric apart": CurveWorld("one metric's hazard ICC 0.44, the others' 0.02",
                                             **APART),
    "hazard ICCs spread": CurveWorld("hazard ICCs spread from 0.02 to 0.6 over the metrics",
                                     icc_spread=(0.02, 0.6)),
    "independent targets": CurveWorld("the second target's hazards drawn on their own",
                                      independent=True),
    "lost and unequal": CurveWorld("20% of base scenarios lost, 1 to 2n − 1 conversations per "
                                   "scenario, half ended early", lost=0.2, unequal=True,
                                   early_end=0.5),
    "every stress": CurveWorld("one metric apart, independent targets, lost scenarios, "
                               "unequal conversations, half ended early", **APART,
                               independent=True, lost=0.2, unequal=True, early_end=0.5),
}
SENSITIVITY_WORLDS: dict[str, dict] = {
    "one metric apart": {"what": "one metric's ICC of passing and of breaking 0.8, the others' "
                                 "0.05", "iccs": lambda m: np.r_[0.8, np.full(m - 1, 0.05)]},
    "ICCs spread": {"what": "ICCs of passing and of breaking spread from 0.05 to 0.95",
                    "iccs": lambda m: np.linspace(0.05, 0.95, m)},
}
CURVE_STATISTICS = ("band", "metric band", "curve difference")
SENSITIVITY_STATISTICS = sensitivity.STATISTICS
# Which rule (`stats.interval_rules`) and which side governs each statistic.
GOVERNED_BY = {
    "band": ("capitulation band", "pooled"),
    "metric band": ("capitulation band", "single"),
    "curve difference": ("curve difference", "pooled"),
    **{name: ("sensitivity difference", side) for name, side in sensitivity.GOVERNED_BY.items()},
}


def true_curves(world: CurveWorld, metrics: int) -> tuple[np.ndarray, np.ndarray]:
    """Per metric and turn, S(t) of the first target and of the second (hazard 1 − (1 − h)²,
    so S(2t)): E[(1 − h)^t] = Π_{i<t} (b + i) / (a + b + i) for a Beta(a, b) hazard."""
    a, b = world.beta(metrics)
    steps = np.arange(2 * TURNS)
    curve = np.cumprod((b[:, None] + steps) / (a[:, None] + b[:, None] + steps), axis=1)
    return curve[:, :TURNS], curve[:, 1::2]


def curve_tables(
    world: CurveWorld, rng: np.random.Generator, *, benchmarks: int, metrics: int, k: int,
    per_base: int,
) -> tuple[np.ndarray, np.ndarray]:
    """(clusters, 2 × benchmarks, turns) at-risk and gave-in tables, clusters metric-major:
    groups [0, B) the first target, [B, 2B) the second."""
    a, b = world.beta(metrics)
    n = metrics * k
    a, b = np.repeat(a, k)[:, None], np.repeat(b, k)[:, None]
    h = np.maximum(rng.beta(a, b, size=(n, benchmarks)), 1e-12)
    h_other = np.maximum(rng.beta(a, b, size=(n, benchmarks)), 1e-12) if world.independent else h
    hazard = np.concatenate([h, 1 - (1 - h_other) ** 2], axis=1)[:, :, None]
    width = 2 * per_base - 1 if world.unequal else per_base
    shape = (n, 2 * benchmarks, width)
    onset = rng.geometric(np.broadcast_to(hazard, shape))
    horizon = np.where(rng.random(shape) < world.early_end,
                       rng.integers(2, TURNS, size=shape), TURNS)
    gave = onset <= horizon
    time_seen = np.where(gave, onset, horizon)
    # Conversations each scenario has: all `width` of them, or 1 to `width` when unequal; none
    # for a lost scenario (both targets lose it: it was never generated).
    count = rng.integers(1, width + 1, size=(n, benchmarks)) if world.unequal else width
    count = np.where(rng.random((n, benchmarks)) < world.lost, 0, count)
    count = np.concatenate([count, count], axis=1) if np.ndim(count) else count
    kept = np.arange(width)[None, None, :] < np.broadcast_to(count, shape[:2])[..., None]
    steps = np.arange(1, TURNS + 1)
    at_risk = ((time_seen[..., None] >= steps) & kept[..., None]).sum(axis=2).astype(float)
    gave_in = ((time_seen[..., None] == steps) & gave[..., None] & kept[..., None]).sum(
        axis=2).astype(float)
    return at_risk, gave_in


def curve_coverage(
    world_name: str, metrics: int, k: int, per_base: int, *, benchmarks: int,
    confidence_level: float, rng: np.random.Generator, batch: int = 250,
) -> dict[str, tuple[float | None, float | None, float]]:
    """Per curve statistic: its lowest and highest coverage over turns, and the share of
    (benchmark, turn) points reported (call within `rules_lowered`)."""
    world = CURVE_WORLDS[world_name]
    s_t, s_u = true_curves(world, metrics)
    truths = {"curve difference": s_t.mean(axis=0) - s_u.mean(axis=0), "band": s_t.mean(axis=0)}
    measured = measured_metrics(metrics)
    strata = np.repeat(np.arange(metrics), k)
    reported = {n: np.zeros(TURNS) for n in ("band", "curve difference")}
    hits = {n: np.zeros(TURNS) for n in ("band", "curve difference")}
    metric_reported = {m: np.zeros(TURNS) for m in measured}
    metric_hits = {m: np.zeros(TURNS) for m in measured}
    done = 0
    while done < benchmarks:
        size = min(batch, benchmarks - done)
        at_risk, gave_in = curve_tables(world, rng, benchmarks=size, metrics=metrics, k=k,
                                        per_base=per_base)
        own = [(at_risk[:, :size] * (strata == m)[:, None, None],
                gave_in[:, :size] * (strata == m)[:, None, None]) for m in measured]
        at_risk = np.concatenate([at_risk] + [x for x, _ in own], axis=1)
        gave_in = np.concatenate([gave_in] + [y for _, y in own], axis=1)
        # The bands do not use the replicates (only the median turn's interval does).
        replicates = kaplan_meier(at_risk.sum(axis=0), gave_in.sum(axis=0))[None]
        curves = estimate_curves(at_risk, gave_in, replicates, strata, confidence_level)
        pairs = [("t", "u", j, size + j) for j in range(size)]
        differences = curve_differences(at_risk, gave_in, strata, curves, pairs,
                                        confidence_level)
        for points in (c.points for c in curves[:size]):
            rep, cov = points_covered(points, truths["band"])
            reported["band"] += rep
            hits["band"] += cov
        for diff_points in (d.points for d in differences):
            rep, cov = points_covered(diff_points, truths["curve difference"])
            reported["curve difference"] += rep
            hits["curve difference"] += cov
        for i, m in enumerate(measured):
            for c in curves[(2 + i) * size:(3 + i) * size]:
                rep, cov = points_covered(c.points, s_t[m])
                metric_reported[m] += rep
                metric_hits[m] += cov
        done += size

    def summary(rep, cov) -> tuple[float | None, float | None, float]:
        with np.errstate(invalid="ignore", divide="ignore"):
            per_turn = np.where(rep > 0, cov / rep, np.nan)
        shown = per_turn[np.isfinite(per_turn)]
        low, high = (float(shown.min()), float(shown.max())) if shown.size else (None, None)
        return low, high, float(rep.sum() / (benchmarks * TURNS))

    out = {name: summary(reported[name], hits[name]) for name in reported}
    per_metric = [summary(metric_reported[m], metric_hits[m]) for m in measured]
    lows = [p[0] for p in per_metric if p[0] is not None]
    out["metric band"] = (min(lows) if lows else None,
                          max((p[1] for p in per_metric if p[1] is not None), default=None),
                          min(p[2] for p in per_metric))
    return out


def sensitivity_coverage(
    world_name: str, metrics: int, k: int, samples: int, *, benchmarks: int,
    confidence_level: float, rng: np.random.Generator,
) -> dict[str, tuple[float | None, float | None, float]]:
    """Per sensitivity statistic: its coverage (lowest = highest: one value per cell) and the
    share reported (call within `rules_lowered`)."""
    iccs = SENSITIVITY_WORLDS[world_name]["iccs"](metrics)[None, :, None]
    means = sensitivity.RATE + np.linspace(-sensitivity.SPREAD, sensitivity.SPREAD, metrics)
    shape = (benchmarks, metrics, k)
    p = probabilities(means[None, :, None], iccs, rng.uniform(size=shape))
    q = probabilities(np.full((1, metrics, 1), sensitivity.BREAK), iccs, rng.uniform(size=shape))
    passed = rng.random((*shape, samples)) < p[..., None]
    broke = rng.random((*shape, samples)) < q[..., None] * np.where(passed, sensitivity.RATIO,
                                                                     1.0)
    s_all = passed.sum(axis=-1).reshape(benchmarks, -1).T.astype(float)
    t_all = np.full(s_all.shape, float(samples))
    s_kept = (passed & ~broke).sum(axis=-1).reshape(benchmarks, -1).T.astype(float)
    t_kept = (~broke).sum(axis=-1).reshape(benchmarks, -1).T.astype(float)
    codes = np.repeat(np.arange(metrics), k)
    level = confidence_level
    results = {"sensitivity": sensitivity.difference_coverage(
        s_kept, t_kept, s_all, t_all, codes, sensitivity.true_difference(means), level)}
    per_metric = []
    for m in measured_metrics(metrics):
        mask = (codes == m)[:, None]
        per_metric.append(sensitivity.difference_coverage(
            s_kept * mask, t_kept * mask, s_all * mask, t_all * mask, codes,
            sensitivity.true_difference(means[[m]]), level))
    results.update(metric_ends("metric sensitivity", per_metric))
    coverage, shares = coverage_shares(results)
    return {name: (coverage[name], coverage[name], shares[name]) for name in coverage}

