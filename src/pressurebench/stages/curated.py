"""Curated scenarios: generated scenarios a researcher has reviewed, fixed or dropped.

`pressurebench scenarios export --benchmark B` writes the generated scenarios of
the main run to `benchmarks/<b>/scenarios.yaml`, an input beside the
hand-written metrics. Edit the rows there; move the base id of a scenario you
reject into `dropped`. From then on `gen_scenarios` uses the file:

- a base scenario with rows in the file is used exactly as written, whatever its
  id (scenarios written by hand are welcome); a variant missing from the file is
  reported as a generation error, never invented, and a row whose demographic is
  not a profile of `generation.demographics` is refused;
- a base id in `dropped` is neither used nor generated;
- every other slot up to `generation.scenarios_per_metric` is generated as before.

Validation arms of the generator-bias study generate their own scenarios and
never read this file: they measure what another generator writes.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from ..errors import ConfigError
from ..io import read_artifact, read_yaml_model, write_yaml_model
from ..schemas import Benchmark, Row, Scenario, ScenariosFile


class CuratedScenarios(Row):
    """`benchmarks/<b>/scenarios.yaml`."""

    rows: list[Scenario] = Field(default_factory=list)
    dropped: list[str] = Field(
        default_factory=list, description="base scenario ids never to use or generate"
    )

    @field_validator("rows")
    @classmethod
    def _unique(cls, rows: list[Scenario]):
        seen = set()
        for row in rows:
            if row.id in seen:
                raise ValueError(f"scenario id '{row.id}' appears twice")
            seen.add(row.id)
        return rows

    def base_ids(self) -> set[str]:
        return {r.base_id for r in self.rows}


def curated_source(benchmark: str, root: str | Path = ".") -> Path:
    return Path(root) / "benchmarks" / benchmark / "scenarios.yaml"


def load_curated(
    path: Path, metrics: Benchmark, profiles: list[dict[str, str]]
) -> CuratedScenarios | None:
    """The curated file, checked against the metrics and the demographic profiles of the params;
    None when there is none."""
    if not path.is_file():
        return None
    curated = read_yaml_model(path, CuratedScenarios)
    known = {m.id for m in metrics.metrics}
    allowed = {tuple(sorted(p.items())) for p in profiles}
    for i, row in enumerate(curated.rows):
        if row.metric_id not in known:
            raise ConfigError(path, f"metric '{row.metric_id}' is not one of the metrics "
                              f"({', '.join(sorted(known))})", f"rows[{i}].metric_id")
        if tuple(sorted(row.demographic.items())) not in allowed:
            raise ConfigError(path, f"{row.demographic or 'no demographic'} is not one of the "
                              "profiles of generation.demographics", f"rows[{i}].demographic")
    for i, base in enumerate(curated.dropped):
        if base in curated.base_ids():
            raise ConfigError(path, f"'{base}' is both dropped and listed in rows", f"dropped[{i}]")
    return curated


def export_curated(scenarios_file: Path, out: Path, *, force: bool = False) -> int:
    """Write the generated scenarios as an editable curated file; returns the rows written."""
    if out.exists() and not force:
        raise ConfigError(out, "exists: it holds curated scenarios; pass --force to replace it")
    generated = read_artifact(scenarios_file, ScenariosFile)
    write_yaml_model(out, CuratedScenarios(rows=generated.rows))
    return len(generated.rows)
