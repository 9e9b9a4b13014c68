"""Power planning: how many base scenarios per metric (and samples) a study needs.

The statistics resample base scenarios within metrics, because the rows of one
base scenario (its demographic variants and samples) are not independent: a
scenario that is hard for a target is hard in every variant. The planning model
says the same thing in numbers, with the variance components the results report
(`stats.variance_components`): of a verdict's variance p(1−p), a share `icc` lies
between base scenarios, a share `variant_share` between the variants of one
scenario (the rewrite and demographic effects), and the rest between samples of
one variant. For `metrics` metrics of k base scenarios, V variants and n samples
each, a base scenario's mean verdict has variance

    τ² = p(1−p) · (icc + variant_share / V + (1 − icc − variant_share) / (V n)),

and:

- a target's pass rate has variance τ² / (metrics · k);
- the difference between two targets on the same scenarios has the sum of their
  variances less twice the covariance of their scenario effects
  (`pair_correlation`: how alike the targets' scenario effects are; 0 plans for
  the worst case);
- a demographic gap compares the variants of one value with those of another
  within the same base scenarios, so the scenario effect cancels and the variant
  effect does not: variance 2 p(1−p) (variant_share + (1 − icc − variant_share) / n)
  / (V_value · metrics · k), with V_value = V / (values of the axis) variants per value.

`required_scenarios` inverts these for a target interval half-width (t on the design's
degrees of freedom, metrics · (k − 1), as the intervals take it) or for 80% power at
α = 0.05, two-sided: the minimum detectable effect of the results, (t_{1−α/2, df} +
t_{power, df}) · se (`stats.power`). `simulate_*` check the plan against the package's own
intervals: studies drawn from the same model, analysed by `stats.rates.estimate_rates` and
`stats.differences.estimate_differences` as the results analyse them (`tests/test_sample_size.py`).

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
own interval, which only more base scenarios narrow. `pilot_design`
estimates `p`, `icc` and `variant_share` from a finished run's scores (the components of
`stats.variance_components`, pooled over its targets and metrics).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.stats import beta, norm

from ..stats import methods
from ..stats.bootstrap import ClusterBootstrap
from ..stats.cluster_t import t_quantile
from ..stats.differences import estimate_differences, paired_design
from ..stats.interval_rules import DIFFERENCE, GAP, rules_lowered
from ..stats.power import minimum_detectable_effect
from ..stats.ppi import MIN_LABELLED_PER_METRIC
from ..stats.rates import estimate_rates

MAX_SCENARIOS = 10000


@dataclass(frozen=True)
class Design:
    metrics: int
    variants: int
    samples: int
    rate: float = 0.5
    icc: float = 0.2
    pair_correlation: float = 0.0
    variant_share: float = 0.0
    values: int = 2

    @property
    def rows_per_scenario(self) -> int:
        return self.variants * self.samples

    def scenario_variance(self, rate: float | None = None) -> float:
        """τ²: the variance of one base scenario's mean verdict."""
        p = self.rate if rate is None else rate
        sample_share = max(1 - self.icc - self.variant_share, 0.0)
        return p * (1 - p) * (self.icc + self.variant_share / self.variants
                              + sample_share / self.rows_per_scenario)

    def df(self, scenarios: int) -> int:
        """Base scenarios minus metrics: the degrees of freedom of the intervals."""
        return self.metrics * (scenarios - 1)

    def rate_variance(self, scenarios: int, rate: float | None = None) -> float:
        return self.scenario_variance(rate) / (self.metrics * scenarios)

    def difference_variance(self, scenarios: int, difference: float) -> float:
        a, b = self.rate, min(1.0, self.rate + difference)
        covariance = self.pair_correlation * self.icc * math.sqrt(a * (1 - a) * b * (1 - b))
        return (self.scenario_variance(a) + self.scenario_variance(b) - 2 * covariance) / (
            self.metrics * scenarios)

    def gap_variance(self, scenarios: int) -> float:
        p = self.rate
        per_value = max(self.variants // max(self.values, 1), 1)
        sample_share = max(1 - self.icc - self.variant_share, 0.0)
        within = p * (1 - p) * (self.variant_share + sample_share / self.samples)
        return 2 * within / (per_value * self.metrics * scenarios)


def required_scenarios(design: Design, *, half_width: float | None = None,
                       difference: float | None = None, gap: float | None = None,
                       confidence: float = 0.95, alpha: float = 0.05, power: float = 0.8) -> int | None:
    """Fewest base scenarios per metric (at least 2) for the goal given (exactly one); None past
    MAX_SCENARIOS."""
    goals = [g for g in (half_width, difference, gap) if g is not None]
    if len(goals) != 1 or goals[0] <= 0:
        raise ValueError("give exactly one positive goal: half_width, difference or gap")
    if half_width is not None:
        def ok(s: int) -> bool:
            q = float(t_quantile(np.array(design.df(s)), confidence))
            return q * math.sqrt(design.rate_variance(s)) <= half_width
    else:
        effect = difference if difference is not None else gap
        assert effect is not None, "exactly one goal is given"
        var = ((lambda s: design.difference_variance(s, effect)) if difference is not None
               else design.gap_variance)

        def ok(s: int) -> bool:
            mde = minimum_detectable_effect(math.sqrt(var(s)), design.df(s), 1 - alpha, power)
            return float(mde) <= effect
    lo, hi = 2, MAX_SCENARIOS
    if not ok(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid + 1, hi)
    return lo


def _z(x: float) -> float:
    return float(norm.ppf(x))


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


def _scenario_rates(rng, design: Design, rate: float, n: tuple[int, ...],
                    u: np.ndarray | None = None) -> np.ndarray:
    """Each base scenario's pass probability (Beta around `rate` with the design's ICC), at
    the quantiles `u` where given."""
    if design.icc <= 0:
        return np.full(n, rate)
    strength = 1 / design.icc - 1
    if u is None:
        return rng.beta(rate * strength, (1 - rate) * strength, size=n)
    return beta.ppf(u, rate * strength, (1 - rate) * strength)


def _rows(rng, design: Design, p_scenario: np.ndarray, variants: int) -> np.ndarray:
    """(reps, clusters, variants) passes of `samples` rows per variant, each variant's pass
    probability Beta around its scenario's with the ICC that gives `variant_share`."""
    p = np.repeat(p_scenario[..., None], variants, axis=-1)
    within = design.variant_share / max(1 - design.icc, 1e-9)
    if within > 0:
        strength = max(1 / min(within, 0.999) - 1, 1e-6)
        p = rng.beta(np.maximum(p * strength, 1e-9), np.maximum((1 - p) * strength, 1e-9))
    return rng.binomial(design.samples, np.clip(p, 0, 1)).astype(float)


def _tables(rows: np.ndarray) -> np.ndarray:
    """(reps, clusters, ...) → (clusters, reps) sums over the trailing axes."""
    return rows.reshape(rows.shape[0], rows.shape[1], -1).sum(axis=2).T


def simulate_half_width(design: Design, scenarios: int, reps: int = 2000, seed: int = 0,
                        confidence: float = 0.95) -> float:
    """The median half-width of the package's interval (`estimate_rates`) on a target's pass
    rate over studies drawn from the design."""
    rng = np.random.default_rng(seed)
    clusters = design.metrics * scenarios
    p_s = _scenario_rates(rng, design, design.rate, (reps, clusters))
    x = _tables(_rows(rng, design, p_s, design.variants))
    n = np.full(x.shape, float(design.rows_per_scenario))
    boot = ClusterBootstrap(np.repeat(np.arange(design.metrics), scenarios),
                            np.arange(clusters), resamples=1)
    with rules_lowered():
        found = estimate_rates(boot, x, n, np.zeros(reps), confidence)
    widths = [(e.ci_high - e.ci_low) / 2 for e in found
              if e.ci_low is not None and e.ci_high is not None]
    return float(np.median(widths))


def simulate_power(design: Design, scenarios: int, *, difference: float | None = None,
                   gap: float | None = None, reps: int = 2000, seed: int = 0,
                   alpha: float = 0.05) -> float:
    """How often the package's interval at 1 − `alpha` excludes 0 over studies drawn from the
    design: the MOVER interval of a paired difference between targets, or the cluster-t
    interval of a demographic gap (`estimate_differences`, as the results compute them)."""
    rng = np.random.default_rng(seed)
    clusters = design.metrics * scenarios
    strata = np.repeat(np.arange(design.metrics), scenarios)
    if difference is not None:
        u = rng.random((reps, clusters))
        # pair_correlation of the targets' scenario effects: b follows a's scenarios that often
        follow = rng.random((reps, clusters)) < design.pair_correlation
        u_b = np.where(follow, u, rng.random((reps, clusters)))
        p_a = _scenario_rates(rng, design, design.rate, (reps, clusters), u)
        p_b = _scenario_rates(rng, design, min(1.0, design.rate + difference), (reps, clusters),
                              u_b)
        s_a = _tables(_rows(rng, design, p_a, design.variants))
        s_b = _tables(_rows(rng, design, p_b, design.variants))
        t_a = t_b = np.full(s_a.shape, float(design.rows_per_scenario))
        rule, method = DIFFERENCE, methods.CLUSTER_T_MOVER
    else:
        per_value = max(design.variants // max(design.values, 1), 1)
        p_s = _scenario_rates(rng, design, design.rate, (reps, clusters))
        s_a = _tables(_rows(rng, design, np.clip(p_s + gap, 0, 1), per_value))
        s_b = _tables(_rows(rng, design, p_s, per_value))
        t_a = t_b = np.full(s_a.shape, float(per_value * design.samples))
        rule, method = GAP, methods.CLUSTER_T
    design_variance = paired_design(s_a, t_a, s_b, t_b, strata, rule=rule)
    with rules_lowered():
        found = estimate_differences([("a", "b")] * reps, s_a, t_a, s_b, t_b, design_variance,
                                     method=method, confidence_level=1 - alpha)
    return float(np.mean([e.ci_low is not None and e.ci_high is not None
                          and not e.ci_low <= 0 <= e.ci_high for e in found]))


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


def pilot_variant_share(scores_files: list[Path]) -> float | None:
    """The share of the verdicts' variance between the variants of one base scenario, from
    finished scores: each target × metric's components (`stats.variance_components`), pooled
    weighted by their rows; None where no target and metric tells variants from samples."""
    from ..io import read_artifact
    from ..schemas import ScoresFile
    from ..stats.score_frames import scores_frame
    from ..stats.variance_components import variance_components

    frame = scores_frame(row for path in scores_files
                         for row in read_artifact(path, ScoresFile).rows)
    found = [(c.variant_share, c.n) for metrics in variance_components(frame).values()
             for c in metrics.values() if c.variant_share is not None]
    if not found:
        return None
    return float(sum(share * n for share, n in found) / sum(n for _, n in found))


def pilot_design(design: Design, scores_files: list[Path]) -> Design:
    """`design` with the pass rate, the ICC (ANOVA estimator over base scenarios within metrics,
    clipped to [0, 1)) and the variants' share of the variance (`pilot_variant_share`, where
    the pilot tells variants from samples) estimated from finished scores (ok rows only)."""
    groups = pilot_groups(scores_files)
    grand = float(np.concatenate(groups).mean())
    icc = anova_icc(groups)
    share = pilot_variant_share(scores_files)
    variant_share = design.variant_share if share is None else min(share, 1 - icc)
    return replace(design, rate=min(max(grand, 0.01), 0.99), icc=icc,
                   variant_share=variant_share)


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
