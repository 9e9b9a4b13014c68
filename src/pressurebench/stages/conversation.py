"""What each side of a simulated conversation is shown.

The transcript is kept once, from the target's side: the simulated user's
messages are `user` turns, the target's replies are `assistant` turns. The
user model sees the same conversation mirrored, because it is the one
speaking: its own messages are its `assistant` turns and the target's replies
arrive as `user` turns.

Only the user model knows what is being tested. Its instructions, private
thoughts and stage directions never enter the transcript, so the target (and
later the evaluator) sees nothing but the conversation itself.
"""

from __future__ import annotations

from ..llm.types import ModelSettings
from ..prompts import render
from ..schemas import Benchmark, Landmark, Message, Metric, Scenario

USER_PROMPTS = ["user_system", "user_start", "user_direction"]

_MIRROR = {"user": "assistant", "assistant": "user"}


def target_system_prompt(scenario: Scenario, benchmark: Benchmark, target: ModelSettings) -> str | None:
    """The scenario's system prompt, else the benchmark's context, else the target's, or none."""
    for candidate in (
        scenario.system_prompt,
        benchmark.scenario.user_context,
        target.system_prompt,
    ):
        if candidate is not None:
            return candidate
    return None


def target_messages(system_prompt: str | None, transcript: list[Message]) -> list[dict]:
    system = [{"role": "system", "content": system_prompt}] if system_prompt is not None else []
    return system + [{"role": m.role, "content": m.content} for m in transcript]


def user_system_prompt(scenario: Scenario, metric: Metric, *, landmarks_up_front: bool) -> str:
    """The simulated user's brief: who it is, what it wants, and what would make the target fail.

    With `landmarks_up_front` the whole plan is here and the user model paces
    itself; otherwise each landmark arrives only at its turn (`user_direction`).
    The brief does not say how many messages the user has: nothing the user
    side sees depends on `generation.turns`, so a longer run extends the
    shorter one's conversations instead of replacing them (see `simulate`).
    """
    return render(
        "user_system",
        persona=scenario.persona,
        user_goal=scenario.user_goal,
        latent_goal=scenario.latent_adversarial_goal,
        metric_name=metric.name,
        metric_definition=metric.definition,
        metric_type=metric.type,
        landmarks=sorted(scenario.landmarks, key=lambda lm: lm.turn) if landmarks_up_front else [],
    )


def user_model_messages(
    system_prompt: str, transcript: list[Message], *, turn: int, due: list[Landmark]
) -> list[dict]:
    """The user model's request for turn `turn`: the mirrored transcript plus this turn's direction.

    The conversation opens with a fixed `user_start` message, since chat APIs
    expect a user turn first. The stage direction (the turn number and the
    landmarks `due` now) follows the latest incoming message, in a message of its own
    in this request only; later requests rebuild their history from the transcript and
    never see it. So each request repeats the one before it up to that direction, and a
    provider's prompt cache serves all of it (`llm.prompt_cache`).
    """
    history = [{"role": "user", "content": render("user_start")}]
    history += [
        {"role": _MIRROR[m.role], "content": m.content} for m in transcript if m.role in _MIRROR
    ]
    if history[-1]["role"] != "user":
        raise ValueError("the user model can only be asked to speak after an incoming message")
    direction = render(
        "user_direction", turn=turn, landmarks=[lm.instruction for lm in due]
    )
    return [{"role": "system", "content": system_prompt}, *history, {"role": "user", "content": direction}]


def landmarks_due(scenario: Scenario, turn: int) -> list[Landmark]:
    return [lm for lm in scenario.landmarks if lm.turn == turn]
