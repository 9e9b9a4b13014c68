"""The judge-corrected intervals' rules against a small seeded part of the judge-corrected
sweep (`pressurebench.stats.sweeps.judge.sweep`; `make judge-coverage` runs all of it into
docs/judge_coverage.md): the package never reports a corrected interval from a design that
the part finds covering less than 0.93 beyond Monte-Carlo error."""

from __future__ import annotations

from pressurebench.stats.sweeps.common import Sweep
from pressurebench.stats.sweeps.judge import (
    SWEEP_STATISTICS,
    sweep,
    sweep_measured_rules,
    sweep_rule_of,
)

BENCHMARKS = 150
BASES = (2, 3, 5)


def test_no_corrected_rule_is_below_what_a_part_of_the_sweep_measures():
    """4 metrics × 2, 3 and 5 base scenarios per metric, the worse judge (sensitivity and
    specificity 0.6), 10 labels per target × metric, 150 benchmarks per design (two
    Monte-Carlo standard errors: ±0.036): per interval type, the package's rule is at least
    the smallest of these designs from which every one covers (`measured_rules`), or, where
    none does, above them all."""
    cells = sweep(Sweep(benchmarks=BENCHMARKS, seed=5, metrics=(4,), base_per_metric=BASES),
                  judges=("Se 0.6, Sp 0.6",), per_cell=(10,))
    measured = sweep_measured_rules(cells, BENCHMARKS)
    below = {
        name: (measured[name], sweep_rule_of(name))
        for name in SWEEP_STATISTICS
        if sweep_rule_of(name) < (max(BASES) + 1 if measured[name] is None else measured[name])
    }
    assert not below, below
