"""What to tell a user when a stage's process dies natively (a segfault inside llama.cpp).

Such a crash kills the Python process (or the notebook's kernel) before any
exception can be raised, so no error row or traceback says what happened; the
stage ends with "Kernel died" or exit status 139. The process that started the
stage survives, and reports it through `crash_message`: which stage, which
embedded models it could have been running, what llama.cpp reports about the
CPU, and what to try.
"""

from __future__ import annotations

import signal
from pathlib import Path

# A stage whose process died of a signal: exit status of `pressurebench run` / `arm`.
EXIT_NATIVE_CRASH = 4


def crash_message(stage: str, params_path: str | Path, how: str) -> str:
    """One paragraph: the stage, how it died, the local models involved and what to try."""
    local = local_models(params_path)
    lines = [f"stage {stage} died natively ({how}), with no Python error to report."]
    if local:
        lines.append(
            f"It runs the embedded model in-process (local models: {', '.join(local)}); "
            f"llama.cpp reports {_llama_cpu_report()}. If that lists AMX, or the crash "
            "persists, set `weight_repacking: false` on these models in the params (llama.cpp "
            "then loads the weights without its CPU-specific layouts) and run again; "
            "`pressurebench run` prints the native stack of the crash."
        )
    else:
        lines.append("Run it again with `pressurebench run` to see the native stack of the crash.")
    return " ".join(lines)


def signal_name(returncode: int) -> str:
    """`SIGSEGV` for a child's return code of -11, and so on."""
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def local_models(params_path: str | Path) -> list[str]:
    """The embedded (in-process) models of the params; none when they cannot be read."""
    from .params import load_params

    try:
        params = load_params(params_path)
    except Exception:  # noqa: BLE001 - the crash report must not fail on a params problem
        return []
    return sorted(mid for mid, spec in params.models.items() if spec.provider == "local")


def _llama_cpu_report() -> str:
    try:
        import llama_cpp
    except ImportError:
        return "nothing (llama-cpp-python is not installed)"
    return f"'{llama_cpp.llama_print_system_info().decode('utf-8', 'replace').strip()}'"
