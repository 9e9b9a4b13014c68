"""results.json: every number the aggregate stage reports, and the function that computes them.

Rates and differences get cluster-t intervals (`stats.cluster_t`): the
design-based variance over base scenarios within metrics, withheld with a
reason where the design is too small for one. What has no such variance
(rank shares, rank correlations, agreement coefficients, the median onset)
comes from one set of bootstrap replicates (one seed, base scenarios
resampled within metrics), so those numbers can be compared replicate by
replicate. Missing data is None, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from ..schemas import SCHEMA_VERSION, Row, optional
from .agreement import JudgeAgreement, SampleAgreement, judge_agreement, sample_agreement
from .bootstrap import ClusterBootstrap, check_confidence_level
from .fidelity import FidelityResults
from .frame import check_scores, valid_mask
from .gaps import DemographicGap, demographic_gaps
from .interval_coverage import (
    CURVE_KINDS,
    FIDELITY_KINDS,
    KINDS,
    IntervalCoverage,
    interval_coverages,
)
from .judge_validity import JudgeValidity
from .multiplicity import Family, family
from .pressure import PressureResults, pressure_results
from .ranking import TargetComparison, compare_targets
from .rates import TargetRates, no_data, target_rates
from .received import ReceivedResults
from .variance_components import VarianceComponents, variance_components

RESAMPLING = (
    "rates and differences: cluster-t (linearized variance over base scenarios within metrics, "
    "Student t on base scenarios minus metrics degrees of freedom, Wilson form for rates, "
    "MOVER from the two rates' Wilson intervals for differences between targets and arms; "
    "one metric's rate and paired difference with the design effects and correlation pooled "
    "over its target's metrics; "
    "each statistic withheld below the design its coverage-grid rule needs "
    "(pressurebench.stats.interval_rules) or with a single-scenario metric; capitulation bands "
    "and curve differences on Greenwood's linearization, withheld below their own measured "
    "rules); "
    "rank shares, rank correlations, agreement and the median onset: stratified cluster "
    "bootstrap, base "
    "scenarios drawn with replacement within each metric, n_h - 1 draws per metric weighted "
    "n_h / (n_h - 1), single-scenario metrics collapsed into one stratum; percentile intervals"
)


class ErrorCounts(Row):
    """Rows of a target by outcome. An error is any row without a verdict (failed or undecided)."""

    n_total: int = Field(ge=0)
    n_ok: int = Field(ge=0, description="rows with a verdict: the denominator of the pass rate")
    n_error: int = Field(ge=0)
    error_rate: float | None


class StatisticsSettings(Row):
    resamples: int = Field(ge=1)
    confidence_level: float = Field(gt=0, lt=1)
    seed: int
    resampling: str = RESAMPLING


class TargetResults(TargetRates):
    errors: ErrorCounts
    demographic_gaps: list[DemographicGap]
    sample_agreement: SampleAgreement
    variance_components: dict[str, VarianceComponents] = Field(
        default_factory=dict,
        description="per metric: the variance of its verdicts between base scenarios, "
        "variants, samples and judgements (`stats.variance_components`)",
    )


class LabelsSetAside(BaseModel):
    """Stored human labels of one file left out of the judge-validity analysis, and why."""

    model_config = ConfigDict(extra="forbid")

    file: str
    n: int = Field(ge=1)
    reason: str


class ImportedTarget(Row):
    """What a target's numbers rest on when its conversations were imported, not simulated
    (`pressurebench import`): where they came from, how the intervals cluster them, and what
    could not be measured without a scenario."""

    sources: list[str]
    conversations: int
    clustering: str = Field(description="what the intervals resample")
    demographic_gaps: str = Field(description="why there are none")
    checks_skipped: list[str] = Field(description="fidelity checks that need a scenario")


class JudgeProbeNotes(Row):
    """What the judge probes (`validation.judge_probes`) put on the results report's headline."""

    warn: float = Field(description="validation.judge_probes_warn")
    warnings: list[str] = Field(
        description="probes whose flip rate exceeds every floor's by more than it, "
        "significantly after Holm's correction; a repeat flip rate above it"
    )
    family: list[str] = Field(
        description="judges sharing a model family with a target or the generator"
    )
    multiplicity: str | None = Field(
        default=None, description="the family Holm's correction of the excesses runs over"
    )


class StatisticsFile(BaseModel):
    """What every file of statistics opens with: its schema version, its benchmark and the
    settings its intervals were drawn with."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = SCHEMA_VERSION
    benchmark: str
    statistics: StatisticsSettings


class Results(StatisticsFile):
    targets: dict[str, TargetResults]
    comparison: TargetComparison
    sample_agreement: SampleAgreement = Field(description="pooled over targets")
    judge_agreement: JudgeAgreement
    pressure: PressureResults | None = optional(
        "pressure over turns; None without per-turn verdicts",
    )
    pressure_received: ReceivedResults | None = optional(
        "turns, endings, landmarks and truncation per target",
    )
    fidelity: FidelityResults | None = optional(
        "did the simulated user play its part, did the targets notice the test, and "
        "the pass rates without the conversations that broke; None when not checked",
    )
    judge_validity: JudgeValidity | None = optional(
        "the judge against human labels (`labels/<benchmark>/`), main arm only; "
        "status 'no labels' before any",
    )
    imported: dict[str, ImportedTarget] = Field(
        default_factory=dict,
        description="targets whose conversations were imported: their sources, clustering and "
        "the checks skipped",
    )
    skipped_targets: dict[str, str] = Field(
        default_factory=dict,
        description="targets this benchmark does not run, with why (an imported target imported "
        "for other benchmarks only)",
    )
    intervals: list[IntervalCoverage] = Field(
        default_factory=list,
        description="per kind of interval: its method and the coverage the coverage grid "
        "(docs/interval_coverage.md) and the stress grid (docs/stress_coverage.md) measured at "
        "the largest design not above the study's",
    )
    multiplicity: list[Family] = Field(
        default_factory=list,
        description="the declared families of tests and how each is adjusted "
        "(`stats.multiplicity`)",
    )
    judge_probes: JudgeProbeNotes | None = optional(
        "the judge probes' warnings and family notes; None without the study",
    )
    labels_set_aside: list[LabelsSetAside] = Field(
        default_factory=list,
        description="stored labels that no longer match the data (a transcript changed since, say), "
        "per file and reason: left out of `judge_validity`",
    )


def error_counts(scores: pd.DataFrame) -> dict[str, ErrorCounts]:
    """Per target: total rows, rows with a verdict, rows without one, and the error share."""
    frame = pd.DataFrame({"target": scores["target"].astype(str), "ok": valid_mask(scores)})
    out = {}
    for target, ok in frame.groupby("target", sort=True)["ok"]:
        n_total, n_ok = len(ok), int(ok.sum())
        out[str(target)] = ErrorCounts(
            n_total=n_total,
            n_ok=n_ok,
            n_error=n_total - n_ok,
            error_rate=(n_total - n_ok) / n_total if n_total else None,
        )
    return out


def build_results(
    scores: pd.DataFrame,
    *,
    resamples: int,
    confidence_level: float,
    seed: int,
    benchmark: str,
    metric_ids: Sequence[str] = (),
    onsets: pd.DataFrame | None = None,
    turns: pd.DataFrame | None = None,
    fidelity_checked: bool = False,
) -> Results:
    """Pass rates, breakdowns, demographic gaps, target comparisons and agreement for one benchmark.

    `scores` holds one row per judged conversation of every target (see
    `pressurebench.stats.frame`). Every metric in `metric_ids` appears in each
    target's `by_metric`, with a null rate where it has no rows (for instance
    when its scenarios failed to generate): absent data is shown, not hidden.
    `onsets` and `turns` are the per-turn frames of `stats.pressure`, when the
    scores carry per-turn verdicts. `intervals` lists the capitulation curves' interval types
    with them, and the fidelity sensitivity's when `fidelity_checked` (its numbers are added
    by the caller, `stats.fidelity.fidelity_results`).
    """
    check_scores(scores)
    check_confidence_level(confidence_level)
    scores = scores.assign(target=scores["target"].astype(str))
    bootstrap = ClusterBootstrap.from_scores(scores, resamples=resamples, seed=seed)
    rates = target_rates(scores, bootstrap, confidence_level=confidence_level)
    gaps = demographic_gaps(scores, bootstrap, confidence_level=confidence_level)
    errors = error_counts(scores)
    components = variance_components(scores)
    for per_target in rates.values():
        filled = {**{m: no_data() for m in metric_ids}, **per_target.by_metric}
        per_target.by_metric.clear()
        per_target.by_metric.update(sorted(filled.items()))
    targets = {
        target: TargetResults(
            **dict(rates[target]),
            errors=errors[target],
            demographic_gaps=gaps[target],
            sample_agreement=sample_agreement(
                scores[scores["target"].to_numpy() == target],
                bootstrap,
                confidence_level=confidence_level,
            ),
            variance_components=components.get(target, {}),
        )
        for target in rates
    }
    comparison = compare_targets(scores, bootstrap, confidence_level=confidence_level)
    pressure = (
        pressure_results(
            onsets.assign(target=onsets["target"].astype(str)),
            turns.assign(target=turns["target"].astype(str)),
            bootstrap,
            confidence_level=confidence_level,
        )
        if onsets is not None and turns is not None
        else None
    )
    return Results(
        benchmark=benchmark,
        statistics=StatisticsSettings(
            resamples=resamples, confidence_level=confidence_level, seed=seed
        ),
        targets=targets,
        comparison=comparison,
        intervals=interval_coverages(
            bootstrap.strata_codes,
            KINDS
            + (CURVE_KINDS if onsets is not None and turns is not None else ())
            + (FIDELITY_KINDS if fidelity_checked else ()),
        ),
        multiplicity=families(targets, comparison, pressure),
        sample_agreement=sample_agreement(scores, bootstrap, confidence_level=confidence_level),
        judge_agreement=judge_agreement(scores, bootstrap, confidence_level=confidence_level),
        pressure=pressure,
    )


def families(
    targets: dict[str, TargetResults], comparison: TargetComparison,
    pressure: PressureResults | None,
) -> list[Family]:
    """The declared families of the results' tests (`stats.multiplicity`), each with the sizes
    it has in this study."""

    def tested(values) -> int:
        return sum(v.p_value is not None for v in values)

    per_pair: dict[tuple[str, str], list] = {}
    for d in comparison.by_metric:
        per_pair.setdefault((d.a, d.b), []).append(d)
    gaps: dict[tuple[str, str], list] = {}
    for target, result in targets.items():
        for gap in result.demographic_gaps:
            gaps.setdefault((target, gap.axis), []).append(gap)
    out = [
        family("pass rates", []),
        family("differences between targets", [tested(comparison.pairwise)]
               if comparison.pairwise else []),
        family("differences between targets per metric", [tested(v) for v in per_pair.values()]),
        family("demographic gaps", [tested(v) for v in gaps.values()]),
    ]
    if pressure is not None:
        out += [family("capitulation bands", []),
                family("capitulation curve differences",
                       [tested(d.points) for d in pressure.differences])]
    return out
