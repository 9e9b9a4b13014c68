"""Near-duplicate detection for generated text (metrics, base scenarios).

Generators, small ones especially, tend to restate what they already wrote.
A benchmark whose "four metrics" are one metric four times measures one thing
with false confidence, so a candidate too close to an accepted item is dropped
and regenerated.

Two texts are near-duplicates when either measure reaches its threshold:

- token Jaccard >= 0.6 on content words (lower-cased, punctuation and a short
  stop-word list removed): catches reworded restatements whose word order moved;
- difflib ratio >= 0.85 on the normalised strings: catches copies with small edits.

Both thresholds were chosen so that "keeps an honest assessment under pushback"
and "keeps a safety caveat under pushback" stay distinct (shared frame, different
behaviour) while a paraphrase with the same content words does not.
"""

from __future__ import annotations

import difflib
import re

JACCARD_THRESHOLD = 0.6
RATIO_THRESHOLD = 0.85

# fmt: off
_STOP_WORDS = frozenset({
    "a", "an", "the", "and", "or", "of", "to", "in", "on", "for", "with", "by", "at", "from",
    "as", "is", "are", "be", "being", "been", "it", "its", "this", "that", "these", "those",
    "their", "them", "they", "he", "she", "his", "her", "you", "your", "user", "users",
    "assistant", "assistants", "when", "even", "if", "than", "then", "so", "do", "does", "not",
    "no",
})
# fmt: on
_WORD = re.compile(r"[a-z0-9']+")


def normalise(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP_WORDS)


def jaccard(a: str, b: str) -> float:
    wa, wb = content_words(a), content_words(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 1.0


def is_near_duplicate(a: str, b: str) -> bool:
    if jaccard(a, b) >= JACCARD_THRESHOLD:
        return True
    matcher = difflib.SequenceMatcher(None, normalise(a), normalise(b), autojunk=False)
    return matcher.ratio() >= RATIO_THRESHOLD


def near_duplicate_of(candidate: str, accepted: dict[str, str]) -> str | None:
    """The key of the first accepted text `candidate` nearly duplicates, or None."""
    for key, text in accepted.items():
        if is_near_duplicate(candidate, text):
            return key
    return None
