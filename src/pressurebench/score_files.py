"""A target's scores file (the evaluate stage's output), read and checked: the aggregate stage
and the validation studies read scores through here, so a file that holds another benchmark
or target is refused the same way everywhere."""

from __future__ import annotations

from pathlib import Path

from .errors import ConfigError
from .io import read_artifact
from .schemas import ScoresFile


def load_scores(path: Path, benchmark: str, target: str) -> ScoresFile:
    """The scores of `target` in `benchmark` at `path`; a missing file is an error naming it."""
    if not path.exists():
        raise ConfigError(
            path, f"no scores for target '{target}'; run the evaluate stage for it first"
        )
    scores = read_artifact(path, ScoresFile)
    if scores.benchmark != benchmark:
        raise ConfigError(
            path, f"holds benchmark '{scores.benchmark}', expected '{benchmark}'", "benchmark"
        )
    for field, found in [("target", scores.target)] + [
        (f"rows[{i}].target", s.target) for i, s in enumerate(scores.rows)
    ]:
        if found != target:
            raise ConfigError(path, f"holds target '{found}', expected '{target}'", field)
    return scores
