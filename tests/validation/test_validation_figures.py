"""Validation figures and tables render for ordinary and awkward arms, and never draw a missing
rate, rank or difference as 0."""

from __future__ import annotations

import io

import numpy as np
import pytest
from arm_data import paired_arms
from matplotlib.figure import Figure

from pressurebench.params import Statistics
from pressurebench.reports import validation_figures as vf
from pressurebench.reports import validation_tables as tables
from pressurebench.reports.tables import format_difference
from pressurebench.stats.sweeps.synthetic import synthetic_scores
from pressurebench.validation.generator_bias import compare_generator_arm
from pressurebench.validation.user_model_bias import compare_user_arm

STATS = Statistics(resamples=200, confidence_level=0.9, seed=1)
PNG = b"\x89PNG\r\n\x1a\n"


def generator_arm(rates, *, errors_in_arm=(), metrics=("m01", "m02")):
    main = synthetic_scores(target_rates=rates, metrics=2, base_per_metric=4, samples=1, seed=1)
    arm = synthetic_scores(target_rates=rates, metrics=2, base_per_metric=4, samples=1, seed=2)
    gone = arm["target"].isin(errors_in_arm)
    arm = arm.assign(
        status=np.where(gone, "error", arm["status"]).astype(object),
        passed=np.where(gone, None, arm["passed"]).astype(object),
    )
    return compare_generator_arm(
        main,
        arm,
        arm_name="generator/$cheap",
        generator="g",
        families={"g": "gpt", **{t: "gpt" if i == 0 else "other" for i, t in enumerate(rates)}},
        main_generator_family=None,
        metrics=list(metrics),
        metrics_handwritten=False,
        targets=list(rates),
        statistics=STATS,
    )


def user_arm(rates):
    main, arm = paired_arms(
        rates, {**rates, next(iter(rates)): 0.8}, metrics=2, base_per_metric=3, seed=3
    )
    return compare_user_arm(
        main,
        arm,
        arm_name="user/other",
        user_model="other",
        scenario_ids=sorted(main["scenario_id"].unique()),
        targets=list(rates),
        statistics=STATS,
    )


CASES = {
    "generator, four targets": lambda: generator_arm({"a": 0.3, "b": 0.5, "c": 0.6, "d": 0.7}),
    "generator, one target": lambda: generator_arm({"solo": 0.5}),
    "generator, one target without rows in the arm": lambda: generator_arm(
        {"a": 0.4, "b": 0.6}, errors_in_arm=("b",), metrics=()
    ),
    "generator, all null in the arm": lambda: generator_arm(
        {"a": 0.4, "b": 0.6}, errors_in_arm=("a", "b")
    ),
    "user, three targets": lambda: user_arm({"a": 0.3, "b": 0.5, "c": 0.7}),
}


@pytest.fixture(scope="module", params=list(CASES))
def result(request):
    return CASES[request.param]()


def texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=50, metadata={"Software": None})
    return buf.getvalue()


@pytest.mark.parametrize(
    "draw",
    [
        lambda r: vf.rates_plot(r, STATS.confidence_level),
        vf.rank_bump_chart,
        lambda r: vf.difference_forest_plot(r, STATS.confidence_level),
    ],
    ids=["rates", "bump", "forest"],
)
def test_every_figure_renders(result, draw):
    assert png(draw(result)).startswith(PNG)


def test_missing_rates_are_written_as_no_data(result):
    missing = [t for t in result.targets if result.rates_arm[t].rate is None]
    rates = texts(vf.rates_plot(result, STATS.confidence_level))
    assert sum(t.startswith("no data") for t in rates) == len(missing)
    forest = texts(vf.difference_forest_plot(result, STATS.confidence_level))
    undefined = [
        d
        for d in [*result.comparison.differences, *result.metric_differences]
        if d.difference is None
    ]
    assert sum(t.startswith("no data") for t in forest) == len(undefined)


def test_bump_chart_puts_each_target_at_its_rank_in_each_arm():
    result = generator_arm({"a": 0.2, "b": 0.5, "c": 0.8})
    fig = vf.rank_bump_chart(result)
    ax = fig.axes[0]
    left = vf.ranks({t: result.rates_main[t].rate for t in result.targets})
    points = {
        (line.get_xdata()[0], line.get_ydata()[0])
        for line in ax.lines
        if len(line.get_xdata()) == 1
    }
    assert {(0, left[t]) for t in result.targets} <= points
    assert vf.ranks({"x": 0.5, "y": 0.5, "z": 0.9, "w": None}) == {
        "x": 2.5,
        "y": 2.5,
        "z": 1.0,
        "w": None,
    }


def test_bump_chart_names_targets_without_a_rank():
    result = generator_arm({"a": 0.4, "b": 0.6}, errors_in_arm=("b",), metrics=())
    assert any("no data: b" in t for t in texts(vf.rank_bump_chart(result)))
    all_null = generator_arm({"a": 0.4}, errors_in_arm=("a",))
    assert all_null.rates_main["a"].rate is not None
    assert any("no data: a" in t for t in texts(vf.rank_bump_chart(all_null)))


def test_tables_show_dashes_not_zeros_for_missing_numbers():
    result = generator_arm({"a": 0.4, "b": 0.6}, errors_in_arm=("b",), metrics=())
    frame = tables.rates_frame(result).set_index("target")
    assert frame.loc["b", "arm"] == "—" and frame.loc["b", "difference"] == "—"
    assert frame.loc["b", "arm n"] == 0 and frame.loc["b", "arm n_error"] > 0
    assert frame.loc["a", "main scenarios"] == result.rates_main["a"].n_clusters > 0
    assert frame.loc["b", "arm scenarios"] == 0
    assert "no valid rows" in frame.loc["b", "note"]
    correlations = tables.correlation_frame(result)
    assert list(correlations["value"]) == ["—", "—", "—"]  # tau-b, its noise ceiling, rho
    assert all("at least 3" in note for note in correlations["note"])
    assert format_difference(0.1234, -0.01, 0.2) == "+12.3 pp [-1.0, +20.0]"
    assert format_difference(None, None, None) == "—"


def test_an_empty_order_flip_table_says_why():
    one = generator_arm({"a": 0.4})
    (row,) = tables.flips_frame(one).to_dict("records")
    assert row["pair"] == "—" and "two or more targets" in row["note"]
    two = tables.flips_frame(generator_arm({"a": 0.4, "b": 0.6}))
    assert list(two["pair"]) == ["a / b"] and "note" not in two
