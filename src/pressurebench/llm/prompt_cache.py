"""Provider prompt caching: what a request says about the prefixes it shares with others.

Providers bill a prompt prefix they have seen recently at a fraction of the input
price, but only where the request lets them: Anthropic caches at the `cache_control`
breakpoints a request marks (`anthropic_provider`), OpenAI caches every long prompt
by itself and keeps requests with one `prompt_cache_key` on the same cache
(`openai_provider`). The stages lay their prompts out so that what repeats comes
first (see docs/prompt-caching.md); this module names the groups of requests that
share a prefix, one per conversation and role.
"""

from __future__ import annotations

import hashlib

KEY_PREFIX = "pb-"
KEY_HEX = 32  # the key stays short, and says nothing of the conversation it stands for


def cache_group(conv_id: str, role: str) -> str:
    """The group of one conversation's requests of one role (user model, target, judge...)."""
    return f"{role}:{conv_id}"


def prompt_cache_key(group: str) -> str:
    """A group's `prompt_cache_key`: a digest, so no prompt text or id leaves in it."""
    return KEY_PREFIX + hashlib.sha256(group.encode("utf-8")).hexdigest()[:KEY_HEX]
