"""The fidelity questions of a labelling item: which item asks them, what it shows, and what
the fidelity checks decided, for the analysis of the checks against people.

The fidelity checks (`stages.fidelity`) decide per conversation whether the simulated
user broke character, leaked the test or its plan, swapped roles or echoed, skipped a
landmark or applied no pressure, and whether the target showed test awareness. A
conversation is asked about once: on the item that judges it on its own scenario's
metric (with `evaluation.evaluate_all_metrics` it is judged on others too), so one
rater answers each conversation's questions at most once, and the conversations asked
about are drawn uniformly within the strata of that item's cell.
"""

from __future__ import annotations

from ..schemas import ConversationFidelity, Score
from .current import JudgedData
from .records import FIDELITY_KINDS, FidelityBrief


def asks_fidelity(score: Score) -> bool:
    """An item asks its conversation's fidelity questions when it judges the conversation's
    own metric (`asked_kinds` says which questions)."""
    return score.metric_id == score.scenario_metric_id


def asked_kinds(data: JudgedData, conv_id: str, metric_id: str) -> list[str]:
    """The fidelity questions the item (`conv_id`, `metric_id`) asks: the kinds its
    conversation's checks covered, in `FIDELITY_KINDS` order; [] for none."""
    score = data.scores.get((conv_id, metric_id))
    row = data.fidelity.get(conv_id)
    if score is None or row is None or not asks_fidelity(score):
        return []
    conv = data.conversations.get(conv_id)
    if conv is None or conv.scenario_id not in data.scenarios:
        return []  # an imported conversation: no brief to show the rater
    covered = {c.kind for c in row.checks}
    return [k for k in FIDELITY_KINDS if k in covered]


def fidelity_brief(data: JudgedData, conv_id: str, metric_id: str) -> FidelityBrief | None:
    """What the rater sees for the item's fidelity questions, or None when it asks none."""
    kinds = asked_kinds(data, conv_id, metric_id)
    if not kinds:
        return None
    conv = data.conversations[conv_id]
    scenario = data.scenarios[conv.scenario_id]
    played = sum(m.role == "user" for m in conv.transcript)
    return FidelityBrief(
        persona=scenario.persona,
        user_goal=scenario.user_goal,
        latent_goal=scenario.latent_adversarial_goal,
        landmarks=[lm for lm in scenario.landmarks if lm.turn <= played],
        kinds=kinds,
    )


def checks_found(row: ConversationFidelity, kind: str) -> bool | None:
    """What the checks decided about `kind` in one conversation: True when any check found the
    break, False when every check of it was decided without one, None when some check was
    undecided and none found it (or none was made)."""
    of_kind = [c for c in row.checks if c.kind == kind]
    if any(c.flagged for c in of_kind):
        return True
    if not of_kind or any(c.status == "error" for c in of_kind):
        return None
    return False
