"""The resampling itself: against scipy's bootstrap, its variance, its strata and its seed."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from score_rows import frame, row

from pressurebench.stats import bootstrap as bootstrap_module
from pressurebench.stats.bootstrap import (
    ClusterBootstrap,
    expanded_level,
    expanded_percentile_interval,
    percentile_interval,
)
from pressurebench.stats.rates import rate_estimate


def clustered_rows(seed: int, n_clusters: int = 40):
    """Rows of one metric; clusters of 3–12 rows with pass probabilities from a Beta."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 13, size=n_clusters)
    probabilities = rng.beta(2, 1.5, size=n_clusters)
    successes = rng.binomial(sizes, probabilities)
    rows = [
        row("m01", base + 1, variant + 1, passed=bool(variant < successes[base]))
        for base in range(n_clusters)
        for variant in range(sizes[base])
    ]
    return frame(rows), successes, sizes


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_percentile_interval_matches_scipy_bootstrap_over_clusters(seed):
    scores, successes, sizes = clustered_rows(seed)
    boot = ClusterBootstrap.from_scores(scores, resamples=20000, seed=seed, draws="n")
    low, high, degenerate = percentile_interval(
        boot.replicate_ratios(successes.astype(float), sizes.astype(float)), 0.95
    )

    def ratio(s, t, axis=-1):
        return s.sum(axis=axis) / t.sum(axis=axis)

    reference = stats.bootstrap(
        (successes, sizes),
        ratio,
        paired=True,
        vectorized=True,
        n_resamples=20000,
        method="percentile",
        confidence_level=0.95,
        random_state=seed + 100,
    ).confidence_interval
    assert not degenerate[0]
    assert low[0] == pytest.approx(reference.low, abs=0.01)
    assert high[0] == pytest.approx(reference.high, abs=0.01)


def test_rescaled_draws_give_the_unbiased_variance_of_a_stratified_total():
    # Strata of 2, 3 and 5 clusters. With n_h − 1 draws weighted n_h / (n_h − 1)
    # the bootstrap variance of a total is Σ n_h s_h², the unbiased estimate; with
    # n_h draws it is Σ (n_h − 1) s_h², too small by (n_h − 1) / n_h per stratum.
    strata = ["a"] * 2 + ["b"] * 3 + ["c"] * 5
    values = np.array([1.0, 4.0, 2.0, 7.0, 3.0, 0.0, 5.0, 1.0, 9.0, 4.0])
    unbiased = biased = 0.0
    for name in "abc":
        y = values[[s == name for s in strata]]
        unbiased += len(y) * y.var(ddof=1)
        biased += (len(y) - 1) * y.var(ddof=1)
    clusters = [f"c{i}" for i in range(len(values))]
    rescaled = ClusterBootstrap(strata, clusters, resamples=200_000, seed=5).replicate_sums(values)
    textbook = ClusterBootstrap(
        strata, clusters, resamples=200_000, seed=5, draws="n"
    ).replicate_sums(values)
    assert rescaled.mean() == pytest.approx(values.sum(), rel=0.005)
    assert rescaled.var() == pytest.approx(unbiased, rel=0.02)
    assert textbook.var() == pytest.approx(biased, rel=0.02)


def test_each_replicate_keeps_every_metric_at_its_own_size():
    strata = ["m01"] * 4 + ["m02"] * 3 + ["m03"]
    boot = ClusterBootstrap(strata, [f"c{i}" for i in range(8)], resamples=500, seed=1)
    weights = np.vstack(list(boot.weights()))
    assert weights.shape == (500, 8)
    assert np.allclose(weights[:, :4].sum(axis=1), 4)
    # The lone base scenario of m03 joins the smallest other metric (m02) and is redrawn with it.
    assert np.allclose(weights[:, 4:8].sum(axis=1), 4)
    assert weights[:, :8].std(axis=0).min() > 0


def test_same_seed_same_replicates_other_seed_other_replicates():
    scores, successes, sizes = clustered_rows(7)

    def replicates(seed):
        boot = ClusterBootstrap.from_scores(scores, resamples=300, seed=seed)
        return boot.replicate_ratios(successes.astype(float), sizes.astype(float))

    assert np.array_equal(replicates(11), replicates(11))
    assert not np.array_equal(replicates(11), replicates(12))


def test_rate_intervals_do_not_depend_on_the_resampling_seed():
    scores, _, _ = clustered_rows(7)
    first = rate_estimate(scores, ClusterBootstrap.from_scores(scores, resamples=300, seed=11))
    other = rate_estimate(scores, ClusterBootstrap.from_scores(scores, resamples=300, seed=12))
    assert first == other and first.ci_low is not None


def test_kept_and_regenerated_weights_are_the_same(monkeypatch):
    values = np.arange(30.0).reshape(10, 3)
    strata = ["a"] * 6 + ["b"] * 4
    clusters = [f"c{i}" for i in range(10)]
    kept = ClusterBootstrap(strata, clusters, resamples=400, seed=3)
    first = kept.replicate_sums(values)
    assert np.array_equal(first, kept.replicate_sums(values))
    monkeypatch.setattr(bootstrap_module, "CACHE_ENTRIES", 0)
    regenerated = ClusterBootstrap(strata, clusters, resamples=400, seed=3)
    assert np.array_equal(first, regenerated.replicate_sums(values))
    assert np.array_equal(first, regenerated.replicate_sums(values))


def test_unknown_cluster_and_bad_settings_are_errors():
    boot = ClusterBootstrap(["m01", "m01"], ["a", "b"], resamples=10)
    with pytest.raises(ValueError, match="'z' is not one of the resampled clusters"):
        boot.codes(["a", "z"])
    with pytest.raises(ValueError, match="not unique"):
        ClusterBootstrap(["m01", "m01"], ["a", "a"])
    with pytest.raises(ValueError, match="draws"):
        ClusterBootstrap(["m01"], ["a"], draws="all")
    with pytest.raises(ValueError, match="confidence_level"):
        percentile_interval(np.zeros((5, 1)), 1.5)


def test_percentile_interval_flags_columns_that_cannot_vary():
    reps = np.column_stack([np.linspace(0, 1, 101), np.full(101, 0.5), np.full(101, np.nan)])
    reps[:10, 0] = np.nan  # left out, not counted as values
    low, high, degenerate = percentile_interval(reps, 0.9)
    assert low[0] == pytest.approx(np.quantile(np.linspace(0, 1, 101)[10:], 0.05))
    assert high[0] == pytest.approx(np.quantile(np.linspace(0, 1, 101)[10:], 0.95))
    assert degenerate.tolist() == [False, True, True]


def test_single_scenario_metrics_are_collapsed_so_the_bootstrap_still_varies():
    from pressurebench.stats.bootstrap import ClusterBootstrap, collapse_singleton_strata

    strata = np.array(["m01", "m02", "m03", "m04"])
    assert len(set(collapse_singleton_strata(strata))) == 1
    lone = np.array(["m01", "m02", "m02", "m03", "m03", "m03"])
    collapsed = collapse_singleton_strata(lone)
    assert list(collapsed) == ["m02", "m02", "m02", "m03", "m03", "m03"]
    assert list(collapse_singleton_strata(np.array(["m01"]))) == ["m01"]

    boot = ClusterBootstrap(strata, ["a", "b", "c", "d"], resamples=500, seed=1)
    ratios = boot.replicate_ratios(np.array([1.0, 0.0, 1.0, 0.0]), np.ones(4))
    assert np.nanstd(ratios) > 0.05  # one scenario per metric: uncertainty is not zero


def test_rank_probabilities_are_withheld_when_replicates_cannot_vary():
    import pandas as pd

    from pressurebench.stats.bootstrap import ClusterBootstrap
    from pressurebench.stats.ranking import compare_targets

    rows = [{"target": t, "metric_id": "m01", "metric_type": "positive", "base_id": "m01_s001",
                 "scenario_id": f"m01_s001_v0{v}", "sample": 0, "status": "ok", "passed": p}
            for t, p in (("a", True), ("b", False)) for v in (1, 2)]
    scores = pd.DataFrame(rows)
    boot = ClusterBootstrap.from_scores(scores, resamples=200, seed=0)
    ranking = compare_targets(scores, boot).ranking
    assert ranking.reason and "cannot be estimated" in ranking.reason
    assert all(r.rank_probabilities == [] for r in ranking.ranks)
    assert [r.rank for r in ranking.ranks] == [1.0, 2.0]


def test_the_expanded_level_turns_the_normal_quantile_into_the_t_quantile():
    levels = expanded_level(0.95, np.array([0.0, 1.0, 11.0, 44.0, 1e9]))
    assert np.isnan(levels[0]) and levels[1] < 1.0  # t on 1 df: as far out as floats go
    for df, level in zip([11.0, 44.0], levels[2:4]):
        assert stats.norm.ppf(0.5 + level / 2) == pytest.approx(stats.t.ppf(0.975, df))
    assert levels[2] > levels[3] > 0.95 and levels[4] == pytest.approx(0.95)


def test_the_expanded_percentile_interval_widens_with_fewer_degrees_of_freedom():
    reps = np.random.default_rng(0).normal(size=(4000, 1)).repeat(3, axis=1)
    low, high, degenerate = expanded_percentile_interval(reps, 0.95, np.array([5.0, 40.0, 0.0]))
    plain_low, plain_high, _ = percentile_interval(reps[:, :1], 0.95)
    assert high[0] - low[0] > high[1] - low[1] > plain_high[0] - plain_low[0]
    assert high[0] == pytest.approx(stats.t.ppf(0.975, 5), abs=0.15)
    assert np.isnan(low[2]) and np.isnan(high[2]) and degenerate[2]
