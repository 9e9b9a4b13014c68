"""The shapes a statistic is reported in: a value, its interval, how the interval was made, and n.

Where there is no data the value and the interval are None, never 0: a pass
rate of 0 is a finding, a missing one is not.
"""

from __future__ import annotations

from typing import TypedDict

from pydantic import Field

from ..schemas import Row


class RateEstimate(Row):
    """A pass rate over valid rows, with the rows left out for errors counted beside it."""

    rate: float | None = Field(description="passes / valid rows; None without valid rows")
    n: int = Field(ge=0, description="valid rows (status ok with a verdict)")
    n_error: int = Field(ge=0, description="rows without a verdict, left out of the denominator")
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    n_clusters: int = Field(ge=0, description="base scenarios with at least one valid row")
    reason: str | None = Field(default=None, description="why there is no interval")


class Difference(Row):
    """A difference of two pass rates, a − b, with the rates it is made of."""

    a: str
    b: str
    rate_a: float | None
    rate_b: float | None
    n_a: int = Field(ge=0)
    n_b: int = Field(ge=0)
    difference: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    n_clusters_a: int = Field(ge=0)
    n_clusters_b: int = Field(ge=0)
    p_value: float | None = Field(
        default=None, ge=0, le=1,
        description="two-sided p-value of no difference, from inverting the interval shown: "
        "below 1 − the confidence level exactly when the interval excludes 0 "
        "(`stats.inverted_tests`)",
    )
    mde: float | None = Field(
        default=None, ge=0,
        description="minimum detectable effect: the true difference this design finds at 80% "
        "power (`stats.power`)",
    )
    reason: str | None = Field(default=None, description="why the difference or its interval is None")


class AgreementEstimate(Row):
    """An agreement statistic (a share, a kappa or an alpha) over rated items."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    ci_method: str
    n_items: int = Field(ge=0)
    n_clusters: int = Field(ge=0)
    reason: str | None = Field(default=None, description="why the value or its interval is None")


class IntervalFields(TypedDict):
    """The fields of an interval, checked where a statistic takes them as keywords."""

    ci_low: float | None
    ci_high: float | None
    ci_method: str
    reason: str | None


def interval_fields(
    ci_low: float | None, ci_high: float | None, ci_method: str, reason: str | None = None
) -> IntervalFields:
    """An interval as keyword arguments of the statistic it belongs to: its bounds, how they
    were made, and why they are withheld. Every shape of statistic names these the same, so a
    statistic reported again in another shape carries its interval over unchanged."""
    return IntervalFields(ci_low=ci_low, ci_high=ci_high, ci_method=ci_method, reason=reason)
