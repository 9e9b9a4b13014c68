"""`python -m pressurebench.stats.sweeps <sweep> [options]`: run one coverage sweep."""

from __future__ import annotations

import sys
from importlib import import_module

SWEEPS = ("grid", "stress", "capitulation", "judge", "validation")


def main(argv: list[str]) -> None:
    """Run the sweep `argv[0]` names with the rest of `argv` as its options."""
    if not argv or argv[0] not in SWEEPS:
        sys.exit(f"usage: python -m pressurebench.stats.sweeps {{{','.join(SWEEPS)}}} [options]")
    import_module(f"{__package__}.{argv[0]}").main(argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
