"""The judge probes' statistics on planted verdicts: a flip is a row whose verdict moved between
two readings of the same transcript, counted only where both readings have one; its rate gets
the pass rate's cluster-t interval over base scenarios, withheld where the design is too small."""

from __future__ import annotations

import numpy as np
import pytest

from pressurebench.stats import methods
from pressurebench.stats.sweeps.synthetic import synthetic_scores
from pressurebench.validation.judge_probes import flip_frame, flip_rates
from pressurebench.validation.paired import paired_rows

SETTINGS = {"resamples": 200, "seed": 1, "confidence_level": 0.95}


def planted(base_per_metric: int, flip_share: float, seed: int = 0):
    main = synthetic_scores(target_rates={"t": 0.5}, metrics=2, base_per_metric=base_per_metric,
                            axes={"age": ["young", "old"]}, samples=1, seed=seed)
    main = main.assign(target=main["target"].astype(str))
    flipped = np.random.default_rng(seed).uniform(size=len(main)) < flip_share
    probe = main.assign(passed=np.where(flipped, ~main["passed"].astype(bool),
                                        main["passed"]).astype(object))
    return main, probe, flipped


def rates(main, probe):
    masked_main, masked_probe, _, _ = paired_rows(main, probe)
    return flip_rates(flip_frame(masked_main, masked_probe), ["t"], **SETTINGS)


def test_the_flip_rate_is_the_share_of_rows_whose_verdict_moved_with_a_cluster_interval():
    main, probe, flipped = planted(base_per_metric=12, flip_share=0.3)
    overall, *by_metric = rates(main, probe)
    est = overall.estimate
    assert overall.metric_id is None and est.rate == pytest.approx(flipped.mean())
    assert (est.n, est.n_error, est.n_clusters) == (len(main), 0, 24)
    assert est.ci_method == methods.CLUSTER_T_WILSON and est.ci_low < est.rate < est.ci_high
    assert [f.metric_id for f in by_metric] == sorted(set(main["metric_id"]))
    assert sum(f.estimate.n for f in by_metric) == est.n


def test_a_row_without_a_verdict_in_either_reading_is_left_out_and_counted():
    main, probe, _ = planted(base_per_metric=12, flip_share=0.0)
    probe = probe.assign(status=np.where(np.arange(len(probe)) < 5, "error", "ok").astype(object),
                         passed=np.where(np.arange(len(probe)) < 5, None,
                                         probe["passed"]).astype(object))
    (overall, *_) = rates(main, probe)
    assert (overall.estimate.rate, overall.estimate.n, overall.estimate.n_error) == (
        0.0, len(main) - 5, 5)


def test_a_design_too_small_withholds_the_interval_with_its_reason():
    main, probe, _ = planted(base_per_metric=1, flip_share=0.5)
    (overall, *_) = rates(main, probe)
    assert overall.estimate.rate is not None and overall.estimate.ci_low is None
    assert "single base scenario" in overall.estimate.reason
