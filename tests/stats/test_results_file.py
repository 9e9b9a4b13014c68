"""results.json: assembled from every statistic, JSON-safe, strict, reproducible."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from score_rows import clusters, frame

from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.rates import rate_estimate
from pressurebench.stats.results import Results, build_results
from pressurebench.stats.sweeps.synthetic import synthetic_scores

SETTINGS = {"resamples": 300, "confidence_level": 0.95, "seed": 7, "benchmark": "demo"}


def full_scores():
    return synthetic_scores(
        target_rates={"a": 0.7, "b": 0.5, "c": 0.6},
        metrics=4,
        base_per_metric=5,
        axes={"age": ["old", "young"], "region": ["n", "s"]},
        samples=3,
        error_rate=0.05,
        judges=2,
        seed=3,
    )


def test_one_target_no_axes_one_sample():
    scores = synthetic_scores(target_rates={"solo": 0.6}, samples=1, seed=2)
    results = build_results(scores, **SETTINGS)
    solo = results.targets["solo"]
    assert solo.by_demographic == {} and solo.demographic_gaps == []
    assert solo.sample_agreement.reason == "one sample per scenario"
    assert solo.sample_agreement.fleiss_kappa.value is None
    assert results.sample_agreement.krippendorff_alpha.value is None
    assert results.judge_agreement.kappa.value is None and results.judge_agreement.reason
    assert results.comparison.pairwise == []
    assert results.comparison.ranking.ranks[0].rank_probabilities == [1.0]
    assert solo.overall.n == 72 and solo.errors.error_rate == 0.0


def test_everything_is_there_and_survives_json():
    scores = full_scores()
    results = build_results(scores, **SETTINGS)
    assert results.schema_version == 1 and results.benchmark == "demo"
    assert results.statistics.resamples == 300 and results.statistics.seed == 7
    assert set(results.targets) == {"a", "b", "c"}
    a = results.targets["a"]
    assert set(a.by_demographic) == {"age", "region"} and len(a.demographic_gaps) == 2
    assert (
        a.sample_agreement.n_items > 0 and a.sample_agreement.krippendorff_alpha.ci_low is not None
    )
    assert results.judge_agreement.kappa_method == "cohen"
    assert len(results.comparison.pairwise) == 3 and len(results.comparison.ranking.ranks) == 3

    text = json.dumps(results.model_dump(mode="json"), allow_nan=False)
    assert Results.model_validate(json.loads(text)) == results


def test_nulls_are_json_null_not_zero():
    rows = clusters({1: [True, False], 2: [True, True]}, "m01") + clusters({1: [None, None]}, "m02")
    payload = build_results(frame(rows), **SETTINGS).model_dump(mode="json")
    m02 = payload["targets"]["t"]["by_metric"]["m02"]
    assert m02 == {
        "rate": None,
        "n": 0,
        "n_error": 2,
        "ci_low": None,
        "ci_high": None,
        "ci_method": "none",
        "n_clusters": 0,
        "reason": None,
    }
    assert payload["targets"]["t"]["negative"]["rate"] is None
    assert payload["targets"]["t"]["errors"] == {
        "n_total": 6,
        "n_ok": 4,
        "n_error": 2,
        "error_rate": 2 / 6,
    }


def test_unknown_fields_are_refused():
    payload = build_results(
        synthetic_scores(target_rates={"a": 0.5}, seed=1), **SETTINGS
    ).model_dump(mode="json")
    with pytest.raises(ValidationError, match="extra"):
        Results.model_validate({**payload, "surprise": 1})
    payload["targets"]["a"]["overall"]["p_value"] = 0.5
    with pytest.raises(ValidationError, match="extra"):
        Results.model_validate(payload)


def test_error_counts_match_the_rows():
    scores = full_scores()
    results = build_results(scores, **SETTINGS)
    for target, tr in results.targets.items():
        mine = scores[scores["target"] == target]
        n_ok = int((mine["status"] == "ok").sum())
        assert (tr.errors.n_total, tr.errors.n_ok, tr.errors.n_error) == (
            len(mine),
            n_ok,
            len(mine) - n_ok,
        )
        assert (tr.overall.n, tr.overall.n_error) == (tr.errors.n_ok, tr.errors.n_error)


def test_same_seed_same_results_and_all_from_one_bootstrap():
    scores = full_scores()
    first = build_results(scores, **SETTINGS)
    assert build_results(scores, **SETTINGS) == first
    assert build_results(scores, **{**SETTINGS, "seed": 8}) != first
    bootstrap = ClusterBootstrap.from_scores(scores, resamples=300, seed=7)
    for target in ("a", "b"):
        alone = rate_estimate(scores[scores["target"] == target], bootstrap)
        shown = first.targets[target].overall
        assert shown.model_copy(update={"ci_low": None, "ci_high": None}) == alone.model_copy(
            update={"ci_low": None, "ci_high": None})
        # the same interval, to the last bits a sum of squares over other columns may move
        assert (shown.ci_low, shown.ci_high) == pytest.approx((alone.ci_low, alone.ci_high),
                                                             rel=1e-12)


def test_no_valid_rows_at_all_gives_nulls_everywhere():
    scores = synthetic_scores(target_rates={"a": 0.5, "b": 0.5}, samples=2, seed=1)
    scores = scores.assign(status="error", passed=None)
    results = build_results(scores, **SETTINGS)
    for tr in results.targets.values():
        assert tr.overall.rate is None and tr.overall.n_error == 72 * 2
        assert tr.errors.error_rate == 1.0
        assert all(est.rate is None for est in tr.by_variant.values())
    assert results.comparison.pairwise[0].difference is None
    assert results.comparison.ranking.reason is not None
    assert results.sample_agreement.reason == "no item has two or more ratings"
    assert build_results(scores.iloc[:0], **SETTINGS).targets == {}
