"""Agreement between samples and between judges, on score rows, against the references."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from score_rows import frame, row
from statsmodels.stats import inter_rater

from pressurebench.stats import methods
from pressurebench.stats.agreement import ONE_CATEGORY, judge_agreement, sample_agreement
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.sweeps.synthetic import synthetic_scores


def boot(scores: pd.DataFrame, resamples: int = 400) -> ClusterBootstrap:
    return ClusterBootstrap.from_scores(scores, resamples=resamples, seed=3)


def sampled_scores(seed: int) -> pd.DataFrame:
    scores = synthetic_scores(
        target_rates={"a": 0.6, "b": 0.4},
        metrics=3,
        base_per_metric=8,
        axes={"tone": ["x", "y"]},
        samples=3,
        error_rate=0.15,
        seed=seed,
    )
    # a sample index beyond the usual three on a few variants: items of four ratings
    extra = scores[scores["sample"] == 0].head(7).assign(sample=3)
    return pd.concat([scores, extra], ignore_index=True)


@pytest.mark.parametrize("seed", [1, 2])
def test_sample_agreement_matches_the_references(seed):
    scores = sampled_scores(seed)
    result = sample_agreement(scores, boot(scores))

    ok = scores[scores["status"] == "ok"]
    ratings = ok.pivot_table(
        index="sample", columns=["target", "scenario_id"], values="passed", aggfunc="first"
    ).astype(float)
    rated = ratings.notna().sum() >= 2
    ratings = ratings.loc[:, rated]
    assert result.n_items == ratings.shape[1]
    expected_alpha = krippendorff.alpha(
        reliability_data=ratings.to_numpy(), level_of_measurement="nominal"
    )
    assert result.krippendorff_alpha.value == pytest.approx(expected_alpha, abs=1e-9)

    counts = ratings.notna().sum()
    modal = counts.value_counts().idxmax()
    full = ratings.loc[:, counts == modal]
    yes = full.sum().to_numpy()
    table = np.column_stack([modal - yes, yes])
    assert result.fleiss_kappa.value == pytest.approx(inter_rater.fleiss_kappa(table), abs=1e-9)
    assert result.fleiss_kappa.n_items == full.shape[1]

    agree = ((ratings == 1) | ratings.isna()).all() | ((ratings == 0) | ratings.isna()).all()
    assert result.all_agree.value == pytest.approx(agree.mean())
    assert result.num_samples == 4
    # the share is a proportion, with a rate's interval; the coefficients are bootstrapped
    assert result.all_agree.ci_method == methods.CLUSTER_T_WILSON
    for est in (result.fleiss_kappa, result.krippendorff_alpha):
        assert est.ci_method == methods.CLUSTER_BOOTSTRAP
    for est in (result.all_agree, result.fleiss_kappa, result.krippendorff_alpha):
        assert est.ci_low < est.value < est.ci_high
    assert result.krippendorff_alpha.n_clusters == result.all_agree.n_clusters == 24
    assert (
        result.fleiss_kappa.n_clusters
        == full.T.index.get_level_values("scenario_id").str[:8].nunique()
    )


def test_one_sample_per_scenario_gives_null_agreement_with_a_reason():
    scores = synthetic_scores(target_rates={"a": 0.6}, samples=1, seed=1)
    result = sample_agreement(scores, boot(scores))
    assert result.n_items == 0 and result.reason == "one sample per scenario"
    for est in (result.all_agree, result.fleiss_kappa, result.krippendorff_alpha):
        assert est.value is None and est.ci_low is None and est.reason == "one sample per scenario"


def test_samples_that_always_pass_agree_fully_but_have_no_kappa():
    scores = frame([row("m01", b, 1, s, True) for b in range(1, 22) for s in (0, 1)])
    result = sample_agreement(scores, boot(scores))
    assert result.all_agree.value == 1.0 and result.all_agree.ci_method == methods.WILSON_CLUSTERS
    assert result.fleiss_kappa.value is None and result.fleiss_kappa.reason == ONE_CATEGORY
    assert result.krippendorff_alpha.value is None


def panel_scores(judges: int, seed: int = 4) -> pd.DataFrame:
    scores = synthetic_scores(
        target_rates={"a": 0.6, "b": 0.5},
        metrics=3,
        base_per_metric=8,
        samples=2,
        judges=judges,
        judge_noise=0.15,
        error_rate=0.05,
        seed=seed,
    )
    rng = np.random.default_rng(seed)
    for j in range(1, judges + 1):  # each judge also misses a few verdicts on ok rows
        missed = rng.uniform(size=len(scores)) < 0.05
        scores.loc[missed, f"judge:judge-{j}"] = None
    return scores


def test_two_judges_get_cohens_kappa_over_the_rows_both_answered():
    scores = panel_scores(2)
    result = judge_agreement(scores, boot(scores))
    both = scores[["judge:judge-1", "judge:judge-2"]].dropna().astype(bool)
    table = pd.crosstab(both["judge:judge-1"], both["judge:judge-2"]).to_numpy()
    assert result.kappa_method == "cohen" and result.judges == ["judge-1", "judge-2"]
    assert result.kappa.n_items == len(both)
    assert result.kappa.value == pytest.approx(inter_rater.cohens_kappa(table).kappa, abs=1e-9)
    assert result.kappa.ci_low < result.kappa.value < result.kappa.ci_high
    ratings = scores[["judge:judge-1", "judge:judge-2"]].T.astype(float).to_numpy()
    expected = krippendorff.alpha(reliability_data=ratings, level_of_measurement="nominal")
    assert result.krippendorff_alpha.value == pytest.approx(expected, abs=1e-9)


def test_three_judges_get_fleiss_kappa_over_the_rows_all_answered():
    scores = panel_scores(3)
    columns = ["judge:judge-1", "judge:judge-2", "judge:judge-3"]
    result = judge_agreement(scores, boot(scores))
    complete = scores[columns].dropna().astype(float)
    yes = complete.sum(axis=1).to_numpy()
    table = np.column_stack([3 - yes, yes])
    assert result.kappa_method == "fleiss" and result.kappa.n_items == len(complete)
    assert result.kappa.value == pytest.approx(inter_rater.fleiss_kappa(table), abs=1e-9)
    ratings = scores[columns].T.astype(float).to_numpy()
    expected = krippendorff.alpha(reliability_data=ratings, level_of_measurement="nominal")
    assert result.krippendorff_alpha.value == pytest.approx(expected, abs=1e-9)
    assert result.krippendorff_alpha.n_items == int(
        (scores[columns].notna().sum(axis=1) >= 2).sum()
    )


def test_without_a_panel_judge_agreement_is_null_with_a_reason():
    scores = synthetic_scores(target_rates={"a": 0.6}, judges=1, seed=1)
    result = judge_agreement(scores, boot(scores))
    assert result.kappa_method is None and result.judges == ["judge-1"]
    assert result.kappa.value is None and result.reason.startswith("no evaluator panel")
    assert judge_agreement(scores.drop(columns=["judge:judge-1"]), boot(scores)).judges == []


def test_a_single_base_scenario_has_a_value_but_no_interval():
    scores = frame(
        [row("m01", 1, v, s, passed=(v + s) % 3 != 0) for v in range(1, 6) for s in range(3)]
    )
    result = sample_agreement(scores, boot(scores))
    alpha = result.krippendorff_alpha
    assert alpha.value is not None and alpha.ci_low is None and alpha.n_clusters == 1
    assert alpha.reason.startswith("one base scenario")
