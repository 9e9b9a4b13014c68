"""The DVC pass-rate plot: one bar per target and metric with its interval, drawn offline."""

from __future__ import annotations

import json

from pressurebench.reports.dvc_plots import numeric, plot_specs, render_page
from support import REPO


def filled_template(rows: list[dict]) -> dict:
    """Our template as `dvc plots show --json` returns it: anchors filled, CSV values as text."""
    text = (REPO / ".dvc" / "plots" / "pass_rates.json").read_text()
    text = text.replace('"<DVC_METRIC_DATA>"', json.dumps(rows))
    return json.loads(text.replace("<DVC_METRIC_TITLE>", "Pass rate by metric and target"))


ROWS = [
    {"target": t, "metric_id": m, "rate": str(r), "ci_low": str(max(r - 0.2, 0)),
     "ci_high": str(min(r + 0.2, 1)), "n": "4", "rev": "workspace"}
    for t, rates in (("alpha-model", (0.75, 0.25)), ("beta-model", (0.5, 0.0)))
    for m, r in zip(("m01", "m02"), rates)
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
    assert "pass rate (95% CI)" in page
