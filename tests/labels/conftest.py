"""Fixtures of the labelling tests: a project with judged data (see label_data)."""

from __future__ import annotations

import pytest
from label_data import write_judged

from pressurebench.params import Params, load_params


@pytest.fixture
def judged(project):
    """The `project` with data/tiny judged by a panel; returns its params."""
    write_judged(project.root)
    return project


@pytest.fixture
def params(judged) -> Params:
    return load_params(judged.params_path)


@pytest.fixture
def checked(project):
    """The `project` with data/tiny judged and its fidelity checked (see label_data)."""
    write_judged(project.root, fidelity=True)
    return project
