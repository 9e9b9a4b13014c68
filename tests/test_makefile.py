"""The Makefile's entry points as a user's shell runs them."""

from __future__ import annotations

import os
import subprocess

from support import REPO


def test_make_lab_starts_jupyter_as_root_where_the_user_is_root():
    """Jupyter refuses root without --allow-root; containers and lab servers often run as root."""
    # As a user's shell runs it: not as a sub-make of `make test` (which would add its flags and
    # "Entering directory" lines).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    proc = subprocess.run(["make", "-n", "-W", ".venv/.installed-stamp", "lab"], cwd=REPO,
                          capture_output=True, text=True, check=True, env=env)
    (command,) = [line for line in proc.stdout.splitlines() if line.startswith("jupyter lab")]
    assert ("--allow-root" in command) == (os.geteuid() == 0)
