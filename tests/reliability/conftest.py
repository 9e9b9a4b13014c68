"""Fixtures of the reliability tests: one mock server per module and a finished project to copy."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from reliability_support import KEY_ENV, MOCK_KEY, mock_params, run_pipeline, write_project

from mock_providers import MockLLMServer


@pytest.fixture(scope="module")
def server():
    """A mock OpenAI + Anthropic server without faults, shared by the tests of one module."""
    with MockLLMServer(api_key=MOCK_KEY) as s:
        yield s


@pytest.fixture(scope="module")
def finished_project(tmp_path_factory, server) -> Path:
    """A project after a complete pipeline run against `server`: data, cache and manifests."""
    root = tmp_path_factory.mktemp("finished")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        mp.setenv(KEY_ENV, MOCK_KEY)
        write_project(root, mock_params(server))
        run_pipeline()
    return root


@pytest.fixture
def proj(finished_project, tmp_path, monkeypatch, server) -> Path:
    """A copy of the finished project as the working directory, the key set, the server's counts at 0."""
    root = tmp_path / "project"
    shutil.copytree(finished_project, root)
    monkeypatch.chdir(root)
    monkeypatch.setenv(KEY_ENV, MOCK_KEY)
    server.reset()
    return root
