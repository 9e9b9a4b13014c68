"""Fixtures of the report tests; the helpers themselves live in report_artifacts."""

from __future__ import annotations

import pytest
from report_artifacts import write_project_artifacts

from pressurebench.paths import Layout


@pytest.fixture
def artifacts(tmp_path) -> Layout:
    """data/tiny with scenarios, conversations and scores of two targets (see report_artifacts)."""
    return write_project_artifacts(tmp_path)
