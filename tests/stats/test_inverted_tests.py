"""Every p-value the package prints inverts the interval beside it: "p < α" exactly when the
interval excludes 0, for MOVER intervals (which no symmetric test stands behind) as for
symmetric t ones; Holm's correction runs within the declared families."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import t as student_t

from pressurebench.stats import methods
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.differences import estimate_differences, paired_design
from pressurebench.stats.interval_rules import DIFFERENCE, GAP
from pressurebench.stats.inverted_tests import inverted_p_values
from pressurebench.stats.multiplicity import FAMILIES, holm_by_family
from pressurebench.stats.power import minimum_detectable_effect
from pressurebench.stats.ranking import compare_targets
from pressurebench.stats.sweeps.synthetic import synthetic_scores


def _tables(seed: int, groups: int, k: int = 6, rows: int = 4):
    """Two sides on 3 metrics of `k` base scenarios, rates near 0.9 against 0.8 (where a MOVER
    interval is skewed), one column per group."""
    rng = np.random.default_rng(seed)
    strata = np.repeat(np.arange(3), k)
    p = rng.beta(4.5, 0.5, size=(3 * k, groups))
    s_a = rng.binomial(rows, p).astype(float)
    s_b = rng.binomial(rows, np.clip(p - 0.08, 0, 1)).astype(float)
    t = np.full(s_a.shape, float(rows))
    return strata, s_a, t, s_b, t


@pytest.mark.parametrize("method", [methods.CLUSTER_T_MOVER, methods.CLUSTER_T])
def test_a_p_value_is_below_alpha_exactly_when_the_interval_excludes_0(method):
    strata, s_a, t_a, s_b, t_b = _tables(1, 400)
    design = paired_design(s_a, t_a, s_b, t_b, strata, rule=DIFFERENCE)
    for level in (0.9, 0.95):
        found = estimate_differences([("a", "b")] * 400, s_a, t_a, s_b, t_b, design,
                                     method=method, confidence_level=level)
        excludes = np.array([not (d.ci_low <= 0 <= d.ci_high) for d in found])
        below = np.array([d.p_value < 1 - level for d in found])
        assert (excludes == below).all()
        assert 20 < excludes.sum() < 380  # both kinds of study are among them


def test_the_p_value_of_a_symmetric_t_interval_is_the_t_tests():
    strata, s_a, t_a, s_b, t_b = _tables(2, 50)
    design = paired_design(s_a, t_a, s_b, t_b, strata, rule=GAP)
    found = estimate_differences([("a", "b")] * 50, s_a, t_a, s_b, t_b, design,
                                 method=methods.CLUSTER_T, confidence_level=0.95)
    d = np.array([x.difference for x in found])
    t_test = 2 * student_t.sf(np.abs(d) / np.sqrt(design.variance), design.df)
    assert np.array([x.p_value for x in found]) == pytest.approx(t_test, rel=1e-6, abs=1e-9)


def test_a_mover_p_value_is_not_the_symmetric_tests():
    """Near 0.9 the MOVER interval is skewed, so its p-value differs from d / se's: the
    reason p-values invert the interval shown."""
    strata, s_a, t_a, s_b, t_b = _tables(3, 200)
    design = paired_design(s_a, t_a, s_b, t_b, strata, rule=DIFFERENCE)
    found = estimate_differences([("a", "b")] * 200, s_a, t_a, s_b, t_b, design,
                                 method=methods.CLUSTER_T_MOVER, confidence_level=0.95)
    d = np.array([x.difference for x in found])
    symmetric = 2 * student_t.sf(np.abs(d) / np.sqrt(design.variance), design.df)
    mover = np.array([x.p_value for x in found])
    assert np.abs(mover - symmetric).max() > 0.005


def test_inverting_a_known_interval_gives_its_p_value():
    """d ± z · se at level c: p is 2 (1 − Φ(|d| / se)); a point estimate at the null is 1."""
    from scipy.stats import norm

    d, se = np.array([0.1, -0.3, 0.0]), np.array([0.05, 0.1, 0.1])

    def bounds(levels):
        half = norm.ppf(0.5 + levels / 2) * se
        return d - half, d + half

    p = inverted_p_values(bounds, 3, 0.95)
    assert p[:2] == pytest.approx(2 * norm.sf(np.abs(d[:2]) / se[:2]), rel=1e-6)
    assert p[2] == 1.0


def test_the_minimum_detectable_effect_is_t_quantiles_times_the_standard_error():
    mde = minimum_detectable_effect(np.array([0.05]), np.array([10.0]), 0.95)
    expected = (student_t.ppf(0.975, 10) + student_t.ppf(0.8, 10)) * 0.05
    assert mde[0] == pytest.approx(expected)


def test_pairs_of_targets_carry_inverted_p_values_and_holm_within_their_families():
    """Three targets: three pairs over all metrics (one family) and each pair on each of its 4
    metrics (a family per pair); a star implies the interval excludes 0."""
    scores = synthetic_scores(target_rates={"a": 0.8, "b": 0.5, "c": 0.48}, metrics=4,
                              base_per_metric=DIFFERENCE.single + 2, samples=2, seed=5)
    comparison = compare_targets(scores, ClusterBootstrap.from_scores(scores))
    assert [(d.a, d.b) for d in comparison.pairwise] == [("a", "b"), ("a", "c"), ("b", "c")]
    assert len(comparison.by_metric) == 3 * 4
    p = [d.p_value for d in comparison.pairwise]
    expected = [t["p_holm"] for t in holm_by_family(p, [0, 0, 0], 0.95)[0]]
    assert [d.p_holm for d in comparison.pairwise] == pytest.approx(expected)
    for d in comparison.pairwise + comparison.by_metric:
        assert d.mde is not None and d.mde > 0
        if d.holm_significant:
            assert not d.ci_low <= 0 <= d.ci_high
    assert comparison.pairwise[0].holm_significant  # 0.3 apart
    first = [d for d in comparison.by_metric if (d.a, d.b) == ("a", "b")]
    assert [d.metric_id for d in first] == ["m01", "m02", "m03", "m04"]
    assert {d.ci_method for d in first} <= {methods.CLUSTER_T_MOVER, methods.NEWCOMBE_CLUSTERS}


def test_every_table_with_p_values_has_a_declared_family():
    assert {"differences between targets", "differences between targets per metric",
            "demographic gaps", "capitulation curve differences",
            "validation arm differences"} <= set(FAMILIES)
