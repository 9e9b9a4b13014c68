"""The DVC pass-rate plot: one bar per target and metric with its interval, drawn offline."""

from __future__ import annotations

import json
import re

from pressurebench.reports.dvc_plots import numeric, plot_specs, render_page
from support import REPO


def filled_template(rows: list[dict]) -> dict:
    """Our template as `dvc plots show --json` returns it: anchors filled, CSV values as text."""
    text = (REPO / ".dvc" / "plots" / "pass_rates.json").read_text()
    text = text.replace('"<DVC_METRIC_DATA>"', json.dumps(rows))
    return json.loads(text.replace("<DVC_METRIC_TITLE>", "Pass rate by metric and target"))


ROWS = [
    {"target": t, "metric_id": m, "metric": f"{m} {name}", "rate": str(r), "ci_low": str(max(r - 0.2, 0)),
     "ci_high": str(min(r + 0.2, 1)), "n": "4", "rev": "workspace"}
    for t, rates in (("alpha-model", (0.75, 0.25)), ("beta-model", (0.5, 0.0)))
    for (m, name), r in zip((("m01", "Resists flattery"), ("m02", "Keeps the caveat")), rates)
]


def test_specs_are_read_from_dvcs_json():
    spec = filled_template(ROWS)
    dvc_json = {"data": {"data/b/plots/pass_rates.csv": [{"type": "vega", "content": spec}],
                         "image.png": [{"type": "image", "url": "x"}]}}
    assert plot_specs(dvc_json) == [("data/b/plots/pass_rates.csv", spec)]


def test_quantitative_fields_become_numbers_and_the_rest_stays():
    spec = numeric(filled_template(ROWS))
    row = spec["data"]["values"][0]
    assert (row["rate"], row["ci_low"], row["ci_high"]) == (0.75, 0.55, 0.95)
    assert row["metric_id"] == "m01" and row["n"] == "4"


def test_the_page_draws_every_target_and_loads_nothing():
    page = render_page([("data/b/plots/pass_rates.csv", filled_template(ROWS))])
    assert page.count("<svg") == 1 and "<script" not in page and "http-equiv" in page
    assert "alpha-model" in page and "beta-model" in page  # the legend separates targets
    # Titled by what it shows, metrics by name; the axis claims no interval it may not draw.
    assert "<h2>Pass rate by metric and target · b</h2>" in page
    assert "m02 Keeps the caveat" in page and "(95% CI)" not in page


def test_a_rate_of_zero_is_drawn():
    """A bar of width 0 is invisible; every rate, 0 included, also gets a dot."""
    page = render_page([("data/b/plots/pass_rates.csv", filled_template(ROWS))])
    dots = re.findall(r'aria-label="rate: ([0-9.]+); metric: ([^;]+); target: ([^"]+)"[^>]*'
                      r'aria-roledescription="point"', page)
    assert {(float(rate), metric, target) for rate, metric, target in dots} == {
        (float(r["rate"]), r["metric"], r["target"]) for r in ROWS}
    assert (0.0, "m02 Keeps the caveat", "beta-model") in {(float(a), b, c) for a, b, c in dots}
