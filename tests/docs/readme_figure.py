"""Draw the figure README.md and the site's home page show: a results report's forest plot.

The study is simulated (`pressurebench.stats.sweeps.synthetic`: two targets with true pass rates 0.75 and
0.55, 4 metrics × 30 base scenarios × 2 variants × 2 samples, 3% error rows), so the figure
shows what a report draws at a design large enough for intervals, with numbers whose truth
is known; it is drawn by the package's own `build_results` and `forest_plot`.

Run from tests/docs/: `PYTHONPATH=.. python readme_figure.py ../../docs/images/forest_plot.png`
(tests/docs/test_site.py draws it into a scratch folder on every run).
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from pressurebench.reports.figures import forest_plot
from pressurebench.stats.results import build_results
from pressurebench.stats.sweeps.synthetic import synthetic_scores


def draw(out: Path) -> Path:
    scores = synthetic_scores(
        target_rates={"assistant-a": 0.75, "assistant-b": 0.55},
        metrics=4,
        base_per_metric=30,
        axes={"age": ["teenager", "retiree"]},
        samples=2,
        error_rate=0.03,
        judges=1,
        seed=20261127,
    )
    results = build_results(scores, resamples=200, confidence_level=0.95, seed=1,
                            benchmark="simulated")
    figure = forest_plot(results)
    figure.savefig(out, dpi=110, bbox_inches="tight", metadata={"Software": None})
    return out


if __name__ == "__main__":
    draw(Path(sys.argv[1]))
