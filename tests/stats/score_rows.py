"""Hand-written score rows for the statistics tests."""

from __future__ import annotations

import pandas as pd

TYPES = {"m01": "positive", "m02": "negative", "m03": "positive"}


def row(
    metric: str = "m01",
    base: int = 1,
    variant: int = 1,
    sample: int = 0,
    passed: bool | None = True,
    *,
    target: str = "t",
    status: str | None = None,
    **extra,
) -> dict:
    """One score row; its status is "error" when there is no verdict unless given."""
    base_id = f"{metric}_s{base:03d}"
    return {
        "target": target,
        "metric_id": metric,
        "metric_type": TYPES[metric],
        "base_id": base_id,
        "scenario_id": f"{base_id}_v{variant:02d}",
        "sample": sample,
        **extra,
        "status": status or ("error" if passed is None else "ok"),
        "passed": passed,
    }


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame.from_records(rows)


def clusters(pattern: dict[int, list[bool | None]], metric: str = "m01", **kw) -> list[dict]:
    """Rows of several base scenarios of one metric: {base: [verdict of each variant]}."""
    return [
        row(metric, base, variant, passed=verdict, **kw)
        for base, verdicts in pattern.items()
        for variant, verdict in enumerate(verdicts, 1)
    ]
