"""Synthetic score rows with a known true pass rate and realistic clustering.

Used to check that intervals cover the truth as often as they claim and to
measure how the statistics scale. Each base scenario draws its own pass
probability from a Beta distribution around its metric's mean, so rows of one
scenario are correlated the way real ones are (a hard scenario is hard for all
its variants and samples). Scenario difficulty is shared by the targets, as it
is when every target plays the same scenarios.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import cast

import numpy as np
import pandas as pd
from scipy.stats import beta


def synthetic_scores(
    *,
    target_rates: Mapping[str, float],
    metrics: int = 6,
    base_per_metric: int = 12,
    axes: Mapping[str, Sequence[str]] | None = None,
    samples: int = 3,
    concentration: float = 2.0,
    metric_spread: float = 0.15,
    demographic_effects: Mapping[str, Mapping[str, float]] | None = None,
    error_rate: float = 0.0,
    judges: int = 0,
    judge_noise: float = 0.1,
    seed: int | np.random.Generator = 0,
) -> pd.DataFrame:
    """Score rows for every target × base scenario × demographic variant × sample.

    The true pass rate of a target is `target_rates[target]`: metric means are
    spread symmetrically around it (±`metric_spread`) and each base scenario's
    pass probability is Beta with that mean and `concentration` (smaller is a
    stronger within-scenario correlation: the intra-cluster correlation of
    the verdicts is 1 / (1 + concentration)). `demographic_effects[axis][value]`
    is added to the pass probability of rows with that value, which makes the
    true rate no longer the one given. Errors occur at random with
    `error_rate`. With `judges` > 0 a panel's `present` verdicts are added,
    each flipped with probability `judge_noise`.
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    axes = dict(axes or {})
    effects = demographic_effects or {}
    names = list(target_rates)
    offsets = np.linspace(-metric_spread, metric_spread, metrics) if metrics > 1 else np.zeros(1)
    means = np.array([target_rates[t] for t in names])[:, None] + offsets[None, :]
    if (means <= 0).any() or (means >= 1).any():
        raise ValueError("target rate ± metric_spread must lie strictly between 0 and 1")

    n_clusters = metrics * base_per_metric
    variants = list(itertools.product(*axes.values()))
    difficulty = rng.uniform(size=n_clusters)
    metric_of_cluster = np.repeat(np.arange(metrics), base_per_metric)
    mu = means[:, metric_of_cluster]
    # Array arguments, so `beta.ppf` returns an array (its stub also allows a float).
    cluster_rate = cast(
        np.ndarray, beta.ppf(difficulty[None, :], mu * concentration, (1 - mu) * concentration)
    )

    t_idx, k_idx, v_idx, s_idx = (
        a.ravel() for a in np.indices((len(names), n_clusters, len(variants), samples))
    )
    p = cluster_rate[t_idx, k_idx]
    for a, axis in enumerate(axes):
        shift = np.array([effects.get(axis, {}).get(v[a], 0.0) for v in variants])
        p = p + shift[v_idx]
    passed = rng.uniform(size=p.size) < np.clip(p, 0.0, 1.0)
    ok = rng.uniform(size=p.size) >= error_rate

    metric_ids = np.array([f"m{m + 1:02d}" for m in range(metrics)], dtype=object)
    base_ids = np.array(
        [f"m{m + 1:02d}_s{b + 1:03d}" for m in range(metrics) for b in range(base_per_metric)],
        dtype=object,
    )
    metric_types = np.array(
        ["positive" if m % 2 == 0 else "negative" for m in range(metrics)], dtype=object
    )
    scenario_ids = np.array(
        [f"{base}_v{v + 1:02d}" for base in base_ids for v in range(len(variants))], dtype=object
    )
    columns = {
        "target": np.array(names, dtype=object)[t_idx],
        "metric_id": metric_ids[metric_of_cluster[k_idx]],
        "metric_type": metric_types[metric_of_cluster[k_idx]],
        "base_id": base_ids[k_idx],
        "scenario_id": scenario_ids[k_idx * len(variants) + v_idx],
        "sample": s_idx,
    }
    for a, axis in enumerate(axes):
        values = np.array([v[a] for v in variants], dtype=object)
        columns[f"demo:{axis}"] = values[v_idx]
    columns["status"] = np.where(ok, "ok", "error").astype(object)
    # Given x and y, `np.where` returns an array (its stub, which rejects None for y, may not).
    columns["passed"] = cast(np.ndarray, np.where(ok, passed, None)).astype(object)
    if judges:
        positive = metric_types[metric_of_cluster[k_idx]] == "positive"
        present = passed == positive
        for j in range(judges):
            flipped = present ^ (rng.uniform(size=p.size) < judge_noise)
            judged = cast(np.ndarray, np.where(ok, flipped, None))
            columns[f"judge:judge-{j + 1}"] = judged.astype(object)
    return pd.DataFrame(columns)
