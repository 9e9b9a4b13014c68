"""What to tell a user when a stage's process dies natively (a segfault inside llama.cpp).

Such a crash kills the Python process (the one running a notebook's cells) before any
exception can be raised, so no error row or traceback says what happened; the
stage would end with exit status 139. The process that started the
stage survives, and reports it through `crash_message`: which stage, which
embedded models it could have been running, and what their provider says to try
(for llama.cpp: what it reports about the CPU).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..llm.providers.registry import ModelApi

# A stage whose process died of a signal: exit status of `pressurebench run` / `arm`.
EXIT_NATIVE_CRASH = 4


def crash_message(stage: str, params_path: str | Path, how: str) -> str:
    """One paragraph: the stage, how it died, and what each provider of its in-process models
    says to try (`ModelApi.crash_hint`)."""
    lines = [f"stage {stage} died natively ({how}), with no Python error to report."]
    hints = [h for h in (api.crash_hint(ids) for api, ids in embedded_models(params_path)) if h]
    lines += hints or ["Run it again with `pressurebench run` to see the native stack of the crash."]
    return " ".join(lines)


def signal_name(returncode: int) -> str:
    """`SIGSEGV` for a child's return code of -11, and so on."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def embedded_models(params_path: str | Path) -> list[tuple[type[ModelApi], list[str]]]:
    """The params' in-process models, by provider; none when the params cannot be read."""
    from ..llm.providers.registry import api_class
    from ..params import load_params

    try:
        params = load_params(params_path)
    except Exception:  # noqa: BLE001 - the crash report must not fail on a params problem
        return []
    by_provider: dict[str, list[str]] = {}
    for model_id, spec in sorted(params.models.items()):
        by_provider.setdefault(spec.provider, []).append(model_id)
    apis = [(api_class(name), ids) for name, ids in sorted(by_provider.items())]
    return [(api, ids) for api, ids in apis if api.embedded]
