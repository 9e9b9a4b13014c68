"""Power planning: how many base scenarios per metric (and samples) a study needs.

The statistics resample base scenarios within metrics, because the rows of one
base scenario (its demographic variants and samples) are not independent: a
scenario that is hard for a target is hard in every variant. The planning model
says the same thing in numbers. Each base scenario has its own pass probability,
drawn around the metric's rate `p` with intra-class correlation `icc` (a beta
distribution: 0 means every scenario is alike, 1 means a scenario either always
passes or never does); each of its `variants × samples` rows passes with that
probability. For `metrics` metrics of `scenarios` base scenarios each:

- a target's pass rate has variance p(1−p)/N × (1 + (m−1)·icc), with
  m = variants × samples rows per base scenario and N = metrics × scenarios × m
  (the design effect of clustered rows);
- the difference between two targets on the same scenarios has the sum of
  their variances less twice their covariance (`pair_correlation`: how alike
  the targets' scenario effects are; 0 plans for the worst case);
- a demographic gap compares variants of the same base scenarios, so the
  scenario effect cancels: variance 2·p(1−p)(1−icc) / (metrics × scenarios ×
  samples).

`required_scenarios` inverts these for a target interval half-width or for
80% power at α = 0.05 (two-sided).

Labels for a judge-corrected rate (`stats.ppi`): with a judge right with
probability `accuracy` on present and absent behaviour alike, the human
pass y and the judge's f correlate with ρ² = Cov(y, f)² / (Var y · Var f),
Cov(y, f) = p(1−p)(2·accuracy − 1). Labelling n of a target's N judged
rows at random, the power-tuned corrected rate has variance about
V_rate + (1/n − 1/N) · p(1−p)(1 − ρ²): the human rate's own over all rows
(the clustered variance above), plus what the judge cannot explain on the
rows no human saw (the two-phase variance of Cochran 1977, §12). A judge at
chance (ρ = 0) leaves the labelled-only rate, a perfect one the human rate.
`required_labels` inverts it for a half-width: none past the human rate's
own interval, which only more base scenarios narrow. `simulate_*` check the formulas by
drawing studies from the same model and analysing them as the pipeline
would (cluster means, a z test on the cluster-level standard error), so a
user can see the plan hold (`tests/test_planning.py`). `pilot_design`
estimates `p` and `icc` from a finished run's scores (the ANOVA estimator over
base scenarios within metrics).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.stats import norm

from ..stats.ppi import MIN_LABELLED_PER_METRIC

MAX_SCENARIOS = 10000


@dataclass(frozen=True)
class Design:
    metrics: int
    variants: int
    samples: int
    rate: float = 0.5
    icc: float = 0.2
    pair_correlation: float = 0.0

    @property
    def rows_per_scenario(self) -> int:
        return self.variants * self.samples

    def rate_variance(self, scenarios: int, rate: float | None = None) -> float:
        p = self.rate if rate is None else rate
        m = self.rows_per_scenario
        return p * (1 - p) / (self.metrics * scenarios * m) * (1 + (m - 1) * self.icc)

    def difference_variance(self, scenarios: int, difference: float) -> float:
        a, b = self.rate, min(1.0, self.rate + difference)
        va, vb = self.rate_variance(scenarios, a), self.rate_variance(scenarios, b)
        return va + vb - 2 * self.pair_correlation * math.sqrt(va * vb)

    def gap_variance(self, scenarios: int) -> float:
        p = self.rate
        return 2 * p * (1 - p) * (1 - self.icc) / (self.metrics * scenarios * self.samples)


def _z(x: float) -> float:
    return float(norm.ppf(x))


def required_scenarios(design: Design, *, half_width: float | None = None,
                       difference: float | None = None, gap: float | None = None,
                       confidence: float = 0.95, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Fewest base scenarios per metric for the goal given (exactly one); None past MAX_SCENARIOS."""
    goals = [g for g in (half_width, difference, gap) if g is not None]
    if len(goals) != 1 or goals[0] <= 0:
        raise ValueError("give exactly one positive goal: half_width, difference or gap")
    if half_width is not None:
        z = _z(0.5 + confidence / 2)

        def ok(s: int) -> bool:
            return z * math.sqrt(design.rate_variance(s)) <= half_width
    else:
        z = _z(1 - alpha / 2) + _z(power)
        effect = difference if difference is not None else gap
        assert effect is not None, "exactly one goal is given"
        var = (lambda s: design.difference_variance(s, effect)) if difference is not None else design.gap_variance

        def ok(s: int) -> bool:
            return z * math.sqrt(var(s)) <= effect
    lo, hi = 1, MAX_SCENARIOS
    if not ok(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return lo


def _judge_correlation(rate: float, accuracy: float) -> float:
    """ρ² between the human pass and the verdict of a judge right with `accuracy` either way."""
    judged = rate * accuracy + (1 - rate) * (1 - accuracy)
    if judged <= 0 or judged >= 1:
        return 0.0
    cov = rate * (1 - rate) * (2 * accuracy - 1)
    return cov**2 / (rate * (1 - rate) * judged * (1 - judged))


def corrected_rate_variance(design: Design, scenarios: int, labels: int, accuracy: float) -> float:
    """Variance of a target's judge-corrected pass rate with `labels` of its rows labelled."""
    p = design.rate
    rows = design.metrics * scenarios * design.rows_per_scenario
    labels = min(labels, rows)
    residual = p * (1 - p) * (1 - _judge_correlation(p, accuracy))
    return design.rate_variance(scenarios) + (1 / labels - 1 / rows) * residual


def required_labels(design: Design, scenarios: int, *, half_width: float, accuracy: float,
                    confidence: float = 0.95) -> int | None:
    """Fewest labelled rows per target for a corrected interval of ±`half_width`, and at least
    the labels a corrected value needs in each metric; None where even every row labelled
    leaves it wider (more base scenarios are needed, not labels)."""
    if not 0.5 <= accuracy <= 1:
        raise ValueError(f"judge accuracy must be between 0.5 and 1, got {accuracy}")
    rows = design.metrics * scenarios * design.rows_per_scenario
    budget = (half_width / _z(0.5 + confidence / 2)) ** 2
    if design.rate_variance(scenarios) > budget:
        return None
    lo, hi = 1, rows
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if corrected_rate_variance(design, scenarios, mid, accuracy) <= budget \
            else (mid + 1, hi)
    # A corrected value needs labels in every metric (`stats.ppi.untrusted`), whatever the width.
    return min(max(lo, MIN_LABELLED_PER_METRIC * design.metrics), rows)


# --- checking the plan by simulation ----------------------------------------------------


def simulate_corrected_half_width(design: Design, scenarios: int, labels: int, accuracy: float,
                                  reps: int = 2000, seed: int = 0, confidence: float = 0.95) -> float:
    """The half-width a judge-corrected rate gets: z × the spread of the PPI++ estimate over
    simulated studies, `labels` rows drawn at random for labels, λ tuned on each study."""
    rng = np.random.default_rng(seed)
    clusters, m = design.metrics * scenarios, design.rows_per_scenario
    p_s = np.repeat(_scenario_rates(rng, design, design.rate, (reps, clusters)), m, axis=1)
    y = (rng.random(p_s.shape) < p_s).astype(float)
    right = rng.random(p_s.shape) < accuracy
    f = np.where(right, y, 1 - y)
    labelled = np.argsort(rng.random(p_s.shape), axis=1)[:, :labels]
    y_l, f_l = np.take_along_axis(y, labelled, 1), np.take_along_axis(f, labelled, 1)
    n, rows = labelled.shape[1], p_s.shape[1]
    cov = ((y_l - y_l.mean(1, keepdims=True)) * (f_l - f_l.mean(1, keepdims=True))).mean(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.clip(np.nan_to_num(cov / ((1 + n / rows) * f.var(axis=1))), 0, 1)
    estimates = lam * f.mean(1) + (y_l - lam[:, None] * f_l).mean(1)
    return _z(0.5 + confidence / 2) * float(estimates.std(ddof=1))




def _scenario_rates(rng, design: Design, rate: float, n: tuple[int, ...]) -> np.ndarray:
    if design.icc <= 0:
        return np.full(n, rate)
    strength = 1 / design.icc - 1
    return rng.beta(rate * strength, (1 - rate) * strength, size=n)


def simulate_half_width(design: Design, scenarios: int, reps: int = 2000, seed: int = 0,
                        confidence: float = 0.95) -> float:
    """The half-width a study of this design gets: z × the spread of its pass-rate estimate."""
    rng = np.random.default_rng(seed)
    clusters = design.metrics * scenarios
    p_s = _scenario_rates(rng, design, design.rate, (reps, clusters))
    passed = rng.binomial(design.rows_per_scenario, p_s)
    estimates = passed.sum(axis=1) / (clusters * design.rows_per_scenario)
    return _z(0.5 + confidence / 2) * float(estimates.std(ddof=1))


def simulate_power(design: Design, scenarios: int, *, difference: float | None = None,
                   gap: float | None = None, reps: int = 2000, seed: int = 0, alpha: float = 0.05) -> float:
    """How often a study of this design detects the effect: a two-sided z test at `alpha` on
    cluster means, with the standard error estimated from the clusters, as an analysis would."""
    rng = np.random.default_rng(seed)
    clusters = design.metrics * scenarios
    z = _z(1 - alpha / 2)
    if difference is not None:
        shared = _scenario_rates(rng, design, design.rate, (reps, clusters))
        own_b = _scenario_rates(rng, design, min(1.0, design.rate + difference), (reps, clusters))
        # pair_correlation of the targets' scenario effects: b follows a's scenarios that often
        follow = rng.random((reps, clusters)) < design.pair_correlation
        p_b = np.where(follow, np.clip(shared + difference, 0, 1), own_b)
        m = design.rows_per_scenario
        per_cluster = (rng.binomial(m, p_b) - rng.binomial(m, shared)) / m
    else:
        p_s = _scenario_rates(rng, design, design.rate, (reps, clusters))
        k = design.samples
        p_b = np.clip(p_s + gap, 0, 1)
        per_cluster = (rng.binomial(k, p_b) - rng.binomial(k, p_s)) / k
    mean = per_cluster.mean(axis=1)
    se = per_cluster.std(axis=1, ddof=1) / math.sqrt(clusters)
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(se > 0, np.abs(mean) / se, np.where(mean != 0, np.inf, 0))
    return float((stat > z).mean())


def simulated_scenarios(design: Design, *, half_width: float | None = None, difference: float | None = None,
                        gap: float | None = None, reps: int = 2000, seed: int = 0, limit: int = 400) -> int | None:
    """The fewest base scenarios per metric whose simulated studies meet the goal."""
    for s in range(2, limit + 1):  # a cluster-level standard error needs two clusters per metric
        if half_width is not None:
            if simulate_half_width(design, s, reps, seed) <= half_width:
                return s
        elif simulate_power(design, s, difference=difference, gap=gap, reps=reps, seed=seed) >= 0.8:
            return s
    return None


# --- a pilot's estimates ------------------------------------------------------------------


def pilot_groups(scores_files: list[Path]) -> list[np.ndarray]:
    """The judged outcomes (ok rows) of a pilot, one array per target × metric × base scenario."""
    from ..io import read_artifact
    from ..schemas import ScoresFile

    groups: dict[str, list[int]] = {}
    for path in scores_files:
        for row in read_artifact(path, ScoresFile).rows:
            if row.status == "ok" and row.passed is not None:
                key = f"{row.target}/{row.metric_id}/{row.base_id}"
                groups.setdefault(key, []).append(int(row.passed))
    out = [np.array(g, dtype=float) for g in groups.values()]
    if len(out) < 2 or sum(len(g) for g in out) <= len(out):
        raise ValueError("a pilot needs at least two base scenarios with two judged rows each")
    return out


def anova_icc(groups: list[np.ndarray]) -> float:
    """The ANOVA estimator of the intraclass correlation, clipped to [0, 0.99]."""
    sizes = np.array([len(g) for g in groups], dtype=float)
    means = np.array([g.mean() for g in groups])
    grand = float(np.concatenate(groups).mean())
    k, n = len(groups), sizes.sum()
    if n <= k:
        return 0.0
    msb = float((sizes * (means - grand) ** 2).sum() / (k - 1))
    msw = float(sum(((g - mu) ** 2).sum() for g, mu in zip(groups, means)) / (n - k))
    m0 = (n - (sizes ** 2).sum() / n) / (k - 1)
    icc = (msb - msw) / (msb + (m0 - 1) * msw) if msb + (m0 - 1) * msw > 0 else 0.0
    return float(min(max(icc, 0.0), 0.99))


def pilot_design(design: Design, scores_files: list[Path]) -> Design:
    """`design` with the pass rate and the ICC estimated from finished scores (ok rows only;
    ANOVA estimator over base scenarios within metrics, clipped to [0, 1))."""
    groups = pilot_groups(scores_files)
    grand = float(np.concatenate(groups).mean())
    return replace(design, rate=min(max(grand, 0.01), 0.99), icc=anova_icc(groups))


def pilot_icc_interval(scores_files: list[Path], *, confidence: float = 0.95,
                       resamples: int = 2000, seed: int = 0) -> tuple[float, float, int]:
    """A percentile bootstrap interval of the pilot's ICC, resampling its base scenarios, and
    their number: a pilot of a handful of base scenarios pins the ICC down very loosely, and a
    plan sized at its point estimate can be far too small."""
    groups = pilot_groups(scores_files)
    rng = np.random.default_rng(seed)
    draws = [anova_icc([groups[i] for i in rng.integers(0, len(groups), len(groups))])
             for _ in range(resamples)]
    tail = (1 - confidence) / 2
    low, high = np.quantile(draws, [tail, 1 - tail])
    return float(low), float(high), len(groups)
