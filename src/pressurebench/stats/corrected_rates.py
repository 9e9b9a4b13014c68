"""Judge-corrected pass rates for every rate the results report, by prediction-powered inference.

The pass rates of the results report are the judge's: its verdicts on every
judged row. Where humans labelled a sample of those rows, each rate also gets
a corrected value (`stats.ppi`): the judge's rate plus the human-minus-judge
residual on the labelled rows of the same group, power-tuned (PPI++), with a
cluster-t interval over base scenarios within metrics. Corrected are a
target's rate overall, on positive and negative metrics, per metric and per
demographic value; the paired difference of every two targets (they play the
same scenarios); and every demographic gap of a target (values of one axis
are variants of the same base scenarios).

A labelled row's human pass is its human majority's "present" on a positive
metric and "absent" on a negative one; items whose raters tie, or who were
all unsure, have no human answer and are left out, their cell's other items
weighed up to make up for them (missing at random within the cell). Each
labelled row weighs its `stratum_weight`, the rows of its stratum per row
labelled in it, so a group spanning several target × metric cells counts
each cell by its rows, whatever number of items were drawn from it.

An interval is withheld below its own measured rule (too few base scenarios:
`interval_rules.CORRECTED_RATE`, `CORRECTED_DIFFERENCE`), or on a metric with
one, never because the judge is weak: a weak judge gets a small λ and the
interval the labelled rows alone would give. Where the labels
cannot carry a correction (none in the group, fewer than two with a human
answer in one of its metrics, or all on one base scenario per metric, where
λ is undefined) the corrected value itself is withheld, with the reason and
the labels that would give one (`stats.ppi.untrusted`).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd
from pydantic import Field

from ..schemas import Row
from . import methods
from .bootstrap import ClusterBootstrap
from .estimates import RateEstimate
from .frame import DEMOGRAPHIC_PREFIX, cluster_ids, demographic_axes, passes, valid_mask
from .grouping import factorize
from .ppi import PPIRates, ppi_differences, ppi_rates, ppi_tables
from .rates import grouped_rates, no_data

METHOD = "prediction-powered inference, power-tuned (PPI++)"


def _finite(x: float) -> float | None:
    """A number for results.json: None where there is none, and never a negative zero."""
    return float(x) + 0.0 if np.isfinite(x) else None


class CorrectedRate(Row):
    """A pass rate as judged (`raw`, as in the pass-rate tables) and corrected by human labels."""

    raw: RateEstimate
    corrected_rate: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    power_tuning: float | None = Field(
        description="PPI++'s λ in [0, 1]: the weight of the judge's verdicts (0: the labelled "
        "rows alone; 1: plain prediction-powered inference)"
    )
    n_judged: int = Field(ge=0, description="valid judged rows")
    n_labelled: int = Field(ge=0, description="of them, labelled rows with a human answer")
    reason: str | None = Field(
        default=None, description="why the corrected rate or its interval is None"
    )


class CorrectedDifference(Row):
    """A paired difference a − b of two groups' pass rates, as judged and corrected."""

    a: str
    b: str
    raw_difference: float | None
    corrected_difference: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    n_labelled_a: int = Field(ge=0)
    n_labelled_b: int = Field(ge=0)
    reason: str | None = None


class TargetCorrection(Row):
    """Every corrected breakdown of one target, as the pass-rate tables break it down."""

    overall: CorrectedRate
    positive: CorrectedRate
    negative: CorrectedRate
    by_metric: dict[str, CorrectedRate]
    by_demographic: dict[str, dict[str, CorrectedRate]]
    gaps: dict[str, list[CorrectedDifference]] = Field(
        description="per demographic axis, the paired gap of every two of its values"
    )


class CorrectedRates(Row):
    """Corrected rates per target and the corrected paired differences between targets."""

    method: str = METHOD
    by_target: dict[str, TargetCorrection]
    differences: list[CorrectedDifference] = Field(
        description="every two targets, overall, paired by base scenario"
    )


def human_passes(scores: pd.DataFrame, items: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per score row: the human pass (NaN where unlabelled or without a human answer) and
    its design weight.

    `items` is one row per labelled item (`judge_validity.label_items`) with
    `conv_id`, `metric_id`, `metric_type`, `target`, `reference` and
    `stratum_weight`; it is matched to the score row of the same conversation
    and metric.
    """
    if "conv_id" not in scores.columns:
        raise ValueError("score rows lack column conv_id, which labels are matched on")
    keyed = items.assign(
        human=np.where(
            items["metric_type"].to_numpy() == "positive",
            items["reference"].to_numpy(),
            1.0 - items["reference"].to_numpy(),
        ),
        weight=pd.to_numeric(items["stratum_weight"], errors="coerce").astype(float),
    )
    keyed = keyed[keyed["weight"].notna()]
    answered = keyed["human"].notna()
    cells = [keyed["target"], keyed["metric_id"]]
    cell_weight = keyed["weight"].groupby(cells).transform("sum")
    answered_weight = keyed["weight"].where(answered, 0.0).groupby(cells).transform("sum")
    keyed = keyed.assign(weight=keyed["weight"] * cell_weight / answered_weight)[answered]
    index = pd.MultiIndex.from_arrays(
        [keyed["conv_id"].astype(str), keyed["metric_id"].astype(str)]
    )
    if index.duplicated().any():
        raise ValueError("two labelled items share a conversation and metric")
    rows = pd.MultiIndex.from_arrays(
        [scores["conv_id"].astype(str), scores["metric_id"].astype(str)]
    )
    at = index.get_indexer(rows)
    found = at >= 0
    human = np.full(len(scores), np.nan)
    weight = np.zeros(len(scores))
    human[found] = keyed["human"].to_numpy()[at[found]]
    weight[found] = keyed["weight"].to_numpy()[at[found]]
    return human, weight


def _rate(raw: RateEstimate, out: PPIRates, g: int, n_labelled: float) -> CorrectedRate:
    reason = out.reason[g]
    if reason is not None and reason == raw.reason:
        reason = f"no interval, as for the raw rate: {reason}"
    return CorrectedRate(
        raw=raw,
        corrected_rate=_finite(out.estimate[g]),
        ci_low=_finite(out.ci_low[g]),
        ci_high=_finite(out.ci_high[g]),
        ci_method=out.ci_method[g],
        power_tuning=_finite(out.lam[g]),
        n_judged=raw.n,
        n_labelled=int(n_labelled),
        reason=reason,
    )


def _difference(
    a: str, b: str, rate_a: CorrectedRate, rate_b: CorrectedRate, out: PPIRates, i: int,
) -> CorrectedDifference:
    raw_a, raw_b = rate_a.raw, rate_b.raw
    raw = None if raw_a.rate is None or raw_b.rate is None else raw_a.rate - raw_b.rate
    reason = out.reason[i]
    # A side whose rate cannot be corrected withholds the difference: say which side.
    side = next((name for name, rate in ((a, rate_a), (b, rate_b))
                 if rate.corrected_rate is None and rate.reason == reason), None)
    return CorrectedDifference(
        a=a,
        b=b,
        raw_difference=None if raw is None else raw + 0.0,
        corrected_difference=_finite(out.estimate[i]),
        ci_low=_finite(out.ci_low[i]),
        ci_high=_finite(out.ci_high[i]),
        ci_method=out.ci_method[i],
        n_labelled_a=rate_a.n_labelled,
        n_labelled_b=rate_b.n_labelled,
        reason=f"{side}: {reason}" if side is not None and reason is not None else reason,
    )


def corrected_rates(
    scores: pd.DataFrame,
    items: pd.DataFrame,
    bootstrap: ClusterBootstrap,
    confidence_level: float,
) -> CorrectedRates:
    """Every corrected rate, difference and gap (see the module docstring).

    `bootstrap` knows every base scenario within its metric; only its cluster
    and stratum codes are used.
    """
    human, weight = human_passes(scores, items)
    cluster = bootstrap.codes(cluster_ids(scores).astype(str))
    valid, judge = valid_mask(scores), passes(scores)
    strata, names = bootstrap.strata_codes, bootstrap.strata_names
    axes = demographic_axes(scores)
    groupings: list[Sequence[str]] = [
        ["target"], ["target", "metric_type"], ["target", "metric_id"],
        *(["target", DEMOGRAPHIC_PREFIX + axis] for axis in axes),
    ]
    raw_all = grouped_rates(scores, bootstrap, groupings, confidence_level=confidence_level)

    def correct(columns: Sequence[str]):
        group, keys = factorize(scores, columns)
        tables = ppi_tables(
            cluster, group, bootstrap.n_clusters, len(keys), judge, valid, human, weight
        )
        return keys, tables, tables.labelled.sum(axis=0)

    by_target: dict[str, TargetCorrection] = {}
    per_grouping = []
    for columns, raw in zip(groupings, raw_all):
        keys, tables, labelled = correct(columns)
        out = ppi_rates(tables, strata, confidence_level, metric_names=names)
        rates = {key: _rate(raw[key], out, g, labelled[g]) for g, key in enumerate(keys)}
        per_grouping.append((keys, tables, rates))

    overall = {str(key[0]): rate for key, rate in per_grouping[0][2].items()}
    for target, overall_rate in overall.items():
        by = [None] + [_of_target(rates, target) for _, _, rates in per_grouping[1:]]
        types = by[1]
        assert types is not None, "by[1:] are the target's rates per grouping"
        gaps = {}
        for a, axis in enumerate(axes):
            keys, tables, rates = per_grouping[3 + a]
            mine = [g for g, k in enumerate(keys) if str(k[0]) == target]
            pairs = list(combinations(mine, 2))
            compared = (ppi_differences(tables, strata, pairs, confidence_level, metric_names=names)
                        if pairs else None)
            gaps[axis] = [
                _difference(str(keys[i][1]), str(keys[j][1]), rates[keys[i]], rates[keys[j]],
                            compared, p)
                for p, (i, j) in enumerate(pairs) if compared is not None
            ]
        by_target[target] = TargetCorrection(
            overall=overall_rate,
            positive=types.get("positive", _missing()),
            negative=types.get("negative", _missing()),
            by_metric=by[2],
            by_demographic={axis: by[3 + a] for a, axis in enumerate(axes)},
            gaps=gaps,
        )

    keys, tables, rates = per_grouping[0]
    pairs = list(combinations(range(len(keys)), 2))
    compared = (ppi_differences(tables, strata, pairs, confidence_level, metric_names=names)
                if pairs else None)
    differences = [
        _difference(str(keys[i][0]), str(keys[j][0]), rates[keys[i]], rates[keys[j]], compared, p)
        for p, (i, j) in enumerate(pairs) if compared is not None
    ]
    return CorrectedRates(by_target=by_target, differences=differences)


def _of_target(rates: dict[tuple, CorrectedRate], target: str) -> dict[str, CorrectedRate]:
    """The rates of one target's groups of a (target, column) grouping, keyed by the column."""
    return {str(key[1]): rate for key, rate in rates.items() if str(key[0]) == target}


def _missing() -> CorrectedRate:
    """The corrected rate of a breakdown without rows (a target with no negative metric)."""
    return CorrectedRate(
        raw=no_data(),
        corrected_rate=None,
        ci_low=None,
        ci_high=None,
        ci_method=methods.NONE,
        power_tuning=None,
        n_judged=0,
        n_labelled=0,
        reason="no valid judged rows",
    )
