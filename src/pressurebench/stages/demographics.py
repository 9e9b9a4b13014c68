"""Demographic profiles: the Cartesian product of the params' demographic axes.

The order is fixed (axes in params order, values in params order, the last axis
varying fastest) because a variant's number in its lineage id (`_v03`) is its
position in this product: the same params must always give the same ids.
"""

from __future__ import annotations

import itertools

Profile = dict[str, str]


def profiles(axes: dict[str, list[str]]) -> list[Profile]:
    """Every combination of one value per axis; `[{}]` (one neutral profile) when there are no axes."""
    names = list(axes)
    return [dict(zip(names, combo)) for combo in itertools.product(*(axes[n] for n in names))]


def describe(profile: Profile) -> str:
    """`age: teenager; gender: woman`: how a profile is shown to the generator."""
    return "; ".join(f"{axis}: {value}" for axis, value in profile.items())
