"""Fleiss, Cohen and Krippendorff against statsmodels and the krippendorff package."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from statsmodels.stats import inter_rater

from pressurebench.stats.coefficients import (
    cohens_kappa,
    fleiss_kappa,
    krippendorff_alpha_nominal,
    krippendorff_item_stats,
)


def count_table(ratings: np.ndarray, categories: int) -> np.ndarray:
    """Raters × items ratings (NaN missing) → items × categories counts."""
    return np.stack([(ratings == c).sum(axis=0) for c in range(categories)], axis=1)


@pytest.mark.parametrize("seed", range(8))
def test_fleiss_kappa_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    categories, raters = rng.integers(2, 5), rng.integers(2, 7)
    # items lean towards a category of their own, so kappa is well away from 0
    leaning = rng.dirichlet(np.ones(categories) * 0.7, size=50)
    table = np.stack([rng.multinomial(raters, p) for p in leaning])
    assert fleiss_kappa(table) == pytest.approx(inter_rater.fleiss_kappa(table), abs=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_cohens_kappa_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    c = rng.integers(2, 5)
    table = rng.integers(0, 30, size=(c, c)) + np.diag(rng.integers(10, 60, size=c))
    assert cohens_kappa(table) == pytest.approx(inter_rater.cohens_kappa(table).kappa, abs=1e-9)


@pytest.mark.parametrize("seed", range(8))
def test_krippendorff_alpha_matches_the_reference_with_missing_ratings(seed):
    rng = np.random.default_rng(seed)
    categories, raters, items = rng.integers(2, 5), rng.integers(2, 6), 60
    truth = rng.integers(0, categories, size=items)
    ratings = np.where(
        rng.uniform(size=(raters, items)) < 0.7,
        truth,
        rng.integers(0, categories, size=(raters, items)),
    )
    ratings = ratings.astype(float)
    ratings[rng.uniform(size=ratings.shape) < 0.25] = np.nan  # unequal numbers of ratings per item
    expected = krippendorff.alpha(reliability_data=ratings, level_of_measurement="nominal")
    got = krippendorff_alpha_nominal(count_table(ratings, categories))
    assert got == pytest.approx(expected, abs=1e-9)


def test_items_rated_once_drop_out_of_alpha():
    table = np.array([[2, 0], [1, 1], [0, 3], [1, 0], [0, 1]])
    assert krippendorff_alpha_nominal(table) == pytest.approx(krippendorff_alpha_nominal(table[:3]))
    assert not krippendorff_item_stats(table)[3:].any()


def test_undefined_coefficients_are_nan_not_zero():
    one_category = np.array([[3, 0], [3, 0], [3, 0]])
    assert np.isnan(fleiss_kappa(one_category))
    assert np.isnan(krippendorff_alpha_nominal(one_category))
    assert np.isnan(cohens_kappa(np.array([[5, 0], [0, 0]])))


def test_perfect_and_chance_agreement():
    assert fleiss_kappa(np.array([[3, 0], [0, 3], [3, 0]])) == pytest.approx(1.0)
    assert cohens_kappa(np.array([[10, 0], [0, 7]])) == pytest.approx(1.0)
    assert cohens_kappa(np.array([[25, 25], [25, 25]])) == pytest.approx(0.0)


def test_fleiss_refuses_unequal_numbers_of_ratings():
    with pytest.raises(ValueError, match="same number of ratings"):
        fleiss_kappa(np.array([[2, 1], [1, 1]]))
    with pytest.raises(ValueError, match="square"):
        cohens_kappa(np.ones((2, 3)))
