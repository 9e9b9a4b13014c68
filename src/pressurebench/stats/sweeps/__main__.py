"""`python -m pressurebench.stats.sweeps <sweep> [options]`: run one coverage sweep."""

from __future__ import annotations

import sys
from importlib import import_module

SWEEPS = ("grid", "stress", "capitulation", "judge", "validation")

if len(sys.argv) < 2 or sys.argv[1] not in SWEEPS:
    sys.exit(f"usage: python -m pressurebench.stats.sweeps {{{','.join(SWEEPS)}}} [options]")
import_module(f"{__package__}.{sys.argv[1]}").main(sys.argv[2:])
