"""Judging every conversation against every metric (`evaluation.evaluate_all_metrics`): each
conversation's judgements stay in its own base scenario within its own metric."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pressurebench.stats import methods
from pressurebench.stats.bootstrap import ClusterBootstrap
from pressurebench.stats.frame import CLUSTER_COLUMN, STRATUM_COLUMN, check_scores
from pressurebench.stats.rates import rate_estimate

METRICS = ["m01", "m02", "m03", "m04"]
TRUE_RATE = 0.7


def judged_against_every_metric(rng: np.random.Generator, base_per_metric: int = 12) -> pd.DataFrame:
    """Conversations of 4 metrics × `base_per_metric` base scenarios × 2 variants × 2 samples,
    each judged against all four metrics. A conversation's own verdict follows its base
    scenario's pass probability (Beta, ICC 1/3); an off-metric verdict copies the own verdict
    half the time and is a fresh draw from that probability otherwise."""
    rows = []
    for home in METRICS:
        for b in range(1, base_per_metric + 1):
            p = rng.beta(2 * TRUE_RATE, 2 * (1 - TRUE_RATE))
            base_id = f"{home}_s{b:03d}"
            for v in (1, 2):
                for sample in (0, 1):
                    own = bool(rng.uniform() < p)
                    for judged in METRICS:
                        passed = (own if judged == home or rng.uniform() < 0.5
                                  else bool(rng.uniform() < p))
                        unit = "" if judged == home else f"@{judged}"
                        rows.append({
                            "target": "t", "metric_id": judged, "metric_type": "positive",
                            "base_id": base_id + unit, "scenario_id": f"{base_id}_v{v:02d}{unit}",
                            "sample": sample, "status": "ok", "passed": passed,
                            CLUSTER_COLUMN: base_id, STRATUM_COLUMN: home,
                        })
    return pd.DataFrame(rows)


def test_every_judgement_of_a_conversation_lies_in_its_own_base_scenario():
    scores = judged_against_every_metric(np.random.default_rng(0), base_per_metric=3)
    check_scores(scores)
    boot = ClusterBootstrap.from_scores(scores)
    assert boot.n_clusters == 12  # 4 metrics × 3 base scenarios, not × 4 judged metrics
    est = rate_estimate(scores, boot)
    assert est.n_clusters == 12 and est.n == 4 * 3 * 2 * 2 * 4


@pytest.mark.slow
def test_clustering_on_the_own_base_scenario_keeps_the_coverage():
    """Off-metric verdicts copy the own one half the time: counting each judgement as its own
    cluster (`<base>@<metric>`) undercovers; the conversation's own base scenario does not."""
    rng = np.random.default_rng(2027)
    replications = 400
    own = separate = 0
    for _ in range(replications):
        scores = judged_against_every_metric(rng)
        as_own = rate_estimate(scores, ClusterBootstrap.from_scores(scores, resamples=1))
        apart = scores.drop(columns=[CLUSTER_COLUMN, STRATUM_COLUMN])
        as_separate = rate_estimate(apart, ClusterBootstrap.from_scores(apart, resamples=1))
        assert as_own.ci_method == methods.CLUSTER_T_WILSON
        own += as_own.ci_low <= TRUE_RATE <= as_own.ci_high
        separate += as_separate.ci_low <= TRUE_RATE <= as_separate.ci_high
    print(f"\ncoverage, own base scenario: {own / replications:.3f}; "
          f"each judgement its own cluster: {separate / replications:.3f}")
    assert own / replications >= 0.93
    assert separate / replications < 0.90
