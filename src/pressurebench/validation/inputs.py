"""Reading what the comparisons compare: score rows of an arm, and the metrics two arms share."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from ..io import read_artifact
from ..paths import Layout
from ..schemas import Benchmark, Manifest, Score
from ..stats.bootstrap import ClusterBootstrap
from ..stats.estimates import RateEstimate
from ..stats.rates import no_data, rates_by
from ..stats.score_frames import load_scores, scores_frame


def arm_scores(layout: Layout, targets: Iterable[str]) -> list[Score]:
    """Every score row of the targets in one arm; a missing scores file is an error naming it."""
    return [
        s for t in targets for s in load_scores(layout.scores_file(t), layout.benchmark, t).rows
    ]


def frame_of(scores: list[Score]) -> pd.DataFrame:
    """The statistics' score frame; an empty list gives an empty frame with the same columns."""
    frame = scores_frame(scores)
    return frame.assign(target=frame["target"].astype(str))


def shared_metrics(main: Benchmark, arm: Benchmark) -> list[str]:
    """Metric ids both benchmarks define identically (type and definition): only those compare."""
    theirs = {m.id: m for m in arm.metrics}
    return sorted(
        m.id
        for m in main.metrics
        if m.id in theirs and (m.type, m.definition) == (theirs[m.id].type, theirs[m.id].definition)
    )


def rates_per_target(
    frame: pd.DataFrame,
    targets: list[str],
    *,
    resamples: int,
    confidence_level: float,
    seed: int,
) -> dict[str, RateEstimate]:
    """Each target's pass rate in one arm with its cluster-bootstrap interval; no data is null."""
    if frame.empty:
        return {t: no_data() for t in targets}
    bootstrap = ClusterBootstrap.from_scores(frame, resamples=resamples, seed=seed)
    found = rates_by(frame, bootstrap, "target", confidence_level=confidence_level)
    return {t: found.get(t, no_data()) for t in targets}


def main_generator(layout: Layout) -> str | None:
    """The model that wrote the main arm's scenarios, from its gen_scenarios manifest.

    None when there is no manifest (scenarios imported from elsewhere): the
    params' current generator need not be the one that wrote them.
    """
    path = layout.manifest_file("gen_scenarios")
    if not path.exists():
        return None
    generator = read_artifact(path, Manifest).params.get("generator")
    return str(generator) if generator else None


def main_user_model(layout: Layout, targets: Iterable[str]) -> str | None:
    """The model that played the user in the main arm, from the targets' simulate manifests.

    None without manifests; several models (targets simulated at different
    times with different params) are listed, comma-separated.
    """
    found = []
    for target in targets:
        path = layout.manifest_file("simulate", target)
        if path.exists():
            found.append(str(read_artifact(path, Manifest).params.get("user_model")))
    return ", ".join(sorted(set(found))) or None
