"""Provider prompt caching: what a request says about the prefixes it shares with others.

Providers bill a prompt prefix they have seen recently at a fraction of the input
price, but only where the request lets them: Anthropic caches at the `cache_control`
breakpoints a request marks (`anthropic_provider`), OpenAI caches every long prompt
by itself and keeps requests with one `prompt_cache_key` on the same cache
(`openai_provider`). The stages lay their prompts out so that what repeats comes
first (see docs/prompt-caching.md); this module names the groups of requests that
share a prefix, one per conversation and role, and the messages where a prefix that
another request repeats ends (`cache_marks`), which is where a breakpoint pays.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

KEY_PREFIX = "pb-"
KEY_HEX = 32  # the key stays short, and says nothing of the conversation it stands for


def cache_group(conv_id: str, role: str) -> str:
    """The group of one conversation's requests of one role (user model, target, judge...)."""
    return f"{role}:{conv_id}"


def prompt_cache_key(group: str) -> str:
    """A group's `prompt_cache_key`: a digest, so no prompt text or id leaves in it."""
    return KEY_PREFIX + hashlib.sha256(group.encode("utf-8")).hexdigest()[:KEY_HEX]


def cache_marks(*, shared: Iterable[int] = (), extended_at: int | None = None,
                continues: int | None = None) -> tuple[int, ...]:
    """The messages (indices into the request's messages) that end a prefix another request
    repeats, for a provider that caches only at breakpoints and bills a write above the
    input price (Anthropic: 1.25x, a read 0.1x).

    `shared`: stable blocks other groups' requests begin with too (a metric's definition
    for all its conversations). `extended_at`: where the next request of this group stops
    repeating this one; the prefix up to there is written for it, and the earlier request's
    prefix within it is read. When no later request extends this one, a mark where the
    earlier request's prefix ended (`continues`) reads it and writes nothing: the new tokens
    are paid once at the input price instead of written for nobody.
    """
    last = extended_at if extended_at is not None else continues
    marks = [i for i in (*shared, last) if i is not None and i >= 0]
    return tuple(dict.fromkeys(marks))
