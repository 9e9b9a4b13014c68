"""Pressure received: counts per target, and a warning only when targets differ beyond chance."""

from __future__ import annotations

from pressurebench.schemas import Conversation, Landmark, Message, Scenario, conv_id, scenario_id
from pressurebench.stats.received import received_results


def conversation(target: str, no: int, turns: int, *, ended_by: str = "max_turns",
                 truncated: bool = False, status: str = "ok") -> Conversation:
    sid = scenario_id("m01", no, 1)
    transcript = []
    for t in range(1, turns + 1):
        transcript += [Message(role="user", content=f"push {t}"),
                       Message(role="assistant", content=f"reply {t}",
                               truncated=truncated and t == turns)]
    return Conversation(
        conv_id=conv_id(sid, target, 0), scenario_id=sid, base_id=sid.rsplit("_", 1)[0],
        metric_id="m01", target=target, sample=0, user_model="user", transcript=transcript,
        status=status, error="target failed" if status == "error" else None,
        ended_by=ended_by if status == "ok" else None, turns=turns,
    )


def scenarios(n: int) -> list[Scenario]:
    return [
        Scenario(id=scenario_id("m01", no, 1), metric_id="m01", base_id=f"m01_s{no:03d}",
                 persona="p", user_goal="g", latent_adversarial_goal="l",
                 landmarks=[Landmark(turn=2, instruction="a"), Landmark(turn=4, instruction="b")])
        for no in range(1, n + 1)
    ]


def test_counts_per_target():
    rows = {"a": [conversation("a", 1, 4), conversation("a", 2, 2, ended_by="user"),
                  conversation("a", 3, 3, truncated=True), conversation("a", 4, 1, status="error")]}
    got = received_results(rows, scenarios(4)).targets["a"]
    assert got.conversations == 3
    assert got.turns == {"2": 1, "3": 1, "4": 1} and got.turns_mean == 3.0
    assert got.ended_early == 1
    assert (got.landmarks_reached, got.landmarks_scripted) == (4, 6)  # 2 + 1 + 1 of 2 each
    assert (got.replies_truncated, got.replies, got.conversations_truncated) == (1, 9, 1)


def test_targets_treated_alike_get_no_warning():
    rows = {t: [conversation(t, no, 4) for no in range(1, 21)] for t in ("a", "b")}
    got = received_results(rows, scenarios(20))
    assert got.warning is None
    assert all(not t.differs and t.p_value is None for t in got.tests)


def test_a_target_whose_conversations_end_early_is_flagged():
    rows = {
        "a": [conversation("a", no, 4) for no in range(1, 21)],
        "b": [conversation("b", no, 1 if no <= 12 else 4, ended_by="user" if no <= 12 else
                           "max_turns", truncated=no <= 10) for no in range(1, 21)],
    }
    got = received_results(rows, scenarios(20))
    flagged = {t.what for t in got.tests if t.differs}
    assert flagged == {"conversations ended early by the user", "turns played",
                       "conversations with a truncated reply"}
    assert got.warning.startswith("Targets differ in the pressure they received")
    ended = next(t for t in got.tests if t.what.startswith("conversations ended"))
    assert ended.test == "Fisher's exact test" and ended.p_value < 0.001


def test_three_targets_use_the_chi_square_and_kruskal_wallis_tests():
    rows = {t: [conversation(t, no, 2 + (no + i) % 3, ended_by="user" if (no + i) % 4 == 0
                             else "max_turns") for no in range(1, 13)]
            for i, t in enumerate(("a", "b", "c"))}
    got = received_results(rows, scenarios(12))
    tests = {t.what: t.test for t in got.tests}
    assert tests["conversations ended early by the user"] == "chi-square test of homogeneity"
    assert tests["turns played"] == "Kruskal–Wallis test"
