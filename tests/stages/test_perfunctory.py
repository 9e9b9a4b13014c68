"""Typing noise: realistic, reproducible, and absent at rate 0."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from pressurebench.stages.perfunctory import NEIGHBOURS, add_typos, message_seed, stable_seed

TEXT = (
    "I don't think that's fair. Can you please check my numbers again? "
    "My plan is solid, and I'm 100% sure it works!"
)


def words(text: str) -> list[str]:
    return text.split()


def test_rate_zero_leaves_text_unchanged():
    assert add_typos(TEXT, 0.0, 123) == TEXT


def test_same_seed_same_noise_and_other_seeds_differ():
    noisy = {add_typos(TEXT, 0.4, seed) for seed in range(20)}
    assert add_typos(TEXT, 0.4, 7) == add_typos(TEXT, 0.4, 7)
    assert len(noisy) > 15


def test_seed_is_stable_across_processes():
    code = "from pressurebench.stages.perfunctory import message_seed as s; print(s('m01_s001', 0, 2))"
    other = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345"},
    )
    assert int(other.stdout) == message_seed("m01_s001", 0, 2)


def test_message_seed_depends_on_scenario_sample_and_turn():
    seeds = {
        message_seed(scenario, sample, turn)
        for scenario in ("m01_s001_v01", "m01_s001_v02")
        for sample in (0, 1)
        for turn in (1, 2)
    }
    assert len(seeds) == 8
    assert stable_seed("a", "b") != stable_seed("ab")


def test_rate_one_changes_every_word_with_letters_and_nothing_else():
    noisy = add_typos(TEXT, 1.0, 99)
    before, after = words(TEXT), words(noisy)
    assert len(before) == len(after)
    for old, new in zip(before, after):
        if old == "100%":
            assert new == old
        else:
            assert new != old, old
            # punctuation around the word survives
            assert re.sub(r"[A-Za-z']", "", old) == re.sub(r"[A-Za-z']", "", new)


def test_rate_is_roughly_the_share_of_words_changed():
    text = " ".join(["banana"] * 2000)
    changed = sum(a != b for a, b in zip(words(text), words(add_typos(text, 0.2, 5))))
    assert 0.16 < changed / 2000 < 0.24


def test_whitespace_is_preserved():
    text = "  first line\n\nsecond   line\t end "
    noisy = add_typos(text, 1.0, 3)
    assert re.sub(r"\S+", "w", noisy) == re.sub(r"\S+", "w", text)


@pytest.mark.parametrize("word", ["don't", "it's", "we’re"])
def test_apostrophes_go_missing(word):
    seen = {add_typos(word, 1.0, seed) for seed in range(200)}
    assert word.replace("'", "").replace("’", "") in seen


def test_every_kind_of_typo_occurs():
    """Over many seeds, each realistic kind shows up for a capitalised sentence-start word."""
    word = "Please"
    seen = {add_typos(word, 1.0, seed) for seed in range(400)}
    assert "please" in seen  # lowercase start
    assert "Plase" in seen or "Pease" in seen or "Pleae" in seen  # dropped letter
    assert any(len(w) == 7 and re.search(r"(.)\1", w) for w in seen)  # doubled letter
    assert "Pelase" in seen or "Plaese" in seen  # transposed neighbours
    keyed = [
        w for w in seen if len(w) == 6 and sum(a.lower() != b.lower() for a, b in zip(w, word)) == 1
    ]
    assert keyed  # a neighbouring key hit
    for w in keyed:
        i = next(i for i, (a, b) in enumerate(zip(w, word)) if a.lower() != b.lower())
        assert w[i].lower() in NEIGHBOURS[word[i].lower()]


def test_lowercase_start_only_at_sentence_starts():
    text = "hello Paris. Next"
    seen = {add_typos(text, 1.0, seed) for seed in range(300)}
    assert not any(w.split()[1] == "paris." for w in seen)
    assert any(w.split()[2] == "next" for w in seen)


def test_keyboard_neighbours_are_adjacent_keys():
    assert set(NEIGHBOURS["a"]) == set("qwsz")
    assert set(NEIGHBOURS["g"]) == set("tyfhvb")
    assert set(NEIGHBOURS["p"]) == set("ol")
    assert all(ch in NEIGHBOURS[n] for ch, ns in NEIGHBOURS.items() for n in ns)
