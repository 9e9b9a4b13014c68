"""How far the judges can be trusted, measured against human labels, and pass rates corrected for them.

Humans label a sample of judged items (an item is one conversation judged
against one metric). Each item's human reference is the majority of its
raters' "present"/"absent" labels; "unsure" is no vote, and an item whose
votes tie (or that has none) has no reference: it is counted, never guessed.

Against that reference every judge of the panel, and the panel verdict the
pipeline uses, gets accuracy, Cohen's kappa, Krippendorff's alpha,
sensitivity and specificity. A labelled item belongs to its conversation's
own base scenario within its own metric, the cluster its score row is
resampled in (`frame.cluster_ids`): labelled items of one base scenario are
no more independent than its score rows, so every interval comes from the
same stratified cluster bootstrap as the pass rates.

A judge that misses some present behaviour and sees some that is absent
biases the pass rate, and no amount of judged rows removes that bias. Every
pass rate the results report is therefore also given corrected by the human
labels, by prediction-powered inference (`stats.corrected_rates`,
`stats.ppi`): unbiased whatever the judge's quality, with an interval
wherever the raw rate has one. The panel's sensitivity and specificity per
metric stay here as a description of the judge's errors, not as a
correction: the Rogan–Gladen correction this module used to make divides by
sensitivity + specificity − 1 estimated per metric from a few items, so at
the labelling budgets studies have it was withheld on exactly the metrics
where the judge erred, and left the biased raw rate as the headline.

The export over-samples the items a judge panel disagreed on, where judges
err most. Every figure above weighs a labelled item by its design weight
(`design_weights`), so it describes the judged rows rather than the sample;
without a panel every weight is 1 and the figures are the plain ones.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from ..schemas import Row
from . import methods
from .agreement import NO_VARIATION, bootstrap_agreement, without_interval
from .bootstrap import ClusterBootstrap, check_confidence_level, percentile_interval
from .coefficients import (
    cohen_from_sums,
    cohen_item_stats,
    krippendorff_from_sums,
    krippendorff_item_stats,
)
from .corrected_rates import CorrectedRate, CorrectedRates, corrected_rates
from .estimates import AgreementEstimate
from .frame import check_scores, cluster_ids, cluster_strata
from .grouping import cluster_table
from .intervals import wilson_interval

LABEL_COLUMNS = (
    "item_id",
    "conv_id",
    "metric_id",
    "target",
    "base_id",
    "scenario_metric_id",
    "metric_type",
    "rater",
    "label",
    "stratum_weight",
)
VERDICT_COLUMNS = ("item_id", "judge", "present")
LABELS = ("present", "absent", "unsure")
PANEL = "panel"
NO_LABELS = "no labels"
NO_FIDELITY_LABELS = "no fidelity answers"
NO_OVERLAP = "no item has present/absent labels from two raters, so there is no inter-rater alpha"
NO_COMPARABLE = "no labelled item has both a human reference and a verdict of this judge"
NO_HUMAN_PRESENT = "no labelled item with a verdict has the human reference 'present'"
NO_HUMAN_ABSENT = "no labelled item with a verdict has the human reference 'absent'"
Source = Literal["metric", "pooled"]


class HumanReference(Row):
    """The human majority per labelled item, and how well the raters agree among themselves."""

    n_items: int = Field(ge=0, description="labelled items")
    n_raters: int = Field(ge=0, description="raters who gave at least one present/absent label")
    n_with_reference: int = Field(ge=0, description="items with a strict human majority")
    n_tied: int = Field(ge=0, description="items whose present and absent votes tie: no reference")
    n_all_unsure: int = Field(ge=0, description="items every rater was unsure of: no reference")
    krippendorff_alpha: AgreementEstimate = Field(
        description="between raters, nominal, unsure as missing; items with two or more votes"
    )


class SensitivitySpecificity(Row):
    """A judge's hit rate on human-present items and its correct-absent rate on human-absent ones."""

    sensitivity: AgreementEstimate
    specificity: AgreementEstimate


class JudgeHumanAgreement(Row):
    """One judge's verdicts against the human reference, over items that have both."""

    n_items: int = Field(ge=0, description="items with a human reference and this judge's verdict")
    accuracy: AgreementEstimate
    cohen_kappa: AgreementEstimate
    krippendorff_alpha: AgreementEstimate
    sensitivity: AgreementEstimate
    specificity: AgreementEstimate
    by_metric: dict[str, SensitivitySpecificity]


class PanelErrorRates(Row):
    """The panel verdict's sensitivity and specificity on one metric: how the judge errs.

    Each comes from the metric's own labelled items, or from all metrics pooled
    where the metric has none of the kind (`*_source`); its n is that of the
    items it comes from.
    """

    sensitivity: float | None
    specificity: float | None
    sensitivity_source: Source | None
    specificity_source: Source | None
    n_positive: int = Field(ge=0, description="human-present items the sensitivity comes from")
    n_negative: int = Field(ge=0, description="human-absent items the specificity comes from")
    youden: float | None = Field(description="sensitivity + specificity − 1 (Youden's J)")
    youden_ci_low: float | None
    youden_ci_high: float | None
    reason: str | None = Field(default=None, description="why a figure is None")


class FidelityKindValidity(Row):
    """One kind of break: the raters' majority, the checks against it, and the corrected shares."""

    human: HumanReference
    checks: JudgeHumanAgreement = Field(
        description="the checks' decision (rules and fidelity judge) against the human majority"
    )
    corrected: dict[str, CorrectedRate] = Field(
        description="per target, the share of conversations with this break, as checked (raw) "
        "and corrected by the labels"
    )


class FidelityValidity(Row):
    """The fidelity checks against human labels, per kind of break; "no labels" before any."""

    status: Literal["ok", "no labels"]
    reason: str | None = None
    design_weighted: bool = Field(
        default=False, description="labelled conversations weighed back to their strata"
    )
    by_kind: dict[str, FidelityKindValidity] = Field(default_factory=dict)


class JudgeValidity(Row):
    """Judge–human agreement and judge-corrected pass rates; `status` "no labels" before any."""

    status: Literal["ok", "no labels"]
    reason: str | None = None
    confidence_level: float
    resamples: int = Field(ge=1)
    design_weighted: bool = Field(
        default=False,
        description="labelled items weighed back to their strata: disagreements of a judge "
        "panel were over-sampled",
    )
    human: HumanReference | None
    judges: dict[str, JudgeHumanAgreement] = Field(
        description='per panel member, and "panel" for the verdict the pipeline uses'
    )
    panel_error_rates: dict[str, PanelErrorRates] = Field(description="per judged metric")
    pooled_error_rates: PanelErrorRates | None
    corrected: CorrectedRates | None = Field(
        description="every reported pass rate corrected by the labels (`stats.corrected_rates`)"
    )
    fidelity: FidelityValidity | None = Field(
        default=None,
        description="the fidelity checks against the raters' fidelity answers "
        "(`stats.fidelity_validity`); None where fidelity was not checked",
    )


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _check_columns(frame: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lack column(s): {', '.join(missing)}")


def label_items(labels: pd.DataFrame) -> pd.DataFrame:
    """One row per labelled item: its keys, present and absent votes, and the human reference.

    `reference` is 1.0 (present) or 0.0 (absent) where one side has more votes,
    NaN where they tie or nobody voted.
    """
    _check_columns(labels, LABEL_COLUMNS, "labels")
    unknown = set(labels["label"]) - set(LABELS)
    if unknown:
        raise ValueError(
            f"labels must be one of {', '.join(LABELS)}, got {min(map(str, unknown))!r}"
        )
    if labels.duplicated(["item_id", "rater"]).any():
        raise ValueError("a rater labelled the same item twice")
    keys = ["conv_id", "metric_id", "target", "base_id", "scenario_metric_id", "metric_type"]
    if (labels.groupby("item_id")[keys].nunique() > 1).any(axis=None):
        raise ValueError("the rows of one item disagree on its conversation, target, metric or base scenario")
    votes = labels.assign(
        yes=(labels["label"] == "present").astype(int), no=(labels["label"] == "absent").astype(int)
    )
    items = votes.groupby("item_id", sort=True).agg(
        **{k: (k, "first") for k in keys},
        stratum_weight=("stratum_weight", "first"),
        yes=("yes", "sum"),
        no=("no", "sum"),
    )
    items["reference"] = np.where(
        items["yes"] > items["no"], 1.0, np.where(items["no"] > items["yes"], 0.0, np.nan)
    )
    items["weight"] = design_weights(items)
    return items


def design_weights(items: pd.DataFrame) -> np.ndarray:
    """Each labelled item's weight: its `stratum_weight` over the mean of its target × metric cell's.

    The export draws a cell's items uniformly within its strata (panel
    agreements and disagreements) but over-samples disagreements, where the
    judges err most: unweighted, the labelled items would make the judge look
    worse than it is on the cell's rows. `stratum_weight` (ok rows of the
    item's stratum per item labelled in it) weighs them back. Normalized within
    the cell, the weights change nothing where a cell's items were drawn in
    proportion (no panel: all 1), and a cell counts as much as it has labelled
    items, as without weights. An item without a verdict has no stratum and
    weighs 1: it enters only the raters' own agreement.
    """
    weight = pd.to_numeric(items["stratum_weight"], errors="coerce").astype(float)
    if (weight <= 0).any():
        raise ValueError("stratum_weight must be positive")
    cell_mean = weight.groupby([items["target"], items["metric_id"]]).transform("mean")
    return (weight / cell_mean).fillna(1.0).to_numpy()


def labelled_bootstrap(
    scores: pd.DataFrame, items: pd.DataFrame, resamples: int, seed: int
) -> ClusterBootstrap:
    """Base scenarios within metrics of the judged rows and the labelled items together."""
    pairs = (
        pd.concat(
            [
                pd.DataFrame({"stratum": cluster_strata(scores), "cluster": cluster_ids(scores)}),
                pd.DataFrame({"stratum": items["scenario_metric_id"], "cluster": items["base_id"]}),
            ]
        )
        .astype(str)
        .drop_duplicates()
        .sort_values(["stratum", "cluster"], kind="stable")
    )
    if not pairs["cluster"].is_unique:
        raise ValueError("a base scenario appears under more than one metric")
    return ClusterBootstrap(
        pairs["stratum"].tolist(), pairs["cluster"].tolist(), resamples=resamples, seed=seed
    )


def _share_from_sums(sums: np.ndarray) -> np.ndarray:
    """Hits over items from summed [hits, 1] rows; NaN for a replicate that drew no item."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return sums[..., 0] / sums[..., 1]


def share(
    bootstrap: ClusterBootstrap,
    item_cluster: np.ndarray,
    hits: np.ndarray,
    weight: np.ndarray,
    confidence_level: float,
    empty_reason: str,
) -> AgreementEstimate:
    """A weighted share of items (accuracy, sensitivity, specificity) with its percentile interval.

    Where every replicate gives the same share (all items right, say), a point
    interval would claim certainty: the interval is then a Wilson interval
    with each base scenario counted once, as for pass rates.
    """
    if len(item_cluster) == 0:
        return without_interval(empty_reason)
    stats = np.column_stack([weight * hits, weight])
    estimate = bootstrap_agreement(
        bootstrap, item_cluster, stats, _share_from_sums, confidence_level
    )
    if estimate.reason != NO_VARIATION:
        return estimate
    assert estimate.value is not None, "a share that does not vary has a value"
    low, high = wilson_interval(
        estimate.value * estimate.n_clusters, estimate.n_clusters, confidence_level
    )
    return estimate.model_copy(
        update={
            "ci_low": float(low),
            "ci_high": float(high),
            "ci_method": methods.WILSON_CLUSTERS,
            "reason": None,
        }
    )


def human_reference(
    labels: pd.DataFrame,
    items: pd.DataFrame,
    item_cluster: np.ndarray,
    bootstrap: ClusterBootstrap,
    confidence_level: float,
) -> HumanReference:
    """Counts of items with and without a reference, and the raters' Krippendorff's alpha.

    `items` is `label_items(labels)` and `item_cluster` the bootstrap's code of each
    item's base scenario. Alpha weighs each item's coincidences by its design weight.
    """
    votes = items[["no", "yes"]].to_numpy(dtype=float)
    weight = items["weight"].to_numpy()
    pairable = votes.sum(axis=1) >= 2
    if pairable.any():
        alpha = bootstrap_agreement(
            bootstrap,
            item_cluster[pairable],
            weight[pairable, None] * krippendorff_item_stats(votes[pairable]),
            krippendorff_from_sums,
            confidence_level,
        )
    else:
        alpha = without_interval(NO_OVERLAP)
    voted = votes.sum(axis=1) > 0
    return HumanReference(
        n_items=len(items),
        n_raters=int(labels.loc[labels["label"] != "unsure", "rater"].nunique()),
        n_with_reference=int(items["reference"].notna().sum()),
        n_tied=int((voted & items["reference"].isna()).sum()),
        n_all_unsure=int((~voted).sum()),
        krippendorff_alpha=alpha,
    )


def judge_human_agreement(
    verdict: pd.Series,
    items: pd.DataFrame,
    item_cluster: np.ndarray,
    bootstrap: ClusterBootstrap,
    confidence_level: float,
) -> JudgeHumanAgreement:
    """One judge's `present` verdicts (1.0/0.0, NaN for none, aligned with `items`) against the
    human reference, over the items that have both, each weighed by its design weight."""
    both = items["reference"].notna().to_numpy() & verdict.notna().to_numpy()
    judged = verdict.to_numpy(dtype=float)[both].astype(int)
    human = items["reference"].to_numpy()[both].astype(int)
    weight = items["weight"].to_numpy()[both]
    cluster = item_cluster[both]
    metric = items["metric_id"].astype(str).to_numpy()[both]
    cl = confidence_level

    def se_sp(keep: np.ndarray) -> SensitivitySpecificity:
        pos, neg = keep & (human == 1), keep & (human == 0)
        return SensitivitySpecificity(
            sensitivity=share(
                bootstrap, cluster[pos], judged[pos] == 1, weight[pos], cl, NO_HUMAN_PRESENT
            ),
            specificity=share(
                bootstrap, cluster[neg], judged[neg] == 0, weight[neg], cl, NO_HUMAN_ABSENT
            ),
        )

    if not both.any():
        none = without_interval(NO_COMPARABLE)
        return JudgeHumanAgreement(
            n_items=0,
            accuracy=none,
            cohen_kappa=none,
            krippendorff_alpha=none,
            sensitivity=none,
            specificity=none,
            by_metric={},
        )
    overall = se_sp(np.ones(len(human), dtype=bool))
    return JudgeHumanAgreement(
        n_items=int(both.sum()),
        accuracy=share(bootstrap, cluster, judged == human, weight, cl, NO_COMPARABLE),
        cohen_kappa=bootstrap_agreement(
            bootstrap,
            cluster,
            weight[:, None] * cohen_item_stats(np.column_stack([judged, human]), 2),
            cohen_from_sums,
            cl,
        ),
        krippendorff_alpha=bootstrap_agreement(
            bootstrap,
            cluster,
            weight[:, None]
            * krippendorff_item_stats(np.column_stack([2 - judged - human, judged + human])),
            krippendorff_from_sums,
            cl,
        ),
        sensitivity=overall.sensitivity,
        specificity=overall.specificity,
        by_metric={str(m): se_sp(metric == m) for m in np.unique(metric)},
    )


def error_terms(confusion: np.ndarray) -> dict[str, np.ndarray]:
    """Panel sensitivity and specificity per metric from summed confusion counts.

    `confusion` is (..., 4, metrics): true positives, human-present items,
    true negatives and human-absent items. A metric without human-present
    (human-absent) items takes the sensitivity (specificity) pooled over
    metrics; `*_own` says where its own was used. Returns (..., metrics) arrays.
    """
    out = {}
    for name, hits, total in (("sensitivity", 0, 1), ("specificity", 2, 3)):
        h, n = confusion[..., hits, :], confusion[..., total, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            pooled = h.sum(axis=-1, keepdims=True) / n.sum(axis=-1, keepdims=True)
            out[name] = np.where(n > 0, h / n, pooled)
        out[name + "_own"] = n > 0
    out["youden"] = out["sensitivity"] + out["specificity"] - 1
    return out


def panel_error_rates(
    confusion: np.ndarray,
    replicate_confusion: np.ndarray,
    items: np.ndarray,
    confidence_level: float,
) -> list[PanelErrorRates]:
    """One PanelErrorRates per metric column of (4, metrics) weighted counts and their
    (R, 4, metrics) replicates; `items` (2, metrics) counts the human-present and human-absent
    items themselves."""
    point = error_terms(confusion)
    low, high, _ = percentile_interval(error_terms(replicate_confusion)["youden"], confidence_level)
    out = []
    for m in range(confusion.shape[-1]):
        se, sp, youden = (float(point[k][m]) for k in ("sensitivity", "specificity", "youden"))
        own_se, own_sp = bool(point["sensitivity_own"][m]), bool(point["specificity_own"][m])
        n_pos = items[0, m] if own_se else items[0].sum()
        n_neg = items[1, m] if own_sp else items[1].sum()
        if not np.isfinite(se):
            reason = NO_HUMAN_PRESENT
        elif not np.isfinite(sp):
            reason = NO_HUMAN_ABSENT
        else:
            reason = None
        out.append(
            PanelErrorRates(
                sensitivity=_finite(se),
                specificity=_finite(sp),
                sensitivity_source=None if n_pos == 0 else ("metric" if own_se else "pooled"),
                specificity_source=None if n_neg == 0 else ("metric" if own_sp else "pooled"),
                n_positive=int(n_pos),
                n_negative=int(n_neg),
                youden=_finite(youden),
                youden_ci_low=_finite(low[m]),
                youden_ci_high=_finite(high[m]),
                reason=reason,
            )
        )
    return out


def judge_validity(
    scores: pd.DataFrame,
    labels: pd.DataFrame,
    verdicts: pd.DataFrame,
    *,
    resamples: int = 2000,
    seed: int = 0,
    confidence_level: float = 0.95,
) -> JudgeValidity:
    """Human reference, judge–human agreement and corrected pass rates (see the module docstring).

    `scores` is the score-row frame (`frame.py`). `labels` has one row per
    (item, rater) in `LABEL_COLUMNS`, its `base_id` and `scenario_metric_id`
    being the conversation's own base scenario and metric (the resampling
    cluster, `cluster_id` of the score rows). `verdicts` has one row per
    (item, judge) in `VERDICT_COLUMNS`; judge "panel" is the verdict the
    pipeline uses. The agreement intervals come from one bootstrap over the
    base scenarios of both; the corrected rates' from the linearized variance
    over the same base scenarios.
    """
    check_confidence_level(confidence_level)
    check_scores(scores)
    _check_columns(verdicts, VERDICT_COLUMNS, "verdicts")
    if labels.empty:
        return JudgeValidity(
            status="no labels",
            reason=NO_LABELS,
            confidence_level=confidence_level,
            resamples=resamples,
            human=None,
            judges={},
            panel_error_rates={},
            pooled_error_rates=None,
            corrected=None,
        )
    if verdicts.duplicated(["item_id", "judge"]).any():
        raise ValueError("a judge has two verdicts on one item")
    items = label_items(labels)
    bootstrap = labelled_bootstrap(scores, items, resamples, seed)
    item_cluster = bootstrap.codes(items["base_id"].astype(str))
    said = (
        verdicts.pivot(index="item_id", columns="judge", values="present")
        .reindex(index=items.index)
        .astype("boolean")
        .astype(float)
    )
    names = sorted(said.columns, key=lambda j: (j != PANEL, str(j)))
    judges = {
        str(j): judge_human_agreement(said[j], items, item_cluster, bootstrap, confidence_level)
        for j in names
    }

    # Labelled items with a reference and a panel verdict: the panel's confusion per base
    # scenario × metric, in the same clusters.
    metrics = sorted(
        set(scores["metric_id"].dropna().astype(str)) | set(items["metric_id"].astype(str))
    )
    k = bootstrap.n_clusters
    panel = said[PANEL].to_numpy() if PANEL in said.columns else np.full(len(items), np.nan)
    human = items["reference"].to_numpy()
    usable = ~np.isnan(human) & ~np.isnan(panel)
    item_metric = np.where(
        usable, pd.Index(metrics).get_indexer(pd.Index(items["metric_id"].astype(str))), -1
    )
    cells = [(human == 1) & (panel == 1), human == 1, (human == 0) & (panel == 0), human == 0]
    weight = items["weight"].to_numpy()
    confusion = np.concatenate(
        [cluster_table(item_cluster, item_metric, k, len(metrics), weight * c) for c in cells],
        axis=1,
    )  # (clusters, 4 × metrics), design-weighted
    counted = np.array(
        [np.bincount(item_metric[usable & c], minlength=len(metrics)) for c in cells[1::2]]
    )  # (2, metrics): human-present and human-absent items
    conf_point = confusion.sum(axis=0).reshape(4, len(metrics))
    conf_reps = bootstrap.replicate_sums(confusion).reshape(-1, 4, len(metrics))
    errors = dict(
        zip(metrics, panel_error_rates(conf_point, conf_reps, counted, confidence_level))
    )
    (pooled,) = panel_error_rates(
        conf_point.sum(axis=-1, keepdims=True),
        conf_reps.sum(axis=-1, keepdims=True),
        counted.sum(axis=-1, keepdims=True),
        confidence_level,
    )
    return JudgeValidity(
        status="ok",
        confidence_level=confidence_level,
        resamples=resamples,
        design_weighted=bool(np.any(np.abs(items["weight"].to_numpy() - 1.0) > 1e-9)),
        human=human_reference(labels, items, item_cluster, bootstrap, confidence_level),
        judges=judges,
        panel_error_rates=errors,
        pooled_error_rates=pooled,
        corrected=corrected_rates(scores, items, bootstrap, confidence_level),
    )
