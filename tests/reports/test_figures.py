"""Figures render for ordinary and awkward results, and never draw a missing rate as 0."""

from __future__ import annotations

import io

import matplotlib
import matplotlib.text
import pandas as pd
import pytest
from matplotlib.figure import Figure
from report_artifacts import results_of

from pressurebench.reports import figures
from pressurebench.reports.tables import error_breakdown
from pressurebench.stats.sweeps.synthetic import synthetic_scores

RESULT_FIGURES = [figures.forest_plot, figures.heatmap, figures.demographic_gap_plot,
                  figures.comparison_plot]
PNG = b"\x89PNG\r\n\x1a\n"


def three_targets():
    return results_of(synthetic_scores(
        target_rates={"a": 0.6, "b": 0.4, "c": 0.5}, metrics=3, base_per_metric=9,
        axes={"gender": ["f", "m"], "age": ["old", "young", "mid"]}, samples=2, error_rate=0.1,
        seed=0,
    ))


def one_target_many_metrics():
    return results_of(synthetic_scores(target_rates={"solo": 0.6}, metrics=14, base_per_metric=2,
                                       samples=1, seed=0))


def all_null():
    frame = synthetic_scores(target_rates={"a": 0.6, "b": 0.5}, metrics=2, base_per_metric=2,
                             axes={"gender": ["f", "m"]}, samples=1, seed=0)
    return results_of(frame.assign(status="error", passed=None))


CASES = {"three targets": three_targets, "one target, 14 metrics": one_target_many_metrics,
         "all null": all_null}


@pytest.fixture(scope="module", params=list(CASES))
def results(request):
    return CASES[request.param]()


def texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=60, metadata={"Software": None})
    return buf.getvalue()


@pytest.mark.parametrize("make", RESULT_FIGURES, ids=lambda f: f.__name__)
def test_renders_to_png(make, results, tmp_path):
    fig = make(results)
    assert isinstance(fig, Figure)
    path = tmp_path / f"{make.__name__}.png"
    fig.savefig(path)
    data = path.read_bytes()
    assert data.startswith(PNG) and len(data) > 2000


@pytest.mark.parametrize("make", RESULT_FIGURES, ids=lambda f: f.__name__)
def test_deterministic(make):
    r = three_targets()
    assert png(make(r)) == png(make(r))


def test_backend_untouched():
    backend = matplotlib.get_backend()
    figures.forest_plot(three_targets())
    assert matplotlib.get_backend() == backend


def test_forest_plot_puts_n_beside_every_rate():
    r = three_targets()
    labels = texts(figures.forest_plot(r))
    for rates in r.targets.values():
        for est in [rates.overall, *rates.by_metric.values()]:
            note = f"n={est.n}, {est.n_clusters} sc."
            assert (note + (", no CI" if est.ci_low is None else "")) in labels
    assert not any(t.startswith("no data") for t in labels)


def test_missing_rates_are_no_data_not_zero():
    r = all_null()
    forest = figures.forest_plot(r)
    assert not [line for line in forest.axes[0].lines if line.get_marker() in ("o", "|")]
    rows = 1 + 2  # overall and two metrics
    assert sum(t.startswith("no data") for t in texts(forest)) == rows * len(r.targets)
    assert "no data (4 errors)" in texts(forest)
    heat = figures.heatmap(r)
    assert texts(heat).count("no data") == rows * len(r.targets)
    gaps = figures.demographic_gap_plot(r)
    assert texts(gaps).count("no data") == len(r.targets)


def test_interval_not_containing_its_point_is_drawn_as_computed():
    r = three_targets()
    est = r.targets["a"].by_metric["m01"].model_copy(update={"rate": 0.0, "ci_low": 1e-17, "ci_high": 0.5})
    r.targets["a"].by_metric["m01"] = est
    ax = figures.forest_plot(r).axes[0]
    drawn = [list(line.get_xdata()) for line in ax.lines if line.get_marker() == "|"]
    assert [1e-17, 0.5] in drawn


def test_heatmap_annotates_rate_and_n():
    r = three_targets()
    annotations = texts(figures.heatmap(r))
    est = r.targets["b"].by_metric["m02"]
    assert f"{est.rate:.2f}\nn={est.n}" in annotations


def test_without_demographics_or_second_target_figures_say_so():
    r = one_target_many_metrics()
    assert texts(figures.demographic_gap_plot(r)) == ["No demographic variants: no gaps to show."]
    assert texts(figures.comparison_plot(r)) == ["One target: nothing to compare."]


def test_gap_plot_has_a_row_per_value_pair():
    fig = figures.demographic_gap_plot(three_targets())
    ticks = {ax.get_title(loc="left"): [t.get_text() for t in ax.get_yticklabels()] for ax in fig.axes}
    assert ticks == {"gender": ["f − m"], "age": ["mid − old", "mid − young", "old − young"]}


def single_scenario_pair():
    """Two targets on one base scenario: the ranks cannot be resampled, and the panel says why."""
    return results_of(synthetic_scores(target_rates={"a": 0.6, "b": 0.4}, metrics=1,
                                       base_per_metric=1, samples=3, seed=0))


@pytest.mark.parametrize("make", [three_targets, single_scenario_pair], ids=lambda f: f.__name__)
def test_the_notebook_image_holds_every_text_of_the_comparison_whole(make):
    """What the notebook shows (`_repr_png_`) is at least as large as the span of every caption,
    label and reason drawn: none is cut at the image's edge."""
    from matplotlib.transforms import Bbox
    from PIL import Image

    fig = figures.comparison_plot(make())
    image = Image.open(io.BytesIO(fig._repr_png_()))
    fig.set_dpi(figures.NOTEBOOK_DPI)
    renderer = fig._get_renderer()
    drawn = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip()]
    span = Bbox.union([t.get_window_extent(renderer) for t in drawn])
    inches = span.transformed(fig.dpi_scale_trans.inverted())
    assert image.size[0] / figures.NOTEBOOK_DPI >= inches.width - 0.02
    assert image.size[1] / figures.NOTEBOOK_DPI >= inches.height - 0.02


def test_comparison_shows_pairs_and_rank_probabilities():
    r = three_targets()
    fig = figures.comparison_plot(r)
    left, right = fig.axes[:2]
    assert [t.get_text() for t in left.get_yticklabels()] == ["a − b", "a − c", "b − c"]
    best = min(r.comparison.ranking.ranks, key=lambda x: x.rank)
    assert right.get_yticklabels()[0].get_text() == best.target
    assert f"{best.rank_probabilities[0]:.2f}" in texts(fig)


def test_error_plot_counts_and_explicit_zeros():
    errors = pd.DataFrame([
        {"target": "a", "stage": "simulate", "category": "conversation failed", "count": 3},
        {"target": "a", "stage": "evaluate", "category": "judges tied", "count": 2},
        {"target": "(scenario generation)", "stage": "gen_scenarios", "category": "base scenario", "count": 1},
    ])
    fig = figures.error_plot(errors, targets=["a", "b"])
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["a", "b", "(scenario generation)"]
    assert [t.strip() for t in texts(fig)] == ["5", "0", "1"]
    assert len(fig.axes[0].get_legend().get_texts()) == 3
    empty = figures.error_plot(error_breakdown([]), targets=["a"])
    assert [t.strip() for t in texts(empty)] == ["No error rows: every row of a has a verdict."]
    assert not empty.axes[0].axison  # a sentence, not an empty chart


def test_figures_display_in_notebooks_without_pyplot():
    fig = figures.heatmap(three_targets())
    assert fig._repr_png_().startswith(PNG)


@pytest.mark.parametrize("make", [figures.forest_plot, figures.heatmap], ids=lambda f: f.__name__)
def test_metric_names_are_drawn_as_written(make):
    names = {"m01": r"Quotes $\frac{a}{$ prices", "m02": "Costs $5 and $10"}
    fig = make(three_targets(), metric_names=names)
    png(fig)  # math mode would fail to parse the first name
    ticks = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert r"m01 Quotes \$\frac{a}{\$ prices" in ticks
