"""Judge–human agreement and judge-corrected pass rates, against hand computations and references."""

from __future__ import annotations

import json
import math

import krippendorff
import numpy as np
import pandas as pd
import pytest
from score_rows import frame, row
from statsmodels.stats import inter_rater

from pressurebench.stats import methods
from pressurebench.stats.judge_validity import (
    NO_HUMAN_PRESENT,
    NO_LABELS,
    NO_OVERLAP,
    PANEL,
    error_terms,
    judge_validity,
    label_items,
)
from pressurebench.stats.sweeps.judge import PANEL_DESIGN, TRUE_RATES, coverage, simulate


def label_rows(item: str, votes: list[str], *, metric="m01", target="t", base=1) -> list[dict]:
    """The rows of one labelled item, one per rater in order."""
    return [
        {
            "item_id": item,
            "conv_id": item,
            "metric_id": metric,
            "target": target,
            "base_id": f"{metric}_s{base:03d}",
            "scenario_metric_id": metric,
            "metric_type": {"m01": "positive", "m02": "negative"}[metric],
            "rater": f"r{r}",
            "label": vote,
            "stratum_weight": 1.0,
        }
        for r, vote in enumerate(votes, 1)
        if vote is not None
    ]


def simulated(seed: int = 1, **design) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    return simulate(np.random.default_rng(seed), labelled_per_group=design.pop("n", 20), **design)


def test_the_human_majority_leaves_ties_and_all_unsure_items_without_a_reference():
    labels = pd.DataFrame(
        label_rows("i1", ["present", "present", "absent"])
        + label_rows("i2", ["present", "absent"])
        + label_rows("i3", ["unsure", "unsure"])
        + label_rows("i4", ["present", "unsure"])
        + label_rows("i5", ["absent", "unsure", "absent"])
        + label_rows("i6", ["present", "absent", "unsure"])
    )
    items = label_items(labels)
    reference = items["reference"].to_dict()
    assert reference["i1"] == 1.0 and reference["i4"] == 1.0 and reference["i5"] == 0.0
    assert np.isnan(reference["i2"]) and np.isnan(reference["i3"]) and np.isnan(reference["i6"])

    scores = frame(
        [row("m01", 1, v, s, True, conv_id=f"i{2 * v + s - 1}") for v in (1, 2) for s in (0, 1)]
    )
    verdicts = pd.DataFrame({"item_id": items.index, "judge": PANEL, "present": True})
    human = judge_validity(scores, labels, verdicts, resamples=50).human
    assert (human.n_items, human.n_with_reference, human.n_tied, human.n_all_unsure) == (6, 3, 2, 1)
    assert human.n_raters == 3


def test_labels_are_checked():
    good = label_rows("i1", ["present", "absent"])
    with pytest.raises(ValueError, match="must be one of"):
        label_items(pd.DataFrame(good + label_rows("i2", ["maybe"])))
    with pytest.raises(ValueError, match="twice"):
        label_items(pd.DataFrame(good + good[:1]))
    with pytest.raises(ValueError, match="lack column"):
        label_items(pd.DataFrame(good).drop(columns=["rater"]))


def test_human_alpha_matches_the_krippendorff_package_with_unsure_as_missing():
    scores, labels, verdicts = simulated(2)
    rng = np.random.default_rng(0)
    labels = labels.assign(
        label=np.where(rng.uniform(size=len(labels)) < 0.1, "unsure", labels["label"])
    )
    third = labels[labels["rater"] == "r1"].sample(frac=0.3, random_state=1).assign(rater="r3")
    labels = pd.concat([labels, third], ignore_index=True)
    result = judge_validity(scores, labels, verdicts, resamples=200, seed=4)
    votes = labels.assign(
        value=labels["label"].map({"present": 1.0, "absent": 0.0, "unsure": np.nan})
    ).pivot(index="rater", columns="item_id", values="value")
    expected = krippendorff.alpha(reliability_data=votes.to_numpy(), level_of_measurement="nominal")
    alpha = result.human.krippendorff_alpha
    assert alpha.value == pytest.approx(expected, abs=1e-9)
    assert alpha.n_items == int((votes.notna().sum() >= 2).sum())
    assert (
        alpha.ci_method == methods.CLUSTER_BOOTSTRAP and alpha.ci_low < alpha.value < alpha.ci_high
    )
    assert result.human.n_raters == 3


def test_one_rater_gives_no_human_alpha():
    scores, labels, verdicts = simulated(3)
    result = judge_validity(scores, labels[labels["rater"] == "r1"], verdicts, resamples=50)
    assert result.human.krippendorff_alpha.value is None
    assert result.human.krippendorff_alpha.reason == NO_OVERLAP
    assert result.human.n_with_reference == result.human.n_items  # one vote is a majority


def with_second_judge(verdicts: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    flipped = verdicts["present"].to_numpy() ^ (rng.uniform(size=len(verdicts)) < 0.2)
    member = verdicts.assign(judge="judge-1", present=flipped.astype(object))
    member.loc[rng.uniform(size=len(member)) < 0.1, "present"] = None  # verdicts it did not give
    return pd.concat([verdicts, member], ignore_index=True)


@pytest.mark.parametrize("seed", [1, 2])
def test_judge_agreement_matches_statsmodels_krippendorff_and_hand_counts(seed):
    scores, labels, verdicts = simulated(seed)
    verdicts = with_second_judge(verdicts, seed)
    result = judge_validity(scores, labels, verdicts, resamples=200, seed=seed)
    assert list(result.judges) == [PANEL, "judge-1"]

    items = label_items(labels)
    for judge, agreement in result.judges.items():
        said = verdicts[verdicts["judge"] == judge].set_index("item_id")["present"]
        both = items.join(said).dropna(subset=["reference", "present"])
        judged, human = both["present"].astype(bool), both["reference"] == 1
        assert agreement.n_items == len(both)
        table = pd.crosstab(judged, human).to_numpy()
        assert agreement.cohen_kappa.value == pytest.approx(
            inter_rater.cohens_kappa(table).kappa, abs=1e-9
        )
        ratings = np.vstack([judged.to_numpy(float), human.to_numpy(float)])
        assert agreement.krippendorff_alpha.value == pytest.approx(
            krippendorff.alpha(reliability_data=ratings, level_of_measurement="nominal"), abs=1e-9
        )
        assert agreement.accuracy.value == pytest.approx((judged == human).mean())
        assert agreement.sensitivity.value == pytest.approx(judged[human].mean())
        assert agreement.sensitivity.n_items == human.sum()
        assert agreement.specificity.value == pytest.approx((~judged[~human]).mean())
        for metric, rates in agreement.by_metric.items():
            mine = (both["metric_id"] == metric).to_numpy()
            assert rates.sensitivity.value == pytest.approx(judged[mine & human].mean())
            assert rates.specificity.value == pytest.approx((~judged[mine & ~human]).mean())
        for estimate in (agreement.accuracy, agreement.cohen_kappa, agreement.krippendorff_alpha):
            assert estimate.ci_method == methods.CLUSTER_BOOTSTRAP
            assert estimate.ci_low < estimate.value < estimate.ci_high


def test_panel_error_rates_by_hand():
    # one positive and one negative metric; Se, Sp from (tp, positives, tn, negatives)
    confusion = np.array([[8.0, 9.0], [10.0, 10.0], [18.0, 7.0], [20.0, 10.0]])
    terms = error_terms(confusion)
    assert terms["sensitivity"].tolist() == [0.8, 0.9]
    assert terms["specificity"].tolist() == [0.9, 0.7]
    assert terms["youden"] == pytest.approx([0.7, 0.6])


def hand_ppi(rows: pd.DataFrame, items: pd.DataFrame, lam: float) -> float:
    """λ · the judge's rate over `rows` + Σ w (y − λ f) / Σ w over their labelled items,
    the weight of a target × metric cell's tied items spread over its answered ones."""
    answered = items["reference"].notna()
    w = items["stratum_weight"].astype(float)
    cell = [items["target"], items["metric_id"]]
    items = items.assign(
        w=w * w.groupby(cell).transform("sum") / w.where(answered, 0.0).groupby(cell).transform(
            "sum"
        )
    )[answered]
    joined = items.merge(
        rows[["conv_id", "metric_id", "passed"]], on=["conv_id", "metric_id"], how="inner"
    )
    positive = joined["metric_type"] == "positive"
    y = np.where(positive, joined["reference"], 1 - joined["reference"])
    f = joined["passed"].astype(bool).to_numpy()
    w = joined["w"].to_numpy()
    judge = rows["passed"].astype(bool).mean()
    return lam * judge + (w * (y - lam * f)).sum() / w.sum()


def test_corrected_rates_follow_the_ppi_formula_on_score_rows():
    scores, labels, verdicts = simulated(4)
    result = judge_validity(scores, labels, verdicts, resamples=200, seed=1)
    items = label_items(labels).reset_index()
    items = items.join(verdicts.set_index("item_id")["present"], on="item_id")
    for metric, errors in result.panel_error_rates.items():
        mine = items[(items["metric_id"] == metric) & items["reference"].notna()]
        human = mine["reference"] == 1
        assert errors.sensitivity == pytest.approx(mine["present"][human].astype(bool).mean())
        assert errors.specificity == pytest.approx((~mine["present"][~human].astype(bool)).mean())
        assert (errors.n_positive, errors.n_negative) == (human.sum(), (~human).sum())
        assert errors.sensitivity_source == errors.specificity_source == "metric"
    corrected = result.corrected
    assert corrected.method.startswith("prediction-powered inference")
    for target, correction in corrected.by_target.items():
        mine = scores[scores["target"] == target]
        for metric, rate in correction.by_metric.items():
            rows = mine[mine["metric_id"] == metric]
            assert 0 <= rate.power_tuning <= 1
            assert rate.corrected_rate == pytest.approx(hand_ppi(rows, items, rate.power_tuning))
            assert rate.raw.rate == pytest.approx(rows["passed"].astype(bool).mean())
            assert rate.n_judged == len(rows)
            assert rate.n_labelled == int(
                ((items["target"] == target) & (items["metric_id"] == metric)
                 & items["reference"].notna()).sum()
            )
        overall = correction.overall
        assert overall.corrected_rate == pytest.approx(
            hand_ppi(mine, items, overall.power_tuning)
        )
        assert overall.n_labelled == sum(r.n_labelled for r in correction.by_metric.values())
        assert overall.ci_method == methods.PPI_CLUSTER_T_WILSON and overall.reason is None
        assert overall.ci_low < overall.corrected_rate < overall.ci_high
        for axis, values in correction.by_demographic.items():
            for value, rate in values.items():
                rows = mine[mine["demo:" + axis] == value]
                assert rate.corrected_rate == pytest.approx(
                    hand_ppi(rows, items, rate.power_tuning)
                )
            (gap,) = correction.gaps[axis]
            assert gap.corrected_difference == pytest.approx(
                values[gap.a].corrected_rate - values[gap.b].corrected_rate
            )
            assert gap.ci_low < gap.corrected_difference < gap.ci_high
    (difference,) = corrected.differences
    assert (difference.a, difference.b) == ("a", "b")
    by_target = corrected.by_target
    assert difference.corrected_difference == pytest.approx(
        by_target["a"].overall.corrected_rate - by_target["b"].overall.corrected_rate
    )
    assert difference.ci_method == methods.PPI_CLUSTER_T


def test_a_metric_without_human_present_items_borrows_the_pooled_sensitivity():
    scores, labels, verdicts = simulated(5)
    items = label_items(labels)
    present_m01 = items.index[(items["metric_id"] == "m01") & (items["reference"] == 1)]
    kept = labels[~labels["item_id"].isin(present_m01)]
    result = judge_validity(scores, kept, verdicts, resamples=200, seed=1)
    errors, pooled = result.panel_error_rates["m01"], result.pooled_error_rates
    assert errors.sensitivity_source == "pooled" and errors.specificity_source == "metric"
    assert errors.sensitivity == pytest.approx(pooled.sensitivity)
    assert errors.n_positive == pooled.n_positive


def test_a_judge_near_chance_still_gets_a_corrected_interval_leaning_on_the_labels():
    """Where the Rogan–Gladen correction divided by sensitivity + specificity − 1 ≈ 0 and gave
    no interval, prediction-powered inference turns λ down towards the labelled rows alone."""
    scores, labels, verdicts = simulated(6, sensitivity=0.55, specificity=0.5)
    result = judge_validity(scores, labels, verdicts, resamples=200, seed=1)
    for correction in result.corrected.by_target.values():
        overall = correction.overall
        assert overall.raw.ci_low is not None
        assert overall.ci_low is not None and overall.reason is None
        assert overall.power_tuning < 0.3


def test_the_corrected_rates_use_the_score_rows_verdicts_without_panel_verdicts():
    scores, labels, verdicts = simulated(8)
    member_only = verdicts.assign(judge="judge-1")
    result = judge_validity(scores, labels, member_only, resamples=100, seed=1)
    assert list(result.judges) == ["judge-1"] and result.judges["judge-1"].n_items > 0
    errors = result.panel_error_rates["m01"]
    assert errors.sensitivity is None and errors.sensitivity_source is None
    assert errors.n_positive == 0 and errors.reason == NO_HUMAN_PRESENT
    overall = result.corrected.by_target["a"].overall
    assert overall.corrected_rate is not None and overall.ci_low is not None


def test_every_conversation_labelled_gives_the_human_rate_and_an_interval_covering_it():
    """The check of a judge of sensitivity 0.8 and specificity 0.9 on 20 metrics × 3 base
    scenarios × 2 variants, every judged conversation labelled by two raters who are always
    right: the corrected rate is the true rate of the conversations, with an interval (40
    degrees of freedom), where the Rogan–Gladen correction withheld it."""
    scores, labels, verdicts = simulate(
        np.random.default_rng(30), metrics=20, base_per_metric=3, samples=1,
        labelled_per_group=10**6, rater_accuracy=1.0,
    )
    result = judge_validity(scores, labels, verdicts, resamples=200, seed=1)
    truth = scores.assign(
        present=labels.drop_duplicates("item_id").set_index("conv_id")["label"]
        .reindex(scores["conv_id"]).eq("present").to_numpy()
    )
    for target, correction in result.corrected.by_target.items():
        rows = truth[truth["target"] == target]
        true_rate = (rows["present"] == (rows["metric_type"] == "positive")).mean()
        overall = correction.overall
        assert overall.n_labelled == overall.n_judged == len(rows) == 120
        assert overall.corrected_rate == pytest.approx(true_rate, abs=1e-12)
        assert overall.raw.rate != pytest.approx(true_rate)
        assert overall.reason is None
        assert overall.ci_low < true_rate < overall.ci_high


def test_no_labels_gives_a_no_labels_result():
    scores, labels, verdicts = simulated(1)
    result = judge_validity(scores, labels.iloc[:0], verdicts.iloc[:0])
    assert result.status == "no labels" and result.reason == NO_LABELS
    assert result.human is None and result.judges == {} and result.corrected is None


def test_the_result_is_json_with_none_for_missing_and_the_same_for_a_seed():
    scores, labels, verdicts = simulated(7)
    labels = labels[labels["metric_id"] != "m02"]  # m02 then has no labelled items at all
    first = judge_validity(scores, labels, verdicts, resamples=150, seed=9).model_dump_json()
    again = judge_validity(scores, labels, verdicts, resamples=150, seed=9).model_dump_json()
    other = judge_validity(scores, labels, verdicts, resamples=150, seed=10).model_dump_json()
    assert first == again and first != other
    assert "NaN" not in first
    parsed = json.loads(first)
    m02 = parsed["panel_error_rates"]["m02"]
    assert m02["sensitivity_source"] == m02["specificity_source"] == "pooled"
    m02 = parsed["corrected"]["by_target"]["a"]["by_metric"]["m02"]
    assert m02["n_labelled"] == 0 and m02["corrected_rate"] is None and m02["ci_low"] is None
    assert m02["reason"] == "no labelled rows with a human answer"


@pytest.mark.slow
def test_corrected_rates_cover_the_true_rate_where_raw_rates_do_not():
    """Seeded simulation (`pressurebench.stats.sweeps.judge`): 2 targets with true pass rates 0.85
    and 0.3, 4 metrics × 6 base scenarios × 2 variants × 2 samples with Beta scenario effects,
    a judge of sensitivity 0.8 and specificity 0.9, 30 labelled items per target spread over
    its metrics by raters who are always right. The grid (docs/judge_coverage.md) runs 500
    benchmarks per cell; the test runs 300 (Monte-Carlo standard error 0.013)."""
    result = coverage(300, base_per_metric=6, labelled_per_target=30, rater_accuracy=1.0)
    for key in ("a", "b", "a − b"):
        assert result.withheld[key] == 0.0, result
        assert 0.92 <= result.covered[key]["corrected"] <= 0.98, result
        assert result.width[key]["corrected"] < result.width[key]["labelled only"], result
    assert result.covered["a"]["raw"] < 0.5 and result.covered["a − b"]["raw"] < 0.5, result


def test_over_sampled_panel_splits_are_weighed_back_in_the_corrected_rates():
    """Half of each cell's labels come from the 15% of rows a panel split on: each labelled row
    weighs its stratum's rows per label, so the corrected rate is the hand formula with those
    weights, not the unweighted one."""
    scores, labels, verdicts = simulated(12, **{**PANEL_DESIGN, "n": 40})
    result = judge_validity(scores, labels, verdicts, resamples=100, seed=1)
    items = label_items(labels).reset_index()
    assert items["stratum_weight"].nunique() > 2
    for target, correction in result.corrected.by_target.items():
        rows = scores[scores["target"] == target]
        lam = correction.overall.power_tuning
        assert correction.overall.corrected_rate == pytest.approx(hand_ppi(rows, items, lam))
        unweighted = hand_ppi(rows, items.assign(stratum_weight=1.0), lam)
        assert abs(correction.overall.corrected_rate - unweighted) > 1e-3


@pytest.mark.slow
def test_corrected_rates_cover_the_truth_with_over_sampled_panel_splits():
    """A panel splits on 15% of rows and is right on half of them; each target × metric cell
    (192 rows) has 40 labelled items, half drawn from its splits, weighed back to their
    strata. 150 benchmarks (Monte-Carlo standard error 0.018)."""
    weighted = coverage(150, labelled_per_group=40, rater_accuracy=1.0, **PANEL_DESIGN)
    for target in TRUE_RATES:
        assert 0.91 <= weighted.covered[target]["corrected"] <= 0.99, weighted


def test_six_labels_from_two_raters_give_no_corrected_rate_but_the_reason_and_labels_needed():
    """6 labelled items per target over 4 metrics from two raters who sometimes tie: no
    metric has the two labelled rows with a human answer a correction needs everywhere, so no
    target gets a corrected rate (never a 0.0% without an interval), each says which labels
    would give one, and no negative zero reaches results.json."""
    rng = np.random.default_rng(36)
    scores, labels, verdicts = simulate(rng, labelled_per_target=6, rater_accuracy=0.9)
    result = judge_validity(scores, labels, verdicts, resamples=50, seed=1)
    for correction in result.corrected.by_target.values():
        overall = correction.overall
        assert overall.raw.rate is not None and overall.raw.ci_low is not None
        assert overall.corrected_rate is None and overall.power_tuning is None
        assert overall.ci_low is None and overall.ci_method == methods.NONE
        assert overall.reason.startswith("too few labels to correct it")
        assert "more" in overall.reason and "m0" in overall.reason
    for difference in result.corrected.differences:
        assert difference.corrected_difference is None
        assert difference.reason.startswith(f"{difference.a}: too few labels to correct it")
    assert not negative_zeros(json.loads(result.model_dump_json()))


def negative_zeros(value, where: str = "") -> list[str]:
    """Where a parsed JSON value holds −0.0."""
    if isinstance(value, dict):
        return [w for k, v in value.items() for w in negative_zeros(v, f"{where}.{k}")]
    if isinstance(value, list):
        return [w for i, v in enumerate(value) for w in negative_zeros(v, f"{where}[{i}]")]
    return [where] if isinstance(value, float) and value == 0 and math.copysign(1, value) < 0 else []


def test_small_label_budgets_withhold_the_corrected_value_in_the_coverage_grid():
    """The grid's small-budget case (docs/judge_coverage.md): at 6 labels per target the
    corrected value is always withheld; at 16, with ties, mostly given."""
    small = coverage(20, base_per_metric=6, labelled_per_target=6, rater_accuracy=0.9)
    assert all(share == 1.0 for share in small.withheld.values()), small
    enough = coverage(20, base_per_metric=6, labelled_per_target=16, rater_accuracy=0.9)
    assert all(share < 0.5 for share in enough.withheld.values()), enough
