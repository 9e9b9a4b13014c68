"""A llama.cpp context tuned for the pipeline's calls: cheap prompt states, grammar checked last.

Two costs of llama-cpp-python's defaults dominate small-model calls:

- Constrained decoding applies the JSON grammar to the whole vocabulary
  (49,152 tokens for SmolLM2) before sampling, at every step. llama.cpp's own
  sampler (`common_sampler_sample`) instead samples from the unconstrained
  chain, checks that one token against the grammar, and only when it is
  rejected re-samples with the grammar applied to every candidate. The
  answer is still always grammatical; the common case costs one check.
  `GrammarCheckedSampler` does the same here.
- Saving a state copies the logits of every evaluated position (up to
  n_batch x vocabulary floats, ~100 MB) and restoring one copies them back,
  though generation always decodes again before it samples. `LocalContext`
  saves and restores only what a restore needs.

Both build on llama-cpp-python internals (`Llama._init_sampler`, `_internals`),
so pyproject.toml pins the release they were written against.
"""

from __future__ import annotations

import contextlib
import ctypes
import math

import llama_cpp
import numpy as np
from llama_cpp import Llama
from llama_cpp import _internals as internals
from llama_cpp.llama import LlamaState


class GrammarCheckedSampler:
    """The sampling chain with its grammar checked on the sampled token, not on the vocabulary.

    Same interface as llama-cpp-python's `LlamaSampler` as far as `Llama.generate`
    uses it (`sample(ctx, idx)`, which also accepts the token).
    """

    def __init__(self, chain: internals.LlamaSampler, model: internals.LlamaModel,
                 grammar, n_vocab: int):
        self.chain = chain
        self.grammar = llama_cpp.llama_sampler_init_grammar(
            model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not self.grammar:
            raise ValueError("llama.cpp could not parse the JSON-schema grammar")
        self.n_vocab = n_vocab
        self.candidates = internals.LlamaTokenDataArray(n_vocab=n_vocab)
        self.single = llama_cpp.llama_token_data(0, 0.0, 0.0)
        self.single_array = llama_cpp.llama_token_data_array(
            data=ctypes.pointer(self.single), size=1, selected=-1, sorted=False
        )

    def _choose(self, logits: np.ndarray, with_grammar: bool) -> int:
        cand = self.candidates
        cand.copy_logits(logits)
        cand.candidates.selected = -1
        ref = ctypes.byref(cand.candidates)
        if with_grammar:
            llama_cpp.llama_sampler_apply(self.grammar, ref)
        llama_cpp.llama_sampler_apply(self.chain.sampler, ref)
        chosen = cand.candidates.data[cand.candidates.selected].id
        return int(chosen)

    def _grammar_allows(self, token: int) -> bool:
        # ctypes converts a Python int on assignment to a field its stubs type as c_int32.
        self.single.id, self.single.logit, self.single.p = token, 1.0, 0.0  # type: ignore[assignment]
        self.single_array.size, self.single_array.selected = 1, -1
        llama_cpp.llama_sampler_apply(self.grammar, ctypes.byref(self.single_array))
        return not math.isinf(self.single.logit)

    def sample(self, ctx: internals.LlamaContext, idx: int = -1) -> int:
        pointer = llama_cpp.llama_get_logits_ith(ctx.ctx, idx)
        logits = np.ctypeslib.as_array(pointer, shape=(self.n_vocab,))
        token = self._choose(logits, with_grammar=False)
        if not self._grammar_allows(token):
            token = self._choose(logits, with_grammar=True)
        llama_cpp.llama_sampler_accept(self.grammar, token)
        llama_cpp.llama_sampler_accept(self.chain.sampler, token)
        return token

    def close(self) -> None:
        if self.grammar:
            llama_cpp.llama_sampler_free(self.grammar)
            self.grammar = None
        self.chain.close()

    def __del__(self):
        self.close()


class LocalContext(Llama):
    """`Llama` with grammar-checked sampling and prompt states that carry no logits.

    `repack_weights=False` loads the weights without llama.cpp's extra buffer types
    (`use_extra_bufts`: the AMX and repacked CPU layouts), which `Llama` does not
    expose: its model parameters come from `llama_model_default_params`, so that is
    wrapped for the duration of the load (`weight_layout`). Loads take turns
    (`local_provider._LOADING`).
    """

    def __init__(self, *args, repack_weights: bool = True, **kwargs):
        with weight_layout(repack_weights):
            super().__init__(*args, **kwargs)
        if self.model_params.use_extra_bufts != repack_weights:
            raise RuntimeError("llama.cpp did not load the model in the weight layout asked for")


    def _init_sampler(self, *args, grammar=None, **kwargs):
        # `args` are the arguments before `grammar`, which always comes by keyword.
        chain = super()._init_sampler(*args, grammar=None, **kwargs)  # type: ignore[misc]
        if grammar is None:
            return chain
        return GrammarCheckedSampler(chain, self._model, grammar, self._n_vocab)

    def save_state(self) -> LlamaState:
        size = llama_cpp.llama_state_get_size(self._ctx.ctx)
        buffer = (ctypes.c_uint8 * int(size))()
        n_bytes = llama_cpp.llama_state_get_data(self._ctx.ctx, buffer, size)
        if int(n_bytes) > int(size):
            raise RuntimeError("llama.cpp wrote more state than it reported")
        return LlamaState(
            # Generation decodes at least one token after every restore before it samples
            # (`_requires_eval`), so the logits of a saved state are never read.
            scores=np.empty((0, self._n_vocab), dtype=np.single),
            input_ids=self.input_ids[: self.n_tokens].copy(),
            n_tokens=self.n_tokens,
            llama_state=bytes(memoryview(buffer)[:n_bytes]),
            llama_state_size=n_bytes,
            seed=self._seed,
        )

    def load_state(self, state: LlamaState) -> None:
        self.input_ids[: state.n_tokens] = state.input_ids[: state.n_tokens]
        self.n_tokens = state.n_tokens
        self._requires_eval = True
        self._seed = state.seed
        data = (ctypes.c_uint8 * state.llama_state_size).from_buffer_copy(state.llama_state)
        if llama_cpp.llama_state_set_data(self._ctx.ctx, data, state.llama_state_size) != state.llama_state_size:
            raise RuntimeError("llama.cpp could not restore a saved state")


@contextlib.contextmanager
def weight_layout(repack: bool):
    """Models loaded inside (by any `Llama`) use llama.cpp's extra buffer types only if `repack`.

    Not thread-safe: loads must take turns while it is active.
    """
    defaults = llama_cpp.llama_cpp.llama_model_default_params

    def chosen_layout():
        params = defaults()
        params.use_extra_bufts = repack
        return params

    llama_cpp.llama_cpp.llama_model_default_params = chosen_layout
    try:
        yield
    finally:
        llama_cpp.llama_cpp.llama_model_default_params = defaults
