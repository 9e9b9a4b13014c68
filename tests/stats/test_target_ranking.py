"""Target comparisons: paired differences on shared scenarios, and rank probabilities."""

from __future__ import annotations

import numpy as np
import pytest
from score_rows import clusters, frame

from pressurebench.stats import methods
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.ranking import compare_targets, rank_probabilities
from pressurebench.stats.sweeps.synthetic import synthetic_scores


def compare(scores, resamples=1000, seed=1):
    return compare_targets(
        scores, ClusterBootstrap.from_scores(scores, resamples=resamples, seed=seed)
    )


def test_rank_probabilities_sum_to_one_per_target_and_per_rank():
    rng = np.random.default_rng(0)
    reps = rng.integers(0, 4, size=(500, 5)) / 4  # many ties
    reps[::7, 2] = np.nan  # replicates with a missing rate are left out
    p = rank_probabilities(reps)
    assert p.shape == (5, 5)
    assert np.allclose(p.sum(axis=1), 1) and np.allclose(p.sum(axis=0), 1)


def test_tied_targets_share_their_ranks_equally():
    reps = np.array([[0.5, 0.5, 0.2], [0.5, 0.5, 0.2]])
    assert rank_probabilities(reps) == pytest.approx(
        np.array([[0.5, 0.5, 0], [0.5, 0.5, 0], [0, 0, 1]])
    )
    assert rank_probabilities(np.array([[0.3, 0.9, 0.6]])) == pytest.approx(
        np.array([[0, 0, 1], [1, 0, 0], [0, 1, 0]])
    )


def test_clearly_different_targets_rank_with_certainty_and_close_ones_do_not():
    scores = synthetic_scores(
        target_rates={"low": 0.3, "mid-a": 0.6, "mid-b": 0.61, "high": 0.8}, samples=2, seed=9
    )
    result = compare(scores)
    ranks = {r.target: r for r in result.ranking.ranks}
    assert [r.target for r in result.ranking.ranks] == ["high", "low", "mid-a", "mid-b"]
    assert ranks["high"].rank == 1 and ranks["low"].rank == 4
    assert ranks["high"].rank_probabilities[0] > 0.99
    assert ranks["low"].rank_probabilities[3] > 0.99
    for close in ("mid-a", "mid-b"):
        assert 0.05 < ranks[close].rank_probabilities[1] < 0.95
        assert ranks[close].rank_probabilities[1] + ranks[close].rank_probabilities[2] > 0.99
    assert result.ranking.n_scenarios == 72 and result.ranking.n_clusters == 72

    pairs = {(d.a, d.b): d for d in result.pairwise}
    assert len(pairs) == 6
    assert pairs[("high", "low")].ci_low > 0
    assert pairs[("mid-a", "mid-b")].ci_low < 0 < pairs[("mid-a", "mid-b")].ci_high
    assert pairs[("high", "low")].ci_method == methods.CLUSTER_T_MOVER


def test_targets_are_compared_on_the_scenarios_both_answered():
    # b failed on scenario 3, which a fails: comparing all rows would flatter b.
    rows = clusters({1: [True, True], 2: [True, False], 3: [False, False]}, target="a")
    rows += clusters({1: [True, True], 2: [True, False], 3: [None, None]}, target="b")
    result = compare(frame(rows), resamples=300)
    (diff,) = result.pairwise
    assert (diff.a, diff.b, diff.n_a, diff.n_b) == ("a", "b", 4, 4)
    assert diff.difference == 0.0
    assert result.ranking.n_scenarios == 4
    assert [r.rank for r in result.ranking.ranks] == [1.5, 1.5]
    assert result.ranking.ranks[0].rank_probabilities == pytest.approx([0.5, 0.5])


def test_a_single_target_ranks_first_with_certainty():
    result = compare(synthetic_scores(target_rates={"only": 0.5}, seed=1), resamples=200)
    assert result.pairwise == []
    (rank,) = result.ranking.ranks
    assert rank.rank == 1.0 and rank.rank_probabilities == [1.0]


def test_no_shared_scenarios_gives_a_null_ranking_with_a_reason():
    rows = clusters({1: [True], 2: [False]}, target="a") + clusters(
        {1: [None], 2: [None]}, target="b"
    )
    result = compare(frame(rows), resamples=100)
    assert result.ranking.reason is not None and result.ranking.n_scenarios == 0
    assert all(r.rate is None and r.rank is None for r in result.ranking.ranks)
    assert result.pairwise[0].difference is None
