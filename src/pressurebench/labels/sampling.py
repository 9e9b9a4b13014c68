"""Which score rows people label: a seeded draw per target and judged metric.

Stratified by (target, metric) so every cell a pass rate is reported for gets
its judge checked, not only the largest. With a judge panel, rows on which the
judges disagree are the likeliest to be judged wrong, so they are drawn first,
up to `labels.disagreement_share` of the cell; the rest come from the rows the
panel agreed on. Within a stratum the draw is uniform, so an analysis can weigh
each stratum back to its size (`ExportedItem.stratum_rows`).

Each cell is drawn with a generator seeded from the seed and the cell's key,
from its rows in id order: the draw is the same for a seed whatever the order
of the files, and a cell's draw does not change when other cells gain or lose
rows (a new target does not reshuffle the labels already collected).
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..schemas import Score

Stratum = Literal["disagreement", "agreement"]


def panel_disagrees(score: Score) -> bool:
    """More than one judge gave a verdict, and the verdicts differ."""
    verdicts = {j.present for j in score.judges if j.status == "ok" and j.present is not None}
    return len(verdicts) > 1


@dataclass(frozen=True)
class Drawn:
    score: Score
    stratum: Stratum
    stratum_rows: int


def cell_rng(seed: int, target: str, metric_id: str) -> random.Random:
    digest = hashlib.sha256(f"{seed}\x00{target}\x00{metric_id}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def draw_cell(
    rows: list[Score], *, per_cell: int, disagreement_share: float, rng: random.Random
) -> list[Drawn]:
    """`per_cell` rows (all when fewer), disagreements first up to their share."""
    rows = sorted(rows, key=lambda s: s.conv_id)
    disagree = [s for s in rows if panel_disagrees(s)]
    agree = [s for s in rows if not panel_disagrees(s)]
    size = min(per_cell, len(rows))
    n_disagree = min(len(disagree), round(disagreement_share * size))
    n_agree = min(len(agree), size - n_disagree)
    n_disagree = min(len(disagree), size - n_agree)  # too few agreements: fill with the others
    return [
        Drawn(s, "disagreement", len(disagree)) for s in rng.sample(disagree, n_disagree)
    ] + [Drawn(s, "agreement", len(agree)) for s in rng.sample(agree, n_agree)]


def draw(
    scores: Iterable[Score], *, per_cell: int, disagreement_share: float, seed: int
) -> list[Drawn]:
    """The sample of ok score rows (rows with a verdict), cell by cell in (target, metric) order."""
    cells: dict[tuple[str, str], list[Score]] = defaultdict(list)
    for s in scores:
        if s.status == "ok" and s.present is not None:
            cells[(s.target, s.metric_id)].append(s)
    out: list[Drawn] = []
    for (target, metric_id), rows in sorted(cells.items()):
        out += draw_cell(
            rows, per_cell=per_cell, disagreement_share=disagreement_share,
            rng=cell_rng(seed, target, metric_id),
        )
    return out
