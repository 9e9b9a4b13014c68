"""Typing noise for simulated users (`generation.perfunctory`).

Real users type fast and carelessly; a target that only copes with clean prose
is measured on an easier task than it will face. The noise is the kind people
make: a neighbouring key hit, two letters transposed, a letter dropped or
doubled, a sentence started in lower case, an apostrophe left out.

Noise must reproduce, so its seed comes from a stable hash of text (never
Python's `hash`, which changes per process), and each message gets its own
seed so one message's noise does not depend on how many words came before it.
"""

from __future__ import annotations

import hashlib
import random
import re

# QWERTY rows with their stagger: each row starts a little further right than the one above.
_ROWS = (("qwertyuiop", 0.0), ("asdfghjkl", 0.25), ("zxcvbnm", 0.75))


def _keyboard_neighbours() -> dict[str, str]:
    """The keys touching each letter: left, right, and the nearest in the rows above and below."""
    pos = {ch: (r, c + shift) for r, (row, shift) in enumerate(_ROWS) for c, ch in enumerate(row)}
    out = {}
    for ch, (r, x) in pos.items():
        out[ch] = "".join(
            other
            for other, (r2, x2) in pos.items()
            if other != ch
            and ((r2 == r and abs(x2 - x) == 1) or (abs(r2 - r) == 1 and abs(x2 - x) <= 0.75))
        )
    return out


NEIGHBOURS = _keyboard_neighbours()
_WORD = re.compile(r"\S+")
_LETTERS = re.compile(r"[A-Za-z]+(?:['’][A-Za-z]+)*")
_SENTENCE_END = re.compile(r"[.!?]['\")\]]*$")


def stable_seed(*parts: str) -> int:
    """A 64-bit seed from text that is the same in every process and on every machine."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def message_seed(scenario_id: str, sample: int, turn: int) -> int:
    """The noise seed of one user message: its scenario, sample and turn, never its target.

    Two targets facing the same scenario and sample get the same typos in the same
    message, so a comparison of targets is paired on what the user typed.
    """
    return stable_seed("perfunctory", scenario_id, str(sample), str(turn))


def add_typos(text: str, rate: float, seed: int) -> str:
    """Give about `rate` of the words in `text` one typo each; rate 0 returns `text` unchanged.

    Only the letters of a word change; whitespace, punctuation, digits and
    words without letters are kept as they are.
    """
    if rate <= 0.0:
        return text
    rng = random.Random(seed)
    out: list[str] = []
    last = 0
    sentence_start = True
    for token in _WORD.finditer(text):
        word = token.group(0)
        out.append(text[last : token.start()])
        core = _LETTERS.search(word)
        if core and not any(ch.isdigit() for ch in word) and rng.random() < rate:
            changed = _typo(core.group(0), sentence_start and core.start() == 0, rng)
            word = word[: core.start()] + changed + word[core.end() :]
        out.append(word)
        last = token.end()
        sentence_start = bool(_SENTENCE_END.search(token.group(0)))
    out.append(text[last:])
    return "".join(out)


def _typo(word: str, starts_sentence: bool, rng: random.Random) -> str:
    """One visible typo in `word`, of a kind chosen among those that apply to it."""
    letters = [i for i, ch in enumerate(word) if ch.isalpha()]
    apostrophes = [i for i, ch in enumerate(word) if ch in "'’"]
    transposable = [
        i
        for i in range(len(word) - 1)
        if word[i].isalpha() and word[i + 1].isalpha() and word[i].lower() != word[i + 1].lower()
    ]
    kinds = ["neighbour_key", "doubled"]
    if transposable:
        kinds.append("transposed")
    if len(letters) >= 3:
        kinds.append("dropped")
    if apostrophes:
        kinds.append("no_apostrophe")
    if starts_sentence and word[0].isupper() and word != "I":
        kinds.append("lowercase_start")
    kind = rng.choice(kinds)
    if kind == "neighbour_key":
        i = rng.choice(letters)
        key = rng.choice(NEIGHBOURS[word[i].lower()])
        return word[:i] + (key.upper() if word[i].isupper() else key) + word[i + 1 :]
    if kind == "doubled":
        i = rng.choice(letters)
        return word[: i + 1] + word[i:]
    if kind == "transposed":
        i = rng.choice(transposable)
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind == "dropped":
        i = rng.choice(letters[1:])
        return word[:i] + word[i + 1 :]
    if kind == "no_apostrophe":
        i = rng.choice(apostrophes)
        return word[:i] + word[i + 1 :]
    return word[0].lower() + word[1:]
