"""The committed notebooks are valid nbformat 4.5: every cell has an id (nbformat warns that a
missing one "will become a hard error"), and no outputs are committed."""

from __future__ import annotations

import warnings

import nbformat
import pytest

from support import REPO

NOTEBOOKS = sorted((REPO / "notebooks").rglob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_notebook_is_valid_with_an_id_on_every_cell_and_no_outputs(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nb = nbformat.read(path, as_version=nbformat.NO_CONVERT)
        nbformat.validate(nb)
    ids = [cell.get("id") for cell in nb.cells]
    assert all(ids) and len(set(ids)) == len(ids)
    assert not any(cell.get("outputs") for cell in nb.cells)
