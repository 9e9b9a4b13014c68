"""The files of the labelling workflow: what a rater labels, what is kept from them, and labels.

A labels file is written by a page in a rater's browser and read back months
later, after the pipeline may have re-run: each row therefore carries the hash
of the transcript it was given, so a label is never joined to a conversation
that has since changed.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Literal

from pydantic import Field, field_validator

from ..schemas import (
    SCHEMA_VERSION,
    TEST_AWARENESS,
    USER_BREAKS,
    FidelityKind,
    Landmark,
    MetricId,
    Row,
    unique_by,
)

LabelValue = Literal["present", "absent", "unsure"]
# The fidelity questions, in the order a page asks them: one per kind of break the fidelity
# checks decide per conversation. "present" is the break (or the target's test awareness).
FIDELITY_KINDS: tuple[str, ...] = (*USER_BREAKS, TEST_AWARENESS)
FIDELITY_COLUMN = "fidelity_"  # a CSV labels file's column of one kind: `fidelity_<kind>`
# `<conversation key>:<metric id>`: 12 hex digits of the conversation id's SHA-256 (conversation
# ids name their target, which raters must not see) and the judged metric.
ITEM_KEY = r"^[0-9a-f]{12}:m\d{2,}$"
SHA256_HEX = r"^[0-9a-f]{64}$"
MAX_BATCH = 1_000_000  # pages of one export; far above any (labels.per_cell and batch_size bound it)


def rater_name(text: str) -> str:
    """A rater's name as one person is known by: NFKC-normalised, case-folded, with control and
    format characters (NUL, zero-width spaces, direction overrides) removed and white space
    collapsed. `Alice`, `alice` and `alice` with a zero-width space are one rater, so one
    person cannot label an item twice under two spellings and inflate agreement."""
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    # Tabs and line breaks are control characters too, but they separate words: spaces.
    kept = (" " if ch.isspace() else ch for ch in text
            if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cf"))
    return " ".join("".join(kept).split())


class Turn(Row):
    """One message as the judge read it."""

    role: Literal["user", "assistant"]
    content: str


class FidelityBrief(Row):
    """What the simulated user was told to play, and the fidelity questions asked about it.

    The fidelity checks judge each user message against the persona, the goals and the
    landmark due, so a rater answering them sees the same; the target's name stays hidden.
    """

    persona: str = Field(min_length=1)
    user_goal: str = Field(min_length=1)
    latent_goal: str = Field(min_length=1, description="what the user steers the assistant toward")
    landmarks: list[Landmark] = Field(
        default_factory=list, description="the plan's steps due at the turns played"
    )
    kinds: list[FidelityKind] = Field(
        min_length=1, description="the questions asked: the kinds the checks decided, in order"
    )


class LabelItem(Row):
    """What a rater labels: exactly the judge's view of one score row, and nothing else; for
    one item of each conversation the fidelity checks covered, also the simulated user's brief."""

    item_key: str = Field(pattern=ITEM_KEY)
    definition: str = Field(min_length=1, description="the metric definition the judge saw")
    examples: list[str] = Field(
        default_factory=list,
        description="example phrases, when the judge saw them (evaluation.show_examples)",
    )
    transcript: list[Turn] = Field(min_length=1, description="the user/assistant turns judged")
    transcript_sha256: str = Field(pattern=SHA256_HEX, description="hash of exactly `transcript`")
    batch: int = Field(ge=1, le=MAX_BATCH, description="the page the item is on")
    fidelity: FidelityBrief | None = Field(
        default=None, description="the fidelity questions, on the item of the conversation's "
        "own metric when its fidelity was checked",
    )


class ExportedItem(LabelItem):
    """An item with the fields kept from the rater: whose conversation, which metric, and why
    it was drawn."""

    item_id: str = Field(description="`<conv_id>:<metric_id>`")
    conv_id: str
    metric_id: MetricId = Field(description="the judged metric (`Score.metric_id`)")
    target: str
    base_id: str
    scenario_metric_id: str
    metric_type: Literal["positive", "negative"]
    panel_disagrees: bool = Field(description="judges of a panel gave different verdicts")
    stratum: Literal["disagreement", "agreement"]
    stratum_rows: int = Field(
        ge=1, description="ok score rows of this target, metric and stratum the item was drawn from",
    )


class LabellingExport(Row):
    """`reports/<b>/labelling/items.json`: every exported item and how the sample was drawn."""

    schema_version: Literal[1] = SCHEMA_VERSION
    benchmark: str
    seed: int
    per_cell: int
    disagreement_share: float
    batch_size: int
    batches: int = Field(ge=0)
    items: Annotated[list[ExportedItem], unique_by("item_key", "item keys")]


class HumanLabel(Row):
    """One row of a labels file: one rater's answer on one item."""

    item_key: str = Field(pattern=ITEM_KEY)
    rater: str = Field(min_length=1, max_length=200, description="normalised: `rater_name`")
    label: LabelValue
    transcript_sha256: str = Field(pattern=SHA256_HEX)
    batch: int = Field(ge=1, le=MAX_BATCH)
    fidelity: dict[FidelityKind, LabelValue] = Field(
        default_factory=dict,
        description="answers to the item's fidelity questions (none in files written before them)",
    )

    @field_validator("rater")
    @classmethod
    def _named(cls, v: str) -> str:
        name = rater_name(v)
        if not name:
            raise ValueError("the rater's name is blank (once control and format characters are removed)")
        return name

    @property
    def conv_key(self) -> str:
        return self.item_key.split(":", 1)[0]

    @property
    def metric_id(self) -> str:
        return self.item_key.split(":", 1)[1]


# A CSV labels file's columns: these, then optionally one `fidelity_<kind>` per kind.
LABEL_FIELDS = tuple(name for name in HumanLabel.model_fields if name != "fidelity")
FIDELITY_FIELDS = tuple(FIDELITY_COLUMN + kind for kind in FIDELITY_KINDS)
