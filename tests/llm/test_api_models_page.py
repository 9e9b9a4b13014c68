"""docs/api-models.md: every provider that calls an API has its section with a complete params
file, and each of those files is valid params (the providers' rules included), as a user would
copy it."""

from __future__ import annotations

import re

import pytest
import yaml

from pressurebench.llm.providers.registry import api_class, provider_names
from pressurebench.params import load_params
from support import REPO

PAGE = REPO / "docs" / "api-models.md"


def blocks() -> list[dict]:
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", PAGE.read_text(), re.DOTALL)]


def test_every_api_provider_has_a_params_example_on_the_page():
    shown = {spec["provider"] for block in blocks() for spec in block["models"].values()}
    remote = {n for n in provider_names() if not api_class(n).embedded and not api_class(n).conversations_imported}
    assert remote <= shown


@pytest.mark.parametrize("index", range(len(blocks())))
def test_each_example_is_valid_params(index, tmp_path):
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(blocks()[index]))
    load_params(path)


def test_the_three_provider_section_shows_the_shipped_example():
    shipped = yaml.safe_load((REPO / "params" / "examples" / "three-providers-gemini-judge.yaml").read_text())
    shown = next(b for b in blocks() if len({s["provider"] for s in b["models"].values()}) == 3)
    assert shown["models"] == shipped["models"]
    assert (shown["roles"], shown["targets"]) == (shipped["roles"], shipped["targets"])
    assert shown["run"]["max_cost_usd"] == shipped["run"]["max_cost_usd"]
