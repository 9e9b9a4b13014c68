"""Checks of the rows a stage reads from an earlier one, made before any call.

A row of a metric the arm's benchmark no longer defines (a benchmark edited after the rows
were written) would become an error row, or a verdict against the wrong definition: it is an
input error, named by its file, row and metric, with the metrics the benchmark does define.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError


def check_metric_ids(
    row_metric_ids: list[str], known: list[str], path: Path, metrics_path: Path
) -> None:
    """Each row's metric id (in the order of the rows of `path`) is one of `known`, the
    metrics `metrics_path` defines, listed in the error in their given order."""
    for i, metric_id in enumerate(row_metric_ids):
        if metric_id not in known:
            raise ConfigError(
                path,
                f"metric '{metric_id}' is not defined in {metrics_path} "
                f"(known: {', '.join(known) or 'none'}); re-run the earlier stages",
                f"rows[{i}].metric_id",
            )
