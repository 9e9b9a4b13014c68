"""The Makefile's entry points as a user's shell runs them."""

from __future__ import annotations

import os
import subprocess

from support import REPO


def test_make_lab_starts_jupyter_as_root_where_the_user_is_root():
    """Jupyter refuses root without --allow-root; containers and lab servers often run as root."""
    proc = subprocess.run(["make", "-n", "-W", ".venv/.installed-stamp", "lab"], cwd=REPO,
                          capture_output=True, text=True, check=True)
    command = proc.stdout.strip().splitlines()[-1]
    assert command.startswith("jupyter lab")
    assert ("--allow-root" in command) == (os.geteuid() == 0)
