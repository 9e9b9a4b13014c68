"""Pressure received: did every target face the same conversations?

Targets are compared on the same scenarios, but the conversations are played
live: a target whose replies make the simulated user stop early, or whose
replies are cut off at `max_tokens`, faces less pressure (or is judged on less
text) than another, and its pass rate is not comparable. This module counts,
per target, the turns played, who ended the conversations, the scripted
landmarks reached and the truncated replies, and tests whether targets differ
by more than chance.

The tests treat conversations as independent (Fisher's exact test for two
targets, a chi-square test of homogeneity for more, on conversations ending
early and conversations with a truncated reply; Mann–Whitney or Kruskal–Wallis
on turns played). Conversations of one scenario are correlated, so a small p
value here is a reason to look, not a finding; a large one does not prove the
targets were treated alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import Field
from scipy import stats

from ..schemas import Conversation, Row, Scenario

ALPHA = 0.05


class PressureReceived(Row):
    conversations: int = Field(ge=0, description="conversations without an error")
    turns_mean: float | None
    turns: dict[str, int] = Field(description="conversations by turns played")
    ended_early: int = Field(ge=0, description="ended by the simulated user before `turns`")
    landmarks_scripted: int = Field(ge=0)
    landmarks_reached: int = Field(ge=0)
    replies: int = Field(ge=0)
    replies_truncated: int = Field(ge=0, description="assistant replies cut off at max_tokens")
    conversations_truncated: int = Field(ge=0, description="with at least one truncated reply")


class ReceivedTest(Row):
    what: str
    test: str
    p_value: float | None
    differs: bool
    note: str | None = None


class ReceivedResults(Row):
    targets: dict[str, PressureReceived]
    tests: list[ReceivedTest]
    warning: str | None = Field(description="what differed by more than chance, if anything")


def received(rows: Sequence[Conversation], landmarks: Mapping[str, list[int]]) -> PressureReceived:
    ok = [c for c in rows if c.status == "ok"]
    turns = [c.turns for c in ok]
    replies = [m for c in ok for m in c.transcript if m.role == "assistant"]
    scripted = [(c, t) for c in ok for t in landmarks.get(c.scenario_id, [])]
    return PressureReceived(
        conversations=len(ok),
        turns_mean=float(np.mean(turns)) if turns else None,
        turns={str(t): turns.count(t) for t in sorted(set(turns))},
        ended_early=sum(c.ended_by == "user" for c in ok),
        landmarks_scripted=len(scripted),
        landmarks_reached=sum(t <= c.turns for c, t in scripted),
        replies=len(replies),
        replies_truncated=sum(m.truncated for m in replies),
        conversations_truncated=sum(any(m.truncated for m in c.transcript) for c in ok),
    )


def _share_test(what: str, counts: dict[str, tuple[int, int]]) -> ReceivedTest:
    """Do the shares `hits / n` differ between targets?"""
    table = np.array([[hits, n - hits] for hits, n in counts.values()])
    if len(table) < 2 or (table.sum(axis=0) == 0).any():
        return ReceivedTest(what=what, test="none", p_value=None, differs=False,
                            note="the same for every target" if len(table) >= 2 else "one target")
    if len(table) == 2:
        p = float(stats.fisher_exact(table).pvalue)
        test = "Fisher's exact test"
    else:
        p = float(stats.chi2_contingency(table).pvalue)
        test = "chi-square test of homogeneity"
    return ReceivedTest(what=what, test=test, p_value=p, differs=p < ALPHA)


def _turns_test(turns: dict[str, list[int]]) -> ReceivedTest:
    groups = [t for t in turns.values() if t]
    what = "turns played"
    if len(groups) < 2 or len({x for g in groups for x in g}) < 2:
        return ReceivedTest(what=what, test="none", p_value=None, differs=False,
                            note="the same for every target" if len(groups) >= 2 else "one target")
    if len(groups) == 2:
        p = float(stats.mannwhitneyu(groups[0], groups[1]).pvalue)
        test = "Mann–Whitney U test"
    else:
        p = float(stats.kruskal(*groups).pvalue)
        test = "Kruskal–Wallis test"
    return ReceivedTest(what=what, test=test, p_value=p, differs=p < ALPHA)


def received_results(
    conversations: Mapping[str, Sequence[Conversation]], scenarios: Sequence[Scenario]
) -> ReceivedResults:
    landmarks = {s.id: [lm.turn for lm in s.landmarks] for s in scenarios}
    per_target = {t: received(rows, landmarks) for t, rows in conversations.items()}
    ok = {t: [c for c in rows if c.status == "ok"] for t, rows in conversations.items()}
    tests = [
        _share_test("conversations ended early by the user",
                    {t: (r.ended_early, r.conversations) for t, r in per_target.items()}),
        _share_test("conversations with a truncated reply",
                    {t: (r.conversations_truncated, r.conversations)
                     for t, r in per_target.items()}),
        _turns_test({t: [c.turns for c in rows] for t, rows in ok.items()}),
    ]
    differing = [f"{x.what} (p = {x.p_value:.3g}, {x.test})" for x in tests if x.differs]
    warning = (
        "Targets differ in the pressure they received: " + "; ".join(differing)
        + ". Their pass rates may not be comparable: read the transcripts of the target that "
        "was treated differently before comparing."
        if differing else None
    )
    return ReceivedResults(targets=per_target, tests=tests, warning=warning)
