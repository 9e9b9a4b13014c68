"""Prediction-powered rates against the authors' `ppi-python` and against hand computations."""

from __future__ import annotations

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from scipy.stats import norm

from pressurebench.stats import methods
from pressurebench.stats.cluster_t import (
    rate_z,
    stratified_variance,
    welch_df,
    wilson_t_interval,
)
from pressurebench.stats.interval_rules import CORRECTED_DIFFERENCE, CORRECTED_RATE
from pressurebench.stats.ppi import (
    MIN_LABELLED_PER_METRIC,
    PPITables,
    ppi_contributions,
    ppi_differences,
    ppi_rates,
    ppi_tables,
    residual_floor,
)


def iid_sample(seed: int, n: int, big_n: int, sensitivity=0.8, specificity=0.9, rate=0.4):
    """Human passes y and judge passes f on n labelled rows, f alone on big_n unlabelled ones."""
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=n + big_n) < rate).astype(float)
    u = rng.uniform(size=n + big_n)
    f = np.where(y == 1, u < sensitivity, u >= specificity).astype(float)
    return y[:n], f[:n], f[n:]


def iid_tables(y: np.ndarray, f: np.ndarray, f_unlabelled: np.ndarray) -> PPITables:
    """The i.i.d. case as ppi-python sees it: every row its own cluster, the labelled rows in
    one stratum and the unlabelled ones in another, the judge's mean taken over the latter."""
    n, big_n = len(y), len(f_unlabelled)
    one = np.concatenate([np.ones(n), np.zeros(big_n)])[:, None]
    return PPITables(
        judge_passes=np.concatenate([np.zeros(n), f_unlabelled])[:, None],
        judged=1.0 - one,
        human=np.concatenate([y, np.zeros(big_n)])[:, None],
        judge_labelled=np.concatenate([f, np.zeros(big_n)])[:, None],
        both=np.concatenate([y * f, np.zeros(big_n)])[:, None],
        weight=one,
        weight_squared=one,
        labelled=one,
    )


def iid_strata(n: int, big_n: int) -> np.ndarray:
    return np.concatenate([np.zeros(n, dtype=int), np.ones(big_n, dtype=int)])


@pytest.mark.parametrize("lam", [0.0, 0.4, 1.0])
@pytest.mark.parametrize("seed", [1, 2])
def test_iid_estimate_and_interval_equal_ppi_python_at_the_same_lambda(seed, lam):
    """ppi-python's interval is θ̂ ± z · √(s²_r / n + λ² s²_f / N) with ddof-0 standard
    deviations. Our linearized contributions give exactly that estimate and variance; the
    reported interval then takes each stratum's variance with k / (k − 1), the residual's at
    least its floor, Student t on the Welch–Satterthwaite degrees of freedom of the two terms
    (the whole's at most Satterthwaite's over its two strata), and Wilson's form, all computed
    here from ppi-python's own two variance terms."""
    y, f, f_u = iid_sample(seed, 200, 3000)
    n, big_n = len(y), len(f_u)
    strata = iid_strata(n, big_n)
    tables = iid_tables(y, f, f_u)
    parts = ppi_contributions(tables, strata, lam)
    estimate, z = parts.estimate[0], parts.z[:, 0]
    assert estimate == pytest.approx(ppi_mean_pointestimate(y, f, f_u, lam=lam), abs=1e-12)

    ddof0 = sum(((z[strata == h] - z[strata == h].mean()) ** 2).sum() for h in (0, 1))
    low, high = ppi_mean_ci(y, f, f_u, alpha=0.05, lam=lam)
    half = norm.ppf(0.975) * np.sqrt(ddof0)
    assert estimate - half == pytest.approx(low[0], abs=1e-12)
    assert estimate + half == pytest.approx(high[0], abs=1e-12)

    rectifier = np.std(y - lam * f) ** 2 / n  # ppi-python's two variance terms
    imputed = np.std(lam * f_u) ** 2 / big_n
    v_residual, v_judge = n / (n - 1) * rectifier, big_n / (big_n - 1) * imputed
    # The residual's floor: its variance on the (y, f) table with 0.5 added to each cell.
    cells = [((y == i) & (f == j)).sum() + 0.5 for i, j in ((1, 1), (1, 0), (0, 1), (0, 0))]
    values = np.array([1 - lam, 1.0, -lam, 0.0])
    p = np.array(cells) / (n + 2)
    floor = ((p * values**2).sum() - (p * values).sum() ** 2) / (n + 2)
    assert residual_floor(tables, parts.lam)[0] == pytest.approx(floor, rel=1e-12)
    v_residual = max(v_residual, floor)
    per_stratum = [len(z[strata == h]) / (len(z[strata == h]) - 1)
                   * ((z[strata == h] - z[strata == h].mean()) ** 2).sum() for h in (0, 1)]
    whole = sum(per_stratum) ** 2 / (per_stratum[0] ** 2 / (n - 1)
                                     + per_stratum[1] ** 2 / (big_n - 1))
    df = min(whole, welch_df(v_judge, whole, v_residual, n - 1))
    expected = wilson_t_interval(
        np.array([estimate]), np.array([v_residual + v_judge]), np.array([df]), 0.95
    )
    out = ppi_rates(tables, strata, 0.95, lam=lam)
    assert out.ci_method == [methods.PPI_CLUSTER_T_WILSON]
    assert out.df[0] == pytest.approx(df, rel=1e-12)
    assert out.ci_low[0] == pytest.approx(expected[0][0], abs=1e-12)
    assert out.ci_high[0] == pytest.approx(expected[1][0], abs=1e-12)


def test_iid_tuned_lambda_is_ppi_python_s_up_to_its_small_sample_conventions():
    """PPI++'s λ is Cov(y, f) / ((1 + n/N) Var(f)); ppi-python estimates Var(f) on the labelled
    and unlabelled rows pooled and Cov with ddof 0, ours minimises the design variance with each
    stratum's own ddof-1 variance. The two agree to O(1/√n), and so do the estimates."""
    for seed in range(5):
        y, f, f_u = iid_sample(seed, 400, 4000)
        strata = iid_strata(len(y), len(f_u))
        estimate, lam, _, _ = ppi_contributions(iid_tables(y, f, f_u), strata)
        theirs = ppi_mean_pointestimate(y, f, f_u)  # tuned
        their_lam = (float(np.squeeze(theirs)) - y.mean()) / (f_u.mean() - f.mean())
        assert 0 < lam[0] < 1
        assert lam[0] == pytest.approx(their_lam, abs=0.03)
        low, high = ppi_mean_ci(y, f, f_u, alpha=0.05)
        assert estimate[0] == pytest.approx(float(np.squeeze(theirs)), abs=0.001)
        assert estimate[0] == pytest.approx((low[0] + high[0]) / 2, abs=0.001)


def clustered_rows(seed: int, clusters_per_stratum: int = 12, strata: int = 3, rows: int = 4):
    """Rows in clusters within strata, each cluster with its own pass probability."""
    rng = np.random.default_rng(seed)
    k = clusters_per_stratum * strata
    p = rng.beta(2, 2, size=k)
    cluster = np.repeat(np.arange(k), rows)
    y = (rng.uniform(size=cluster.size) < p[cluster]).astype(float)
    u = rng.uniform(size=cluster.size)
    f = np.where(y == 1, u < 0.8, u >= 0.9).astype(float)
    return cluster, np.arange(k) // clusters_per_stratum, y, f


def test_with_every_row_labelled_the_rate_and_its_interval_are_the_human_ones():
    cluster, strata, y, f = clustered_rows(3)
    k = strata.size
    group = np.zeros(cluster.size, dtype=np.int64)
    valid = np.ones(cluster.size)
    tables = ppi_tables(cluster, group, k, 1, f, valid, y, np.ones(cluster.size))
    out = ppi_rates(tables, strata, 0.95)
    assert out.estimate[0] == pytest.approx(y.mean(), abs=1e-12) and out.lam[0] == 0.0
    passes = np.bincount(cluster, weights=y, minlength=k)[:, None]
    rows = np.bincount(cluster, minlength=k).astype(float)[:, None]
    human = stratified_variance(rate_z(passes, rows), rows > 0, strata, min_df=0)
    assert residual_floor(tables, out.lam)[0] < human.variance[0]
    low, high = wilson_t_interval(np.array([y.mean()]), human.variance, human.df, 0.95)
    assert out.df[0] == human.df[0]
    assert out.ci_low[0] == pytest.approx(low[0], abs=1e-12)
    assert out.ci_high[0] == pytest.approx(high[0], abs=1e-12)


def test_a_judge_that_knows_nothing_gets_lambda_near_zero_and_the_labelled_rows_interval():
    cluster, strata, y, _ = clustered_rows(4, clusters_per_stratum=30)
    rng = np.random.default_rng(5)
    f = (rng.uniform(size=y.size) < 0.5).astype(float)  # verdicts independent of the truth
    labelled = rng.uniform(size=y.size) < 0.3
    group = np.zeros(cluster.size, dtype=np.int64)
    tables = ppi_tables(
        cluster, group, strata.size, 1, f, np.ones(y.size), np.where(labelled, y, np.nan),
        np.ones(y.size) / 0.3,
    )
    tuned = ppi_rates(tables, strata, 0.95)
    alone = ppi_rates(tables, strata, 0.95, lam=0.0)
    plain = ppi_rates(tables, strata, 0.95, lam=1.0)
    assert tuned.lam[0] < 0.25
    assert alone.estimate[0] == pytest.approx(y[labelled].mean(), abs=1e-12)
    width = {name: o.ci_high[0] - o.ci_low[0] for name, o in
             (("tuned", tuned), ("alone", alone), ("plain", plain))}
    assert width["tuned"] <= width["alone"] * 1.02 and width["tuned"] < width["plain"]


def test_a_group_without_labels_has_no_corrected_rate_and_says_why():
    cluster, strata, y, f = clustered_rows(6)
    group = np.where(np.arange(y.size) % 2 == 0, 0, 1)
    human = np.where(group == 0, y, np.nan)
    tables = ppi_tables(cluster, group, strata.size, 2, f, np.ones(y.size), human, np.ones(y.size))
    out = ppi_rates(tables, strata, 0.95)
    assert np.isfinite(out.estimate[0]) and out.reason[0] is None
    assert np.isnan(out.estimate[1]) and np.isnan(out.ci_low[1])
    assert out.reason[1] == "no labelled rows with a human answer"
    assert out.ci_method[1] == methods.NONE


def _labelled_at(cluster: np.ndarray, y: np.ndarray, rows: list[int]) -> np.ndarray:
    human = np.full(y.size, np.nan)
    human[rows] = y[rows]
    return human


def test_a_metric_with_one_labelled_row_withholds_the_corrected_rate_and_names_the_labels():
    """Three metrics of 12 base scenarios × 4 rows; m01 and m02 have labels on several base
    scenarios, m03 on one row: its residual is one verdict, so no corrected value (nor λ, nor
    interval) is given, and the reason says which labels would give one."""
    cluster, strata, y, f = clustered_rows(6)
    group = np.zeros(cluster.size, dtype=np.int64)
    rows = [0, 4, 8, 12, 48, 52, 56, 96]  # m01: 4, m02: 3, m03: 1 (4 rows per base scenario)
    human = _labelled_at(cluster, y, rows)
    tables = ppi_tables(cluster, group, strata.size, 1, f, np.ones(y.size), human, np.ones(y.size))
    out = ppi_rates(tables, strata, 0.95, metric_names=["m01", "m02", "m03"])
    assert np.isnan(out.estimate[0]) and np.isnan(out.lam[0]) and np.isnan(out.ci_low[0])
    assert out.ci_method == [methods.NONE]
    assert out.reason[0].startswith("too few labels to correct it: 1 of its 3 metrics")
    assert f"m03: {MIN_LABELLED_PER_METRIC - 1} more" in out.reason[0]

    human = _labelled_at(cluster, y, rows + [100])  # a second row in m03, on another scenario
    tables = ppi_tables(cluster, group, strata.size, 1, f, np.ones(y.size), human, np.ones(y.size))
    out = ppi_rates(tables, strata, 0.95, metric_names=["m01", "m02", "m03"])
    assert np.isfinite(out.estimate[0]) and np.isfinite(out.lam[0]) and out.reason[0] is None


def test_labels_on_one_base_scenario_per_metric_leave_lambda_undefined():
    """Two labelled rows per metric, both of one base scenario: the labelled rows show no
    variation between scenarios, so neither λ nor the residual's variance can be estimated."""
    cluster, strata, y, f = clustered_rows(7)
    group = np.zeros(cluster.size, dtype=np.int64)
    human = _labelled_at(cluster, y, [0, 1, 48, 49, 96, 97])
    tables = ppi_tables(cluster, group, strata.size, 1, f, np.ones(y.size), human, np.ones(y.size))
    out = ppi_rates(tables, strata, 0.95)
    assert np.isnan(out.estimate[0]) and np.isnan(out.lam[0])
    assert "λ and their variance cannot be estimated" in out.reason[0]
    assert "one more base scenario" in out.reason[0]


def test_a_difference_with_an_uncorrectable_side_is_withheld_with_that_sides_reason():
    cluster, strata, y, f = clustered_rows(8)
    group = np.where(np.arange(y.size) % 2 == 0, 0, 1)
    rows = list(range(0, y.size, 6))  # group 0 (even rows) labelled in every metric
    human = _labelled_at(cluster, y, rows + [1])  # group 1: one labelled row, in m01
    tables = ppi_tables(cluster, group, strata.size, 2, f, np.ones(y.size), human, np.ones(y.size))
    rates = ppi_rates(tables, strata, 0.95)
    assert np.isfinite(rates.estimate[0]) and np.isnan(rates.estimate[1])
    diff = ppi_differences(tables, strata, [(0, 1)], 0.95)
    assert np.isnan(diff.estimate[0]) and np.isnan(diff.ci_low[0])
    assert diff.reason[0] == rates.reason[1]


def test_a_tuned_lambda_is_never_a_negative_zero():
    """Every labelled row failing leaves the residual without variance: the covariance is 0
    and the tuned λ computed as −0 / (2 V(e)); it is reported as 0, never as −0."""
    cluster, strata, y, f = clustered_rows(9)
    group = np.zeros(cluster.size, dtype=np.int64)
    rows = list(range(0, y.size, 5))
    human = np.full(y.size, np.nan)
    human[rows] = 0.0
    tables = ppi_tables(cluster, group, strata.size, 1, f, np.ones(y.size), human, np.ones(y.size))
    out = ppi_rates(tables, strata, 0.95)
    assert out.lam[0] == 0.0 and not np.signbit(out.lam[0])


def _rule_design(per_metric: int, metrics: int, groups: int = 1):
    """`metrics` metrics of `per_metric` base scenarios × 4 rows, every other row labelled,
    the rows alternating between `groups` groups (two targets on the same scenarios)."""
    cluster, strata, y, f = clustered_rows(10, clusters_per_stratum=per_metric, strata=metrics)
    group = np.arange(y.size) % groups
    human = np.where(np.arange(y.size) % 4 < 2, y, np.nan)
    tables = ppi_tables(cluster, group, strata.size, groups, f, np.ones(y.size), human,
                        np.ones(y.size))
    return tables, strata


def test_one_metrics_corrected_rate_is_withheld_at_any_design_and_says_why():
    """No design of the judge-corrected sweep gives one metric's corrected rate its coverage
    (docs/judge_coverage.md): however many base scenarios, it is withheld with that reason and
    pointed at the raw rate, never told to plan more scenarios."""
    for per_metric in (5, CORRECTED_RATE.single + 4):
        tables, strata = _rule_design(per_metric, 1)
        out = ppi_rates(tables, strata, 0.95)
        assert np.isfinite(out.estimate[0]) and np.isnan(out.ci_low[0])
        assert out.reason[0].startswith("no corrected rate interval on one metric: with the "
                                        "labels of one metric")
        assert "raw rate" in out.reason[0] and "scenarios_per_metric" not in out.reason[0]


@pytest.mark.parametrize(("metrics", "side"), [(4, "pooled")])
def test_a_corrected_rate_is_withheld_just_below_its_rule_and_reported_at_it(metrics, side):
    """The corrected rate's interval follows its own measured rule (`CORRECTED_RATE`, docs/
    judge_coverage.md), not the 20 degrees of freedom it had before: one base scenario per
    metric fewer than the rule withholds it with the rule's reason and remedy."""
    needed = getattr(CORRECTED_RATE, side)
    tables, strata = _rule_design(needed - 1, metrics)
    out = ppi_rates(tables, strata, 0.95)
    assert np.isfinite(out.estimate[0]) and np.isnan(out.ci_low[0])
    assert out.reason[0].startswith(
        f"too few base scenarios for a corrected rate interval ({(needed - 1) * metrics} with "
        f"valid rows"
    )
    assert f"the coverage grids need {needed} per metric" in out.reason[0]
    assert f"an interval needs at least {needed} base scenarios per metric" in out.reason[0]
    tables, strata = _rule_design(needed, metrics)
    out = ppi_rates(tables, strata, 0.95)
    assert out.reason[0] is None and out.ci_method == [methods.PPI_CLUSTER_T_WILSON]
    assert out.ci_low[0] <= out.estimate[0] <= out.ci_high[0]


def test_a_corrected_difference_is_withheld_just_below_its_rule_and_reported_at_it():
    needed = CORRECTED_DIFFERENCE.pooled
    tables, strata = _rule_design(needed - 1, 4, groups=2)
    out = ppi_differences(tables, strata, [(0, 1)], 0.95)
    assert np.isfinite(out.estimate[0]) and np.isnan(out.ci_low[0])
    assert out.reason[0].startswith("too few base scenarios for a corrected difference interval")
    assert f"the coverage grids need {needed} per metric" in out.reason[0]
    tables, strata = _rule_design(needed, 4, groups=2)
    out = ppi_differences(tables, strata, [(0, 1)], 0.95)
    assert out.reason[0] is None and out.ci_method == [methods.PPI_CLUSTER_T]
