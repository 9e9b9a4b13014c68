"""Which families of tests are corrected for multiplicity, and how: the declared policy.

A study reports many intervals, and with many of them some will exclude 0 by chance alone. A
reader needs to know which numbers were read as one family, whose chance of any false finding
is kept at 1 − the confidence level, and which are single estimates. The policy (stated beside
each table it governs in the reports, and in docs/statistics.md):

- every p-value inverts the interval beside it (`stats.inverted_tests`), so "p < α" and
  "the interval excludes 0" never disagree;
- a family's p-values are adjusted with Holm's step-down (`holm_adjust`, Holm 1979), which
  controls the family-wise error under any dependence between them; a difference is starred
  ("significant after correction") where its adjusted p-value is below α;
- the families are `FAMILIES`: the pairs of targets (over all metrics), each pair's
  per-metric differences, each target's pairs of values of one demographic axis, each
  validation arm's differences (per target and per target × metric), and the turns of each
  pair of capitulation curves;
- rates and capitulation bands are estimates, not tests: their intervals are pointwise 95%
  intervals and are not adjusted (a per-metric table of rates claims 95% for each row, not
  for all rows at once).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from pydantic import Field

from ..schemas import Row

HOLM = "holm"
NOT_ADJUSTED = "none (pointwise intervals)"


class Family(Row):
    """One family of a results file: which numbers it holds, how it is adjusted, its size."""

    table: str = Field(description="the table of the results the family governs")
    family: str = Field(description="which differences are read as one family")
    adjustment: str = Field(description=f"'{HOLM}' or '{NOT_ADJUSTED}'")
    n_families: int = Field(ge=0, description="families of this kind in the study")
    largest: int = Field(ge=0, description="p-values in the largest of them")


# table: (family, adjustment), in the order the results report shows them.
FAMILIES: dict[str, tuple[str, str]] = {
    "pass rates": ("each rate is its own estimate", NOT_ADJUSTED),
    "differences between targets": ("every pair of targets, over all metrics", HOLM),
    "differences between targets per metric": ("each pair of targets: every metric", HOLM),
    "demographic gaps": ("each target and demographic axis: every pair of its values", HOLM),
    "capitulation bands": ("each turn's band is its own estimate", NOT_ADJUSTED),
    "capitulation curve differences": ("each pair of targets: every turn of its curves", HOLM),
    "validation arm differences": ("each arm: per target and per target × metric", HOLM),
}


def holm_adjust(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values of one family; NaN entries are not in the family."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    tested = np.flatnonzero(np.isfinite(p))
    m = len(tested)
    if m == 0:
        return out
    order = tested[np.argsort(p[tested], kind="stable")]
    steps = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(steps)
    return out


class Corrected(Row):
    """A difference's p-value adjusted within its family (its own `p_value` inverts its
    interval)."""

    p_holm: float | None = Field(description="Holm-adjusted p-value within the family")
    holm_significant: bool | None = Field(
        description="p_holm below 1 − confidence level: a difference after correcting for "
        "the number of comparisons (its interval then excludes 0)"
    )


def holm_by_family(
    p_values: Sequence[float | None], keys: Sequence[Hashable], confidence_level: float
) -> tuple[list[dict], dict[Hashable, int]]:
    """Per p-value (None: not tested), the fields of `Corrected` with Holm's adjustment run
    within the members of its family (`keys`: one family key per p-value); and per family,
    its number of p-values."""
    p = np.array([np.nan if v is None else v for v in p_values], dtype=float)
    adjusted = np.full(len(p), np.nan)
    members: dict[Hashable, list[int]] = {}
    for i, key in enumerate(keys):
        members.setdefault(key, []).append(i)
    for indices in members.values():
        adjusted[indices] = holm_adjust(p[indices])
    alpha = 1.0 - confidence_level
    fields = [{"p_holm": float(adjusted[i]), "holm_significant": bool(adjusted[i] < alpha)}
              if np.isfinite(p[i]) else {"p_holm": None, "holm_significant": None}
              for i in range(len(p))]
    sizes = {key: int(np.isfinite(p[indices]).sum()) for key, indices in members.items()}
    return fields, sizes


def family(table: str, sizes: list[int]) -> Family:
    """The declared family of `table`, with the number of p-values in each of its families in
    this study (`sizes`)."""
    what, adjustment = FAMILIES[table]
    return Family(table=table, family=what, adjustment=adjustment, n_families=len(sizes),
                  largest=max(sizes, default=0))
