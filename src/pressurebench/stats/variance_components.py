"""Where a metric's verdicts vary: between base scenarios, between variants, between samples and
between repeated judgements.

A verdict (pass 1, fail 0) of one target on one metric varies for four nested reasons: the
base scenario (some are harder), the demographic rewrite of it (the variant: a rewrite can make
a scenario easier or harder, and a demographic effect shows here too), the sample (the
conversation drawn at a temperature above 0), and, where a judge panel read each conversation,
the judge. Their sizes say what a study should buy more of: more base scenarios help against
the first, more samples only against the third (Miller 2024, "Adding Error Bars to Evals";
`pressurebench size` sizes a study from them).

The components are moment estimators of the nested random-effects model (ANOVA, unbalanced),
on the valid rows of one target and metric, each clipped at 0:

- between samples: the pooled within-variant variance of the verdicts (variants with two or
  more rows);
- between variants: the pooled within-scenario variance of the variants' mean verdicts, less
  what their samples contribute (σ²_samples × the mean of 1 / rows per variant);
- between base scenarios: the variance of the scenarios' means (the mean of their variants'
  means), less what variants and samples contribute to it;
- between judgements: where the rows carry a panel's verdicts (`judge:` columns), the mean
  variance of the judges' verdicts on one conversation.

With one row per variant, samples and variants cannot be told apart: the two are reported
together as `within_scenarios` and each alone is None. The shares divide by the sum of the
scenario, variant and sample components (the judgements' describe a single judge's noise,
which the panel's majority already reduces).
"""

from __future__ import annotations

import pandas as pd
from pydantic import Field

from ..schemas import Row
from .frame import cluster_ids, judge_ids, passes, valid_mask


class VarianceComponents(Row):
    """One target's verdicts on one metric (or all its metrics), by source of variation."""

    rate: float | None = Field(description="pass rate of the valid rows")
    n: int = Field(ge=0, description="valid rows")
    n_scenarios: int = Field(ge=0, description="base scenarios with valid rows")
    between_scenarios: float | None = Field(description="variance between base scenarios")
    between_variants: float | None = Field(
        description="variance between variants of one base scenario (rewrite and demographic "
        "effects); None with one row per variant"
    )
    between_samples: float | None = Field(
        description="variance between samples of one variant; None with one row per variant"
    )
    within_scenarios: float | None = Field(
        description="variance within base scenarios: variants and samples together"
    )
    between_judgements: float | None = Field(
        default=None, description="variance between the panel's judges on one conversation; "
        "None without a panel"
    )
    scenario_share: float | None = Field(
        description="between base scenarios over between scenarios + within them: the ICC"
    )
    variant_share: float | None = Field(
        description="between variants over the same total; None with one row per variant"
    )
    reason: str | None = Field(default=None, description="why some components are None")


def _pooled(variance: pd.Series, df: pd.Series) -> float | None:
    """Σ df · variance / Σ df over the groups with df ≥ 1; None without any."""
    used = df >= 1
    if not used.any():
        return None
    return float((variance[used] * df[used]).sum() / df[used].sum())


def _judgement_variance(rows: pd.DataFrame) -> float | None:
    judges = [f"judge:{j}" for j in judge_ids(rows)]
    if len(judges) < 2:
        return None
    verdicts = rows[judges].apply(pd.to_numeric, errors="coerce")
    varied = verdicts.var(axis=1, ddof=1)
    varied = varied[verdicts.notna().sum(axis=1) >= 2]
    return float(varied.mean()) if len(varied) else None


def components(rows: pd.DataFrame) -> VarianceComponents:
    """The components of one group of score rows (one target, one metric or several: base
    scenarios are nested in their metrics either way)."""
    valid = valid_mask(rows)
    frame = pd.DataFrame({
        "scenario": cluster_ids(rows).astype(str).to_numpy()[valid],
        "variant": rows["scenario_id"].astype(str).to_numpy()[valid],
        "y": passes(rows)[valid],
    })
    judged = _judgement_variance(rows[valid])
    n = len(frame)
    empty = {"between_scenarios": None, "between_variants": None, "between_samples": None,
             "within_scenarios": None, "scenario_share": None, "variant_share": None,
             "between_judgements": judged}
    if n == 0:
        return VarianceComponents(rate=None, n=0, n_scenarios=0, reason="no valid rows", **empty)
    rate = float(frame["y"].mean())
    scenarios = frame["scenario"].nunique()
    if scenarios < 2:
        return VarianceComponents(rate=rate, n=n, n_scenarios=scenarios,
                                  reason="one base scenario: nothing varies between them",
                                  **empty)
    variants = frame.groupby(["scenario", "variant"], sort=False)["y"].agg(["mean", "var",
                                                                             "count"])
    sample = _pooled(variants["var"].fillna(0.0), variants["count"] - 1)
    by_scenario = variants.groupby(level=0, sort=False)
    spread = by_scenario["mean"].var(ddof=1)
    count = by_scenario["mean"].count()
    inverse_rows = by_scenario["count"].apply(lambda c: float((1 / c).mean()))
    within_means = _pooled(spread.fillna(0.0), count - 1)
    variant = None
    if sample is not None and within_means is not None:
        variant = max(within_means - sample * float(inverse_rows[count >= 2].mean()), 0.0)
    # Each scenario's mean of its variants' means, and what its variants and samples add to
    # the spread of those means.
    means = by_scenario["mean"].mean()
    if variant is not None:
        assert sample is not None, "a variant term is measured beside the samples'"
        added = variant / count + sample * inverse_rows / count
        within = variant + sample
    else:
        # One row per variant (or one variant per scenario): variants and samples together,
        # from the rows' spread within each scenario.
        rows_of = frame.groupby("scenario", sort=False)["y"]
        within = _pooled(rows_of.var(ddof=1).fillna(0.0), rows_of.count() - 1) or 0.0
        added = within / rows_of.count().reindex(means.index)
    between = max(float(means.var(ddof=1) - added.mean()), 0.0)
    total = between + within
    reason = None if variant is not None else (
        "one row per variant (or one variant per base scenario): variants and samples cannot "
        "be told apart; within_scenarios holds both")
    return VarianceComponents(
        rate=rate, n=n, n_scenarios=scenarios, between_scenarios=between,
        between_variants=variant, between_samples=sample if variant is not None else None,
        within_scenarios=within, between_judgements=judged,
        scenario_share=between / total if total > 0 else None,
        variant_share=variant / total if variant is not None and total > 0 else None,
        reason=reason,
    )


def variance_components(scores: pd.DataFrame) -> dict[str, dict[str, VarianceComponents]]:
    """Per target, per metric: the components of its verdicts (`components`)."""
    out: dict[str, dict[str, VarianceComponents]] = {}
    for (target, metric), rows in scores.groupby(
        [scores["target"].astype(str), scores["metric_id"].astype(str)], sort=True
    ):
        out.setdefault(str(target), {})[str(metric)] = components(rows)
    return out
