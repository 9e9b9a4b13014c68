"""Prompt states for the embedded model: a conversation's next turn evaluates only its new tokens.

In a simulated conversation each turn's prompt is the previous prompt of the
same role plus the new messages, but user and target calls alternate on one
llama.cpp context, so llama.cpp's own reuse (of whatever the context last
held) finds nothing to reuse. Keeping the state after each prompt, keyed by
its tokens, lets the next call restore the longest matching one.

Only the prompt part of a state is ever reused. llama-cpp-python saves the
state after generating, but generated tokens were evaluated one at a time,
and their rounding differs from the batched evaluation a fresh call gives the
same tokens; reusing them would change later outputs. Reusing evaluated
prompts does not: outputs are identical with and without these states
(tests/llm/test_local_kv_cache.py), only faster (perf/README.md).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
from llama_cpp import Llama
from llama_cpp.llama_cache import BaseLlamaCache

# Below this many shared tokens, restoring a state (copying megabytes) costs about as much as
# evaluating the tokens; such matches are only a shared chat-template opening anyway.
MIN_REUSE_TOKENS = 32


class PromptStates(BaseLlamaCache):
    """Least-recently-used llama.cpp states keyed by prompt tokens, at most `capacity_bytes`.

    llama-cpp-python hands over the state of each completion (`__setitem__`);
    the provider then calls `commit(prompt_tokens)`, which keeps it cut back
    to the prompt. A state that is never committed is never reused.
    """

    def __init__(self, capacity_bytes: int):
        super().__init__(capacity_bytes)
        self.states: OrderedDict[tuple[int, ...], object] = OrderedDict()
        self._pending: tuple[tuple[int, ...], object] | None = None

    @property
    def cache_size(self) -> int:
        return sum(state.llama_state_size for state in self.states.values())

    def _find_longest_prefix_key(self, key: tuple[int, ...]) -> tuple[int, ...] | None:
        best, best_len = None, MIN_REUSE_TOKENS - 1
        for candidate in self.states:
            n = Llama.longest_token_prefix(candidate, key)
            if n > best_len:
                best, best_len = candidate, n
        return best

    def __getitem__(self, key) -> object:
        found = self._find_longest_prefix_key(tuple(key))
        if found is None:
            raise KeyError("no stored prompt shares a prefix with this one")
        self.states.move_to_end(found)
        return self.states[found]

    def __contains__(self, key) -> bool:
        return self._find_longest_prefix_key(tuple(key)) is not None

    def __setitem__(self, key, state) -> None:
        self._pending = (tuple(key), state)

    def commit(self, prompt_tokens: int) -> None:
        """Keep the last completion's state, cut back to its first `prompt_tokens` tokens."""
        if self._pending is None or prompt_tokens <= 0:
            self._pending = None
            return
        key, state = self._pending
        self._pending = None
        state.n_tokens = prompt_tokens
        # Logits are recomputed after every restore (llama-cpp-python decodes at least one
        # token before sampling), so the stored ones need no memory: a zero view will do.
        rows, vocab = min(prompt_tokens, state.scores.shape[0]), state.scores.shape[1]
        state.scores = np.broadcast_to(np.zeros((1, vocab), dtype=np.single), (rows, vocab))
        prompt = key[:prompt_tokens]
        self.states.pop(prompt, None)
        self.states[prompt] = state
        while self.states and self.cache_size > self.capacity_bytes:
            self.states.popitem(last=False)
