"""Prompt states for the embedded model: a conversation's next turn evaluates only its new tokens.

In a simulated conversation each turn's prompt is the previous prompt of the
same role plus the new messages, but user and target calls alternate (and
run on several llama.cpp contexts), so llama.cpp's own reuse (of whatever the
context last held) finds nothing to reuse. Keeping the state after each
prompt, keyed by its tokens, lets the next call restore the longest matching
one, on whichever context it runs.

Only the prompt part of a state is ever reused. llama-cpp-python saves the
state after generating, but generated tokens were evaluated one at a time,
and their rounding differs from the batched evaluation a fresh call gives the
same tokens; reusing them would change later outputs. Reusing evaluated
prompts does not: outputs are identical with and without these states
(tests/llm/test_local_kv_cache.py), only faster (perf/README.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from llama_cpp import Llama
from llama_cpp.llama import LlamaState
from llama_cpp.llama_cache import BaseLlamaCache

# Below this many shared tokens, restoring a state (copying megabytes) costs about as much as
# evaluating the tokens; such matches are only a shared chat-template opening anyway.
MIN_REUSE_TOKENS = 32


class PromptStates:
    """Least-recently-used llama.cpp states keyed by prompt tokens, at most `capacity_bytes`.

    Shared by every context of one model file; each context reaches it through
    its own `ContextStates`. Thread-safe: contexts run calls at the same time.
    """

    def __init__(self, capacity_bytes: int):
        self.capacity_bytes = capacity_bytes
        self.states: OrderedDict[tuple[int, ...], LlamaState] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def cache_size(self) -> int:
        with self._lock:
            return self._size()

    def _size(self) -> int:
        return sum(state.llama_state_size for state in self.states.values())

    def _longest_prefix_key(self, key: tuple[int, ...]) -> tuple[int, ...] | None:
        best, best_len = None, MIN_REUSE_TOKENS - 1
        for candidate in self.states:
            n = Llama.longest_token_prefix(candidate, key)
            if n > best_len:
                best, best_len = candidate, n
        return best

    def find(self, key: tuple[int, ...], *, use: bool = True) -> LlamaState | None:
        """The state whose prompt shares the longest prefix with `key`, marked as used if `use`."""
        with self._lock:
            found = self._longest_prefix_key(key)
            if found is None:
                return None
            if use:
                self.states.move_to_end(found)
            return self.states[found]

    def keep(self, prompt: tuple[int, ...], state: LlamaState) -> None:
        with self._lock:
            self.states.pop(prompt, None)
            self.states[prompt] = state
            while self.states and self._size() > self.capacity_bytes:
                self.states.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self.states.clear()

    def for_context(self) -> ContextStates:
        return ContextStates(self)


class ContextStates(BaseLlamaCache):
    """One context's door to the shared `PromptStates`, in llama-cpp-python's cache interface.

    llama-cpp-python hands over the state of each completion (`__setitem__`);
    the provider then calls `commit(prompt_tokens)`, which keeps it cut back
    to the prompt. A state that is never committed is never reused.
    """

    def __init__(self, store: PromptStates):
        super().__init__(store.capacity_bytes)
        self.store = store
        self._pending: tuple[tuple[int, ...], LlamaState] | None = None

    @property
    def cache_size(self) -> int:
        return self.store.cache_size

    def __getitem__(self, key) -> LlamaState:
        found = self.store.find(tuple(key))
        if found is None:
            raise KeyError("no stored prompt shares a prefix with this one")
        return found

    def __contains__(self, key) -> bool:
        return self.store.find(tuple(key), use=False) is not None

    def __setitem__(self, key, state) -> None:
        self._pending = (tuple(key), state)

    def commit(self, prompt_tokens: int) -> None:
        """Keep the last completion's state, cut back to its first `prompt_tokens` tokens."""
        pending, self._pending = self._pending, None
        if pending is None or prompt_tokens <= 0:
            return
        key, state = pending
        state.n_tokens = prompt_tokens
        state.input_ids = state.input_ids[:prompt_tokens]
        self.store.keep(key[:prompt_tokens], state)
