"""Synthetic score rows for two arms of a validation study, and writing them where the stages would.

`paired_arms` plays the same base scenarios in both arms: each scenario has one
difficulty, shared by the arms and the targets (a hard scenario is hard under
any user model), while every verdict is drawn on its own. That is what a
user-model arm looks like. Unrelated arms (a generator arm) are two
`synthetic_scores` frames with different seeds.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy.stats import beta

from pressurebench.schemas import Score, conv_id


def paired_arms(
    main_rates: Mapping[str, float],
    arm_rates: Mapping[str, float],
    *,
    metrics: int = 4,
    base_per_metric: int = 10,
    variants: int = 2,
    samples: int = 2,
    concentration: float = 2.0,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    n_clusters = metrics * base_per_metric
    difficulty = rng.uniform(size=n_clusters)
    frames = []
    for rates in (main_rates, arm_rates):
        records = []
        for target, rate in rates.items():
            p = beta.ppf(difficulty, rate * concentration, (1 - rate) * concentration)
            for k in range(n_clusters):
                metric = k // base_per_metric
                base = f"m{metric + 1:02d}_s{k % base_per_metric + 1:03d}"
                for v in range(variants):
                    for s in range(samples):
                        records.append(
                            {
                                "target": target,
                                "metric_id": f"m{metric + 1:02d}",
                                "metric_type": "positive" if metric % 2 == 0 else "negative",
                                "base_id": base,
                                "scenario_id": f"{base}_v{v + 1:02d}",
                                "sample": s,
                                "status": "ok",
                                "passed": bool(rng.uniform() < p[k]),
                            }
                        )
        frames.append(pd.DataFrame.from_records(records).astype({"passed": object}))
    return frames[0], frames[1]


def score_rows(frame: pd.DataFrame) -> list[Score]:
    """Score rows (as evaluate writes them) for a frame in the statistics' columns, its
    `demo:<axis>` columns as each row's demographic."""
    axes = [c for c in frame.columns if c.startswith("demo:")]
    rows = []
    for r, demographic in zip(frame.itertuples(index=False),
                              frame[axes].to_dict("records") if axes else [{}] * len(frame)):
        ok = r.status == "ok"
        present = None if not ok else (r.passed if r.metric_type == "positive" else not r.passed)
        rows.append(
            Score(
                conv_id=conv_id(r.scenario_id, r.target, int(r.sample)),
                scenario_id=r.scenario_id,
                base_id=r.base_id,
                metric_id=r.metric_id,
                scenario_metric_id=r.metric_id,
                metric_type=r.metric_type,
                target=r.target,
                sample=int(r.sample),
                present=present,
                passed=bool(r.passed) if ok else None,
                justification="scripted" if ok else None,
                status=r.status,
                error=None if ok else "no judge returned a verdict: scripted",
                demographic={a[len("demo:"):]: str(v) for a, v in demographic.items()},
            )
        )
    return rows
