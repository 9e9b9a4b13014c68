"""Shared fixtures: a scratch project directory with valid params, and scripted models."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))

from fakes import Script

# Hooks: under CI=true a skip for a missing tool fails the run.
from skips_by_design import (  # noqa: F401
    pytest_collectreport,
    pytest_runtest_makereport,
    pytest_sessionfinish,
    pytest_terminal_summary,
)
from support import TINY_BENCHMARK, tiny_params


@dataclass
class Project:
    root: Path
    params_path: Path

    def write_params(self, **overrides) -> Path:
        """Rewrite params/pipeline.yaml with `tiny_params(**overrides)`."""
        self.params_path.write_text(yaml.safe_dump(tiny_params(**overrides), sort_keys=False))
        return self.params_path


@pytest.fixture
def project(tmp_path, monkeypatch) -> Project:
    """A scratch project root (cwd) with params/pipeline.yaml and benchmarks/tiny/benchmark.yaml."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params").mkdir()
    (tmp_path / "benchmarks" / "tiny").mkdir(parents=True)
    (tmp_path / "benchmarks" / "tiny" / "benchmark.yaml").write_text(yaml.safe_dump(TINY_BENCHMARK))
    proj = Project(tmp_path, tmp_path / "params" / "pipeline.yaml")
    proj.write_params()
    return proj


@pytest.fixture
def script():
    """A Script whose responder the test sets: `script.responder = lambda model_id, req: ...`."""
    return Script(responder=lambda model_id, req: "ok")


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch):
    """Tests never see the developer's real credentials."""
    for var in list(os.environ):
        if var.endswith("_API_KEY"):
            monkeypatch.delenv(var, raising=False)


@pytest.fixture
def mock_server():
    """A mock OpenAI + Anthropic server on 127.0.0.1 (key `test-key`), stopped after the test."""
    from mock_providers import MockLLMServer

    with MockLLMServer(api_key="test-key") as server:
        yield server

