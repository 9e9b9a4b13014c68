"""How the coverage sweeps write their pages: markdown tables, the table of the rules a sweep
measures, the lowest and highest coverage per design, and the page and its JSON summary.

Every sweep's page reads the same way (the rules, then per number of metrics a design table,
then every cell), so the tables are built here once and each sweep says only what goes in
them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .common import HIGH, LOW, Measured, MeasuredDesign, covers, measured_rules


class Designed(Protocol):
    """A sweep's cell, as far as a page groups it: its number of metrics and base scenarios
    per metric."""

    @property
    def metrics(self) -> int: ...

    @property
    def base_per_metric(self) -> int: ...


C = TypeVar("C", bound=Designed)


def table(header: Sequence[str], rows: Iterable[Sequence[object]],
          align: Sequence[str] | None = None) -> list[str]:
    """A markdown table's lines: the header, its alignment row (`align`, one `---` or `---:`
    per column; left by default) and one line per row, each value as `str` gives it."""
    return [
        "| " + " | ".join(header) + " |",
        "|" + "".join(f"{a}|" for a in (align or ["---"] * len(header))),
        *("| " + " | ".join(map(str, row)) + " |" for row in rows),
    ]


def rules_table(
    names: Sequence[str], governed_by: Mapping[str, tuple[str, str]],
    measured: Mapping[str, int | None], package: Callable[[str], object], *,
    first: str = "statistic", found: str = "measured", beyond: str = "beyond the sweep",
) -> list[str]:
    """The rules a sweep measures: per statistic the rule and side governing it, the smallest
    design from which it covers (`beyond` where no design of the sweep does) and what the
    package requires."""
    return table(
        [first, "rule", found, "package"],
        ([name, "{} ({})".format(*governed_by[name]),
          beyond if measured[name] is None else measured[name], package(name)]
         for name in names),
    )


def measured_rules_table(
    cells: Sequence[Measured], benchmarks: int, names: Sequence[str],
    governed_by: Mapping[str, tuple[str, str]], package: Callable[[str], object], *,
    first: str = "statistic", found: str = "measured", beyond: str = "beyond the sweep",
) -> list[str]:
    """`rules_table` of the rules `cells` measure (`common.measured_rules`, each read with the
    Monte-Carlo error of `benchmarks` studies unless it counts its own): how most sweeps show
    their rules."""
    return rules_table(names, governed_by, measured_rules(cells, benchmarks, names), package,
                       first=first, found=found, beyond=beyond)


def by_design(
    cells: Sequence[C], statistics: Sequence[str], *, over: str,
    shown: Callable[[list[C], str], str], rule_of: Callable[[str], int],
    first: str = "statistic", level: str = "###", withheld: str = "({}, withheld)",
) -> list[str]:
    """Per number of metrics, a table of the coverage per statistic and base scenarios per
    metric over the rest of the design (`over`): what `shown` makes of the cells at that
    design, marked as `withheld` below the statistic's rule."""
    sizes = sorted({c.base_per_metric for c in cells})
    lines: list[str] = []
    for m in sorted({c.metrics for c in cells}):
        rows = []
        for name in statistics:
            row = [name]
            for k in sizes:
                text = shown([c for c in cells if c.metrics == m and c.base_per_metric == k],
                             name)
                row.append(text if k >= rule_of(name) else withheld.format(text))
            rows.append(row)
        lines += [
            "",
            f"{level} {m} metrics: lowest and highest coverage over {over}",
            "",
            *table([first, *(f"{k} per metric" for k in sizes)], rows),
        ]
    return lines


def coverage_range(values: Sequence[float], ok: Callable[[float], bool]) -> str:
    """The lowest and highest of `values` ("none" without any), marked ✗ where one is not
    `ok`."""
    if not values:
        return "none"
    flag = "" if all(ok(v) for v in values) else " ✗"
    return f"{min(values):.3f}–{max(values):.3f}{flag}"


def short_ranges(tolerance: float = 0.0) -> Callable[[Sequence[MeasuredDesign], str], str]:
    """What `by_design` shows of most sweeps' cells: a statistic's lowest and highest coverage
    among the cells that reported it (`coverage_range`), ✗ where one falls short of the band
    by more than `tolerance` (`common.covers`)."""

    def shown(cells: Sequence[MeasuredDesign], name: str) -> str:
        return coverage_range([value for c in cells if (value := c.coverage[name]) is not None],
                              lambda value: covers(value, tolerance))

    return shown


def listing(pairs: Sequence[tuple[Measured, str]], where: Callable[[Any], str]) -> str:
    """Cells outside the band, each as its statistic, where it lies (`where`) and its coverage;
    "none" without any."""
    return "; ".join(f"{name} {where(c)} ({c.coverage[name]:.3f})" for c, name in pairs) or "none"


def with_share(coverage: float | None, share: float) -> str:
    """A cell's coverage beside the share of benchmarks given an interval ("none": never)."""
    return "none" if coverage is None else f"{coverage:.3f} ({share:.2f})"


def summary(
    bounds: Iterable[tuple[str, int, int, float, float]], *, benchmarks: int,
    confidence_level: float, names: Sequence[str] = (),
) -> dict:
    """What `pressurebench.stats.interval_rules.grid_coverage` reads: per statistic, number of
    metrics and base scenarios per metric, the lowest and highest coverage of the cells there
    (`bounds`: one (statistic, metrics, base scenarios per metric, lowest, highest) per cell
    that reported it), rounded as the pages show them; `names` are listed even where no cell
    reported them."""
    ranges: dict[str, dict[str, dict[str, list[float]]]] = {name: {} for name in names}
    for name, m, k, low, high in bounds:
        found = ranges.setdefault(name, {}).setdefault(str(m), {}).setdefault(
            str(k), [low, high])
        found[0], found[1] = min(found[0], low), max(found[1], high)
    rounded = {name: {m: {k: [round(lo, 3), round(hi, 3)] for k, (lo, hi) in by_k.items()}
                      for m, by_k in by_m.items()} for name, by_m in ranges.items()}
    return {"benchmarks": benchmarks, "confidence_level": confidence_level, "band": [LOW, HIGH],
            "coverage": rounded}


def write_page(text: str, out: str | None, *, end: str = "\n") -> None:
    """The page into the file `out`, or printed (followed by `end`) without one."""
    if out:
        Path(out).write_text(text, encoding="utf-8")
    else:
        print(text, end=end)


def write_summary(found: dict, path: str | None) -> None:
    """A sweep's summary as the package reads it (`stats/coverage/*.json`), where asked."""
    if path:
        Path(path).write_text(json.dumps(found, indent=1, sort_keys=True) + "\n",
                              encoding="utf-8")
