"""Contrasts of pass rates (a difference of two differences) and the p-values beside them: the
p-value inverts the interval shown, so the two never disagree; a contrast whose base scenarios
all show it alike gets the wide interval from the rates' score intervals, not a point; a share
of a gap gets Fieller's interval only where the gap's interval leaves 0 out."""

from __future__ import annotations

import numpy as np
import pytest

from pressurebench.stats import methods
from pressurebench.stats.gap_contrasts import explained_shares, fieller_share, gap_readings
from pressurebench.stats.interval_rules import EXPLAINED_SHARE, GAP_CONTRAST, rules_lowered
from pressurebench.stats.inverted_tests import inverted_p_value, symmetric_t_p_value
from pressurebench.stats.rate_contrasts import ContrastSide, holm_tested, linear_contrasts
from pressurebench.stats.sweeps.synthetic import synthetic_scores


def side(tables, weights, k: int, metrics: int = 2) -> ContrastSide:
    return ContrastSide(successes=tuple(s for s, _ in tables), trials=tuple(t for _, t in tables),
                        weights=weights, strata=np.repeat(np.arange(metrics), k),
                        labels=tuple(f"rate {i}" for i in range(len(tables))))


def random_tables(rng, clusters: int, groups: int, terms: int, rows: int = 4):
    trials = np.full((clusters, groups), float(rows))
    return [(rng.binomial(rows, rng.uniform(0.05, 0.95, size=(clusters, groups))).astype(float),
             trials) for _ in range(terms)]


def test_the_p_value_is_below_alpha_exactly_when_the_interval_leaves_0_out():
    rng = np.random.default_rng(4)
    tables = random_tables(rng, clusters=12, groups=300, terms=4)
    for level in (0.9, 0.95):
        for e in linear_contrasts([side(tables, (1.0, -1.0, -1.0, 1.0), 6)], rule=GAP_CONTRAST,
                                  confidence_level=level):
            assert e.ci_method == methods.CLUSTER_T
            outside = not (e.ci_low <= 0 <= e.ci_high)
            assert (e.p_value < 1 - level) == outside


def test_the_symmetric_p_value_is_the_interval_inverted_by_bisection():
    from scipy.stats import t as student_t

    value, variance, df = 0.12, 0.0025, 7.0

    def interval_at(level):
        half = student_t.ppf(0.5 + level / 2, df) * np.sqrt(variance)
        return value - half, value + half

    assert inverted_p_value(interval_at, 0.95) == pytest.approx(
        symmetric_t_p_value(value, variance, df), abs=1e-6)


def test_a_contrast_every_base_scenario_shows_alike_gets_newcombes_interval_and_its_p():
    """A scripted judge that never samples: each base scenario moves by exactly the same, so
    the variance is 0; the interval combines the rates' Wilson intervals over base scenarios."""
    k = 4
    ones, zeros, trials = np.full((2 * k, 1), 2.0), np.zeros((2 * k, 1)), np.full((2 * k, 1), 2.0)
    tables = [(zeros, trials), (ones, trials), (ones, trials), (ones, trials)]
    (moved,) = linear_contrasts([side(tables, (1.0, -1.0, -1.0, 1.0), k)], rule=GAP_CONTRAST,
                                confidence_level=0.95)
    assert moved.value == -1.0 and moved.ci_method == methods.NEWCOMBE_CLUSTERS
    assert moved.ci_high < 0 and moved.p_value < 0.05
    still = [(ones, trials)] * 4
    (nothing,) = linear_contrasts([side(still, (1.0, -1.0, -1.0, 1.0), k)], rule=GAP_CONTRAST,
                                  confidence_level=0.95)
    assert nothing.value == 0.0 and nothing.ci_low < 0 < nothing.ci_high
    assert nothing.p_value == 1.0


def test_a_design_below_the_rule_withholds_the_interval_and_the_test():
    rng = np.random.default_rng(1)
    tables = random_tables(rng, clusters=4, groups=1, terms=4)
    (e,) = linear_contrasts([side(tables, (1.0, -1.0, -1.0, 1.0), 2)], rule=GAP_CONTRAST,
                            confidence_level=0.95)
    assert e.value is not None and e.ci_low is None and e.p_value is None
    assert "too few base scenarios for a gap contrast interval" in e.reason
    with rules_lowered():
        (lowered,) = linear_contrasts([side(tables, (1.0, -1.0, -1.0, 1.0), 2)],
                                      rule=GAP_CONTRAST, confidence_level=0.95)
    assert lowered.ci_low is not None


def test_independent_sides_add_their_variances_on_welch_degrees_of_freedom():
    rng = np.random.default_rng(2)
    one, two = random_tables(rng, 16, 1, 2), random_tables(rng, 16, 1, 2)
    (paired,) = linear_contrasts([side(one + two, (1.0, -1.0, -1.0, 1.0), 8)],
                                 rule=GAP_CONTRAST, confidence_level=0.95)
    (apart,) = linear_contrasts([side(one, (1.0, -1.0), 8), side(two, (-1.0, 1.0), 8)],
                                rule=GAP_CONTRAST, confidence_level=0.95)
    assert apart.value == pytest.approx(paired.value)
    assert apart.ci_method == methods.CLUSTER_T_WELCH and apart.n_clusters == 32
    # Satterthwaite's degrees of freedom of a variance summed over the 2 strata: at most the
    # base scenarios minus strata (14), fewer where one stratum carries more of the variance;
    # Welch's over two independent sides of 16 base scenarios each, at most 28.
    assert 1 <= paired.df < 14 and paired.df < apart.df <= 28


def test_holm_runs_over_the_contrasts_given_and_leaves_out_those_without_a_test():
    rng = np.random.default_rng(3)
    tables = random_tables(rng, clusters=12, groups=5, terms=4)
    found = linear_contrasts([side(tables, (1.0, -1.0, -1.0, 1.0), 6)], rule=GAP_CONTRAST,
                             confidence_level=0.95)
    withheld = found[0].model_copy(update={"ci_low": None, "ci_high": None, "p_value": None,
                                           "reason": "withheld"})
    tested = holm_tested([withheld, *found[1:]], 0.95)
    assert tested[0].p_holm is None and tested[0].n_comparisons == 4
    assert all(t.p_holm >= t.p_value for t in tested[1:])


def planted_judge(seed: int, share: float, effect: float = 0.3):
    """Main verdicts with a gap (young pass more), and a second reading in which `share` of
    young rows' passes the old rows lack are undone: the judge's part is about `share` of the
    gap."""
    main = synthetic_scores(target_rates={"t": 0.5}, metrics=4, base_per_metric=12,
                            axes={"age": ["old", "young"]}, samples=2, seed=seed,
                            demographic_effects={"age": {"young": effect}})
    rng = np.random.default_rng(seed)
    young = (main["demo:age"] == "young").to_numpy()
    undo = young & main["passed"].astype(bool).to_numpy() & (rng.uniform(size=len(main)) < share)
    return main, main.assign(passed=np.where(undo, False, main["passed"]).astype(object))


def test_the_share_of_a_gap_gets_fiellers_interval_around_it():
    main, second = planted_judge(seed=5, share=0.3)
    (r,) = gap_readings(main, second, rule=GAP_CONTRAST, share_rule=EXPLAINED_SHARE,
                        confidence_level=0.95)
    assert r.first.ci_high < 0  # old − young: a gap whose interval leaves 0 out
    assert r.change.value == pytest.approx(r.first.difference - r.second.difference)
    assert r.share.ci_method == methods.FIELLER_CLUSTER_T
    assert r.share.value == pytest.approx(r.change.value / r.first.difference)
    assert r.share.ci_low < r.share.value < r.share.ci_high


def test_the_share_of_a_gap_whose_interval_holds_0_is_withheld_with_the_reason():
    main, second = planted_judge(seed=6, share=0.5, effect=0.0)
    (r,) = gap_readings(main, second, rule=GAP_CONTRAST, share_rule=EXPLAINED_SHARE,
                        confidence_level=0.95)
    assert r.first.ci_low < 0 < r.first.ci_high
    assert r.share.ci_low is None and "the gap's interval includes 0" in r.share.reason


def test_fiellers_set_is_bounded_only_where_the_denominator_is_clear_of_0():
    assert fieller_share(0.1, 0.2, 0.001, 0.02, 0.0, 2.0).startswith("the gap's interval")
    low, high = fieller_share(0.1, 0.2, 0.001, 0.002, 0.0005, 2.0)
    assert low < 0.5 < high
    assert explained_shares  # the sweep's entry point (pressurebench.stats.sweeps.validation)
