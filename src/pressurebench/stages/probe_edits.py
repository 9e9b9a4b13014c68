"""The controlled edits of the judge probes: one irrelevant feature of a transcript changed.

The judge probes re-judge the main arm's conversations after one edit each and count how often
the verdict moves. An edit must change only the feature it probes, so each is narrow:

- identity: each user turn rewritten by the generator (the model that wrote the demographic
  variants in scenario expansion) into the voice of the other variant of the same base
  scenario; the target's replies stay byte-identical, so the judge reads the same replies to
  a different person. The other variant of the first variant of a base scenario is its second;
  of every other variant, the first.
- paraphrase: each user turn rewritten by the generator in other words in the *same* voice
  (the same person typing it again), the target's replies byte-identical: the identity edit
  without the identity. How often it moves the verdict is the edit's own floor: a rewritten
  transcript can read oddly beside replies to the original, and a judge may react to that,
  not to who the user is.
- verbosity: each target reply followed by a restatement of itself, written by the generator
  and told to add nothing; the user's turns stay byte-identical.

Every edit is a call through the one model client, so it is cached and recorded like any other,
and its lengths before and after are kept with it. A failed call makes the conversation an
error row for that probe, with the reason; it is never judged unedited.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Literal

from ..llm.client import ModelClient
from ..prompts import render
from ..schemas import (
    Conversation,
    EditProbe,
    Message,
    MessageEdit,
    ProbeEdit,
    Scenario,
)

IDENTITY_PROMPT = "probe_identity"
PARAPHRASE_PROMPT = "probe_paraphrase"
VERBOSITY_PROMPT = "probe_verbosity"
PROMPTS = {"identity": IDENTITY_PROMPT, "paraphrase": PARAPHRASE_PROMPT,
           "verbosity": VERBOSITY_PROMPT}
EDIT_SAMPLE = 0
NO_OTHER_VARIANT = "no other variant"


def describe(demographic: dict[str, str]) -> str:
    """`age: teenager; gender: woman`, as scenario expansion shows a profile to the generator."""
    return "; ".join(f"{axis}: {value}" for axis, value in demographic.items()) or "anyone"


def other_variants(scenarios: Iterable[Scenario]) -> dict[str, Scenario]:
    """Each scenario row's counterpart for the identity probe: the base scenario's first variant
    for every other variant, its second for the first. Rows of a base scenario with a single
    variant have none."""
    by_base: dict[str, list[Scenario]] = {}
    for s in scenarios:
        by_base.setdefault(s.base_id, []).append(s)
    out = {}
    for rows in by_base.values():
        rows = sorted(rows, key=lambda s: s.id)
        if len(rows) < 2:
            continue
        out[rows[0].id] = rows[1]
        for s in rows[1:]:
            out[s.id] = rows[0]
    return out


async def _edit_text(client: ModelClient, editor: str, prompt: str) -> tuple[str | None, bool, str]:
    """The editor's text reply: (text, truncated, error)."""
    result = await client.chat(editor, [{"role": "user", "content": prompt}], sample=EDIT_SAMPLE,
                               allow_truncated=True)
    text = (result.text or "").strip() if result.ok else ""
    if not result.ok or not text:
        return None, False, result.error or "the editor returned an empty reply"
    return text, result.truncated, ""


def _error(probe: EditProbe, conv: Conversation, reason: str, **extra) -> ProbeEdit:
    return ProbeEdit(probe=probe, conv_id=conv.conv_id, scenario_id=conv.scenario_id,
                     status="error", error=reason, **extra)


async def _rewritten(client: ModelClient, editor: str, conv: Conversation, probe: EditProbe,
                     role: Literal["user", "assistant"], prompt: Callable[[str], str], what: str,
                     *, keep_original: bool = False, **extra) -> ProbeEdit:
    """The conversation with each of its `role` messages replaced by the editor's reply to
    `prompt(message)` (or followed by it, with `keep_original`); an error row naming the first
    message the editor did not rewrite (`what` of message i) when one failed. `extra` goes into
    both rows."""
    at = [i for i, m in enumerate(conv.transcript) if m.role == role]
    replies = await asyncio.gather(*(
        _edit_text(client, editor, prompt(conv.transcript[i].content)) for i in at
    ))
    transcript = list(conv.transcript)
    edits = []
    for i, (text, truncated, error) in zip(at, replies):
        if text is None:
            return _error(probe, conv, f"{what} of message {i}: {error}", **extra)
        before = conv.transcript[i].content
        after = f"{before}\n\n{text}" if keep_original else text
        transcript[i] = transcript[i].model_copy(update={"content": after})
        edits.append(MessageEdit(index=i, role=role, chars_before=len(before),
                                 chars_after=len(after), truncated=truncated))
    return ProbeEdit(probe=probe, conv_id=conv.conv_id, scenario_id=conv.scenario_id,
                     status="ok", edits=edits, transcript=transcript, **extra)


async def identity_edit(client: ModelClient, editor: str, conv: Conversation,
                        other: Scenario | None) -> ProbeEdit:
    """The conversation with its user turns in the other variant's voice."""
    if other is None:
        return _error("identity", conv, f"{NO_OTHER_VARIANT}: the base scenario has one variant")
    source, profile = describe(conv.demographic), describe(other.demographic)
    return await _rewritten(
        client, editor, conv, "identity", "user",
        lambda message: render(IDENTITY_PROMPT, source=source, profile=profile, message=message),
        "rewrite", as_scenario_id=other.id, as_demographic=dict(other.demographic))


async def paraphrase_edit(client: ModelClient, editor: str, conv: Conversation) -> ProbeEdit:
    """The conversation with its user turns in other words, in the same person's voice."""
    source = describe(conv.demographic)
    return await _rewritten(
        client, editor, conv, "paraphrase", "user",
        lambda message: render(PARAPHRASE_PROMPT, source=source, message=message), "paraphrase")


async def verbosity_edit(client: ModelClient, editor: str, conv: Conversation) -> ProbeEdit:
    """The conversation with every target reply followed by a restatement of itself."""
    return await _rewritten(
        client, editor, conv, "verbosity", "assistant",
        lambda reply: render(VERBOSITY_PROMPT, reply=reply), "restatement", keep_original=True)


async def edit_conversations(
    client: ModelClient,
    editor: str,
    conversations: list[Conversation],
    scenarios: list[Scenario],
    probes: list[EditProbe],
) -> list[ProbeEdit]:
    """Every probe's edit of every conversation, probe by probe in conversation order. A failed
    conversation is not edited: it has no verdict to move."""
    others = other_variants(scenarios)

    async def one(probe: EditProbe, conv: Conversation) -> ProbeEdit:
        if conv.status == "error":
            return _error(probe, conv, f"the conversation failed: {conv.error}")
        if probe == "identity":
            return await identity_edit(client, editor, conv, others.get(conv.scenario_id))
        if probe == "paraphrase":
            return await paraphrase_edit(client, editor, conv)
        return await verbosity_edit(client, editor, conv)

    return list(await asyncio.gather(*(one(p, c) for p in probes for c in conversations)))


def edited_conversation(conv: Conversation, edit: ProbeEdit) -> Conversation:
    """The conversation as the judge reads it under the probe: its edited transcript."""
    return conv.model_copy(update={"transcript": [Message(**m.model_dump()) for m in edit.transcript]})
