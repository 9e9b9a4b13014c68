"""Prompt caching as the two providers bill it, for the mock server.

Anthropic (https://platform.claude.com/docs/en/build-with-claude/prompt-caching):
a prefix is cached only at a `cache_control` breakpoint (on a tool, a system block
or a message's content block, or the top-level `cache_control`, which marks the
last block), at most 4 breakpoints a request; `cache_control` is
`{"type": "ephemeral"}` with an optional `ttl` of "5m" (the default) or "1h", and a
1-hour breakpoint may not follow a 5-minute one. The prefix runs tools, then
system, then messages. A prefix shorter than the model's minimum (1024 tokens for
most models, 2048 or 4096 for some) is not cached and no error is raised. A
request reads the longest cached prefix that ends at most 20 blocks before one
of its breakpoints, and writes the prefix up to each breakpoint; usage reports
`cache_read_input_tokens`, `cache_creation_input_tokens` (with the split by TTL
in `cache_creation`) and `input_tokens`, which counts only the tokens after the
last breakpoint: the prompt is the sum of the three.

OpenAI (https://developers.openai.com/api/docs/guides/prompt-caching): every
prompt of 1024 tokens or more is cached by itself, as an exact prefix, in steps
of 128 tokens after the first 1024, on the machine the request was routed to:
"Requests are routed to a machine based on a hash of the initial prefix of the
prompt. The hash typically uses the first 256 tokens"; a `prompt_cache_key` (a
string) "is combined with the prefix hash"; "If requests for the same prefix and
prompt_cache_key combination exceed a certain rate (approximately 15 requests per
minute), some may overflow and get routed to additional machines". The mock routes
by the first 256 tokens and the key, and sends a combination's 16th to 30th
request of the last minute to a second machine, and so on. Usage reports the
prompt in `prompt_tokens`, of which `prompt_tokens_details.cached_tokens` were read
from the cache.

A cached prefix is there for later requests once its request was answered, and
stays for its TTL from its last use (OpenAI: 5 minutes here). Every answered
request's usage is added up in `PromptCaches.billed`, per provider and model,
so a test can price the bill the providers would send, and its prompt is kept as
blocks in `PromptCaches.prompts`, from which `least_input_bill` computes the
least input bill any layout of the same blocks could reach under these rules.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections import Counter, defaultdict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20
TTL_S = {"5m": 300.0, "1h": 3600.0}
ANTHROPIC_MIN = (
    (re.compile(r"^claude-(?:opus-4-[56]|haiku-4-5)"), 4096),
    (re.compile(r"^claude-(?:sonnet-4-6|opus-4-7|3-5-haiku|3-haiku|haiku-3)"), 2048),
)
ANTHROPIC_DEFAULT_MIN = 1024
OPENAI_MIN = 1024
OPENAI_STEP = 128
OPENAI_TTL_S = 300.0
OPENAI_ROUTE_TOKENS = 256
OPENAI_ROUTE_PER_MINUTE = 15
OPENAI_ROLE_TOKENS = 3  # what the mock's `prompt_tokens` adds per message


class CacheRuleError(ValueError):
    """A request the provider refuses for its cache fields (HTTP 400)."""


def tokens(text: str) -> int:
    """The mock's tokenizer: about four characters per token (as `mock_llm_server._tokens`)."""
    return math.ceil(len(text) / 4)


def anthropic_min_tokens(model: str) -> int:
    for pattern, minimum in ANTHROPIC_MIN:
        if pattern.match(model):
            return minimum
    return ANTHROPIC_DEFAULT_MIN


@dataclass
class Usage:
    """Billed prompt tokens of the answered requests of one model."""

    requests: int = 0
    uncached: int = 0
    cached: int = 0
    written_5m: int = 0
    written_1h: int = 0
    output: int = 0

    @property
    def prompt(self) -> int:
        return self.uncached + self.cached + self.written_5m + self.written_1h


@dataclass(frozen=True)
class Prompt:
    """One answered request's prompt as the cache sees it: (identity, tokens) of each block
    (Anthropic: each tool, system block and content block; OpenAI: each message, its
    identity including the tools and response format, which must match for a hit)."""

    provider: str
    model: str
    blocks: tuple[tuple[str, int], ...]

    @property
    def tokens(self) -> int:
        return sum(n for _, n in self.blocks)


@dataclass(frozen=True)
class LeastBill:
    """The least input bill of one model's prompts under its provider's rules, in tokens at
    the input price (`least_input_bill`), beside the tokens it reads from a cache."""

    prompt: int
    read: int
    written: int
    cost: float  # uncached + read x read factor + written x write factor, in input-price tokens


def least_input_bill(prompts: list[Prompt], read_factor: float, write_factor: float) -> LeastBill:
    """A lower bound on the input bill of `prompts` (one model's, in the order sent), over every
    layout that sends the same blocks in any order and marks any breakpoints.

    A request can read from a cache only a prefix that an earlier request sent, so at most
    the blocks it shares with one earlier request (the most it shares with any), and only
    from the provider's minimum on (OpenAI: 1024 tokens, then 128-token steps; Anthropic:
    the model's minimum); every other token is paid at the input price. Anthropic bills
    the write of a prefix before anyone reads it: every block some request reads was
    written once, at `write_factor` instead of 1 (OpenAI: no premium, `write_factor` 1).
    Cache lifetimes are ignored (every entry lives forever), which can only lower the
    bound. So no layout of these prompts is billed less than this."""
    seen: list[Counter] = []
    read_blocks: dict[str, int] = {}
    total = read = 0
    for p in prompts:
        mine = Counter(identity for identity, _ in p.blocks)
        size = dict(p.blocks)
        best, best_shared = 0, Counter()
        for earlier in seen:
            shared = mine & earlier
            n = sum(size[i] * k for i, k in shared.items())
            if n > best:
                best, best_shared = n, shared
        usable = _cacheable(p.provider, p.model, best)
        if usable:
            read_blocks.update({i: size[i] for i in best_shared})
        total += p.tokens
        read += usable
        seen.append(mine)
    written = sum(read_blocks.values()) if write_factor > 1 else 0
    cost = (total - read) + read * read_factor + written * (write_factor - 1)
    return LeastBill(prompt=total, read=read, written=written, cost=cost)


def _cacheable(provider: str, model: str, shared: int) -> int:
    """The tokens of a shared prefix of `shared` tokens that a provider reads from its cache."""
    if provider == "openai":
        return 0 if shared < OPENAI_MIN else shared - (shared - OPENAI_MIN) % OPENAI_STEP
    return shared if shared >= anthropic_min_tokens(model) else 0


@dataclass
class PromptCaches:
    """The caches of one mock server: prefix digest -> expiry, per provider and model."""

    entries: dict[tuple[str, str, str], float] = field(default_factory=dict)
    billed: dict[tuple[str, str], Usage] = field(default_factory=lambda: defaultdict(Usage))
    prompts: list[Prompt] = field(default_factory=list)
    """Every answered request's prompt, in the order they were answered."""
    routes: dict[str, deque] = field(default_factory=lambda: defaultdict(deque))
    """OpenAI: when each prefix-and-key combination's requests of the last minute came."""
    clock: Any = time.monotonic

    def reset(self) -> None:
        self.entries.clear()
        self.billed.clear()
        self.prompts.clear()
        self.routes.clear()

    def _alive(self, key: tuple[str, str, str]) -> bool:
        expiry = self.entries.get(key)
        return expiry is not None and expiry > self.clock()

    # -- Anthropic --------------------------------------------------------------------

    def anthropic(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The usage of an answered messages request: reads and writes the cache."""
        model = str(body["model"])
        blocks, marks = anthropic_breakpoints(body)
        cumulative, digests, total, digest = [], [], 0, hashlib.sha256(model.encode())
        for block in blocks:
            total += block["tokens"]
            digest.update(block["identity"].encode())
            cumulative.append(total)
            digests.append(digest.hexdigest())
        read_at = -1
        for index, _ in marks:
            for j in range(index, max(index - LOOKBACK_BLOCKS, -1), -1):
                if self._alive(("anthropic", model, digests[j])):
                    read_at = max(read_at, j)
                    break
        read = cumulative[read_at] if read_at >= 0 else 0
        minimum = anthropic_min_tokens(model)
        written = {"5m": 0, "1h": 0}
        done = read
        now = self.clock()
        if read_at >= 0:
            key = ("anthropic", model, digests[read_at])
            self.entries[key] = max(self.entries[key], now + TTL_S["5m"])  # a read refreshes
        for index, control in marks:
            if cumulative[index] < minimum:
                continue  # too short to cache: no error, nothing written
            ttl = control.get("ttl", "5m")
            if cumulative[index] > done:
                written[ttl] += cumulative[index] - done
                done = cumulative[index]
            key = ("anthropic", model, digests[index])
            self.entries[key] = max(self.entries.get(key, 0.0), now + TTL_S[ttl])
        creation = written["5m"] + written["1h"]
        self.prompts.append(Prompt("anthropic", model, tuple((b["identity"], b["tokens"]) for b in blocks)))
        usage = self.billed[("anthropic", model)]
        usage.requests += 1
        usage.uncached += total - read - creation
        usage.cached += read
        usage.written_5m += written["5m"]
        usage.written_1h += written["1h"]
        return {
            "input_tokens": total - read - creation,
            "cache_creation_input_tokens": creation,
            "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": written["5m"],
                               "ephemeral_1h_input_tokens": written["1h"]},
        }

    # -- OpenAI -----------------------------------------------------------------------

    def _openai_machine(self, model: str, head: str, key: str | None, stream: list[str]) -> str:
        """The machine (and so the cache) a request is routed to: its first 256 tokens and
        its `prompt_cache_key`, then one more machine per 15 requests of that combination in
        the last minute."""
        route = _route_digest(model, head, key, stream[:OPENAI_ROUTE_TOKENS])
        now = self.clock()
        recent = self.routes[route]
        while recent and recent[0] <= now - 60.0:
            recent.popleft()
        machine = f"{route}#{len(recent) // OPENAI_ROUTE_PER_MINUTE}"
        recent.append(now)
        return machine

    def openai(self, body: Mapping[str, Any], messages: list[dict[str, str]]) -> tuple[int, int]:
        """(prompt_tokens, cached_tokens) of an answered chat completion; reads and writes."""
        check_openai(body)
        model = str(body["model"])
        # Tools and the response format come first in the prefix (OpenAI's guide: they must be
        # identical between requests to be cached).
        head = json.dumps([body.get("tools"), body.get("response_format")], sort_keys=True)
        digest = hashlib.sha256(f"{model}\n{head}".encode())
        stream: list[str] = []
        blocks = []
        for m in messages:
            pieces = [m["content"][i:i + 4] for i in range(0, len(m["content"]), 4)]
            stream += [f"<{m['role']}>"] * OPENAI_ROLE_TOKENS + pieces
            blocks.append((f"{head}\0{m['role']}\0{m['content']}", OPENAI_ROLE_TOKENS + len(pieces)))
        boundaries = []
        for n, piece in enumerate(stream, start=1):
            digest.update(piece.encode() + b"\0")
            if n >= OPENAI_MIN and (n - OPENAI_MIN) % OPENAI_STEP == 0:
                boundaries.append((n, digest.hexdigest()))
        machine = self._openai_machine(model, head, body.get("prompt_cache_key"), stream)
        cached = 0
        for n, prefix in boundaries:
            if self._alive(("openai", machine, prefix)):
                cached = n
        expiry = self.clock() + OPENAI_TTL_S
        for _, prefix in boundaries:
            self.entries[("openai", machine, prefix)] = expiry
        self.prompts.append(Prompt("openai", model, tuple(blocks)))
        usage = self.billed[("openai", model)]
        usage.requests += 1
        usage.uncached += len(stream) - cached
        usage.cached += cached
        return len(stream), cached


def _route_digest(model: str, head: str, key: str | None, opening: list[str]) -> str:
    return hashlib.sha256(json.dumps([model, head, key, opening]).encode()).hexdigest()


def anthropic_breakpoints(body: Mapping[str, Any]) -> tuple[list[dict], list[tuple[int, dict]]]:
    """The request's blocks and its breakpoints (block index, cache_control), or the error
    Anthropic answers for its cache fields."""
    blocks = _anthropic_blocks(body)
    marks = [(i, b["cache_control"]) for i, b in enumerate(blocks) if b["cache_control"] is not None]
    top = body.get("cache_control")
    if top is not None:
        _check_control(top, "cache_control")
        if blocks and (not marks or marks[-1][0] != len(blocks) - 1):
            marks.append((len(blocks) - 1, top))
    if len(marks) > MAX_BREAKPOINTS:
        raise CacheRuleError(
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marks)}."
        )
    ttls = [control.get("ttl", "5m") for _, control in marks]
    if "5m" in ttls and "1h" in ttls[ttls.index("5m"):]:
        raise CacheRuleError("a ttl='1h' cache_control block must not come after a ttl='5m' "
                             "cache_control block")
    return blocks, marks


def check_openai(body: Mapping[str, Any]) -> None:
    key = body.get("prompt_cache_key")
    if key is not None and not isinstance(key, str):
        raise CacheRuleError("Invalid type for 'prompt_cache_key': expected a string, but got "
                             f"{type(key).__name__} instead.")


def _check_control(control: Any, where: str) -> None:
    if not isinstance(control, Mapping) or control.get("type") != "ephemeral":
        raise CacheRuleError(f"{where}.type: Input should be 'ephemeral'")
    for name in control:
        if name not in ("type", "ttl"):
            raise CacheRuleError(f"{where}.{name}: Extra inputs are not permitted")
    if control.get("ttl", "5m") not in TTL_S:
        raise CacheRuleError(f"{where}.ttl: Input should be '5m' or '1h'")


def _anthropic_blocks(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The prompt as blocks in prefix order (tools, system, messages): what identifies each,
    its tokens and its `cache_control`."""
    blocks = []

    def add(where: str, block: Any, role: str, counted: str) -> None:
        control = block.get("cache_control") if isinstance(block, Mapping) else None
        if control is not None:
            _check_control(control, f"{where}.cache_control")
        # A string is one text block: the same prefix whichever way it is sent.
        plain = ({k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, Mapping)
                 else {"type": "text", "text": block})
        blocks.append({"identity": role + json.dumps(plain, sort_keys=True) + "\0",
                       "tokens": tokens(counted), "cache_control": control})

    for i, tool in enumerate(body.get("tools") or []):
        add(f"tools.{i}", tool, "tool", json.dumps({k: v for k, v in tool.items() if k != "cache_control"}))
    system = body.get("system")
    if isinstance(system, str):
        add("system", system, "system", system)
    elif isinstance(system, list):
        for i, block in enumerate(system):
            add(f"system.{i}", block, "system", str(block.get("text", "")))
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        role = str(message.get("role"))
        if isinstance(content, str):
            add(f"messages.{i}.content", content, role, content)
            continue
        for j, block in enumerate(content or []):
            text = block.get("text") if "text" in block else json.dumps(block.get("input", block.get("content")))
            add(f"messages.{i}.content.{j}", block, role, str(text))
    return blocks
