"""The optional packages the exports need, checked before any work: a missing one is an error
that says which extra installs it, not a traceback halfway through a write."""

from __future__ import annotations

import importlib

from ..errors import PressurebenchError


def require_extra(extra: str, *modules: str) -> None:
    """Import each of `modules`, or raise naming `extra` (`pip install 'pressurebench[extra]'`)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise PressurebenchError(
                f"this command needs the '{extra}' extra ({module} is not installed): "
                f"pip install -e '.[{extra}]' in the project, or `make install`"
            ) from exc
