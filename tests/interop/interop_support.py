"""Helpers of the interop tests: failures planted in a finished run, as the stages write them."""

from __future__ import annotations

from pressurebench.io import read_artifact, write_artifact
from pressurebench.paths import Layout
from pressurebench.schemas import (
    CONVERSATION_FAILED,
    NO_VERDICT,
    ConversationsFile,
    JudgeVerdict,
    ScoresFile,
)

# A validation arm: another judge re-judges a seeded subset of the main arm's conversations.
EVALUATOR_ARM = "evaluator/judge2"
FAILED_CONVERSATION = "m01_s001_v01__target-a__s0"
JUDGE_FAILED = "m01_s001_v01__target-a__s1"
CUT_OFF = "m01_s001_v02__target-a__s0"
CONVERSATION_ERROR = "user model: timeout after 3 retries"
JUDGE_ERROR = f"{NO_VERDICT}: judge: malformed JSON"


def plant_failures(layout: Layout) -> None:
    """target-a: one conversation failed in simulation, one the judge could not decide, and
    one whose last reply was cut off at max_tokens, as the stages write them."""
    convs = read_artifact(layout.conversations_file("target-a"), ConversationsFile)
    rows = []
    for conv in convs.rows:
        if conv.conv_id == FAILED_CONVERSATION:
            conv = conv.model_copy(update={"status": "error", "error": CONVERSATION_ERROR,
                                           "transcript": conv.transcript[:1], "ended_by": None,
                                           "turns": 0})
        elif conv.conv_id == CUT_OFF:
            last = conv.transcript[-1].model_copy(update={"truncated": True})
            conv = conv.model_copy(update={"transcript": [*conv.transcript[:-1], last]})
        rows.append(conv)
    write_artifact(layout.conversations_file("target-a"),
                   ConversationsFile.model_validate(convs.model_copy(update={"rows": rows})
                                                    .model_dump()))
    scores = read_artifact(layout.scores_file("target-a"), ScoresFile)
    no_verdict = {"present": None, "passed": None, "justification": None, "status": "error",
                  "turn_verdicts": [], "onset": None}
    rows = []
    for row in scores.rows:
        if row.conv_id == FAILED_CONVERSATION:
            row = row.model_copy(update={**no_verdict, "judges": [],
                                         "error": f"{CONVERSATION_FAILED}: {CONVERSATION_ERROR}"})
        elif row.conv_id == JUDGE_FAILED:
            row = row.model_copy(update={**no_verdict, "error": JUDGE_ERROR, "judges": [
                JudgeVerdict(model_id="judge", status="error", error="malformed JSON")]})
        rows.append(row)
    fidelity = [f for f in scores.fidelity or [] if f.conv_id != FAILED_CONVERSATION]
    write_artifact(layout.scores_file("target-a"), ScoresFile.model_validate(
        scores.model_copy(update={"rows": rows, "fidelity": fidelity}).model_dump()))
