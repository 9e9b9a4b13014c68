"""Validation errors a user reads: every error listed, list items named by their ids."""

from __future__ import annotations

import pytest
import yaml

from pressurebench.errors import ConfigError
from pressurebench.io import read_yaml_model
from pressurebench.params import load_params
from pressurebench.schemas import Benchmark
from support import TINY_BENCHMARK, tiny_params


def test_an_error_in_a_metric_names_the_metric_by_its_id_not_its_position(tmp_path):
    data = dict(TINY_BENCHMARK)
    data["metrics"] = [dict(m) for m in data["metrics"]]
    data["metrics"][1]["type"] = "neutral"
    metric_id = data["metrics"][1]["id"]
    path = tmp_path / "benchmark.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as caught:
        read_yaml_model(path, Benchmark)
    assert f"{path}: metrics[{metric_id}].type: " in str(caught.value)
    assert "metrics[1]" not in str(caught.value)


def test_every_validation_error_is_listed_none_hidden_behind_a_count(tmp_path):
    params = tiny_params(generation={"turns": 0, "num_samples": 0, "perfunctory": 2.0},
                         statistics={"resamples": 1, "confidence_level": 2.0})
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(params))
    with pytest.raises(ConfigError) as caught:
        load_params(path)
    text = str(caught.value)
    assert "more error" not in text
    for field in ("generation.turns", "generation.num_samples", "generation.perfunctory",
                  "statistics.resamples", "statistics.confidence_level"):
        assert f"{path}: {field}: " in text, field
    assert len(text.splitlines()) == 5  # one line per error, each naming file and field
