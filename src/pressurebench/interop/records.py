"""The normalized form of an imported conversation, whatever file it came from.

Both readers (`inspect_import`, `jsonl_import`) produce `ImportedConversation`s, checked here
once: a bad sample is refused with its file and id, never imported as a shorter or emptier
conversation than it was.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from ..errors import ConfigError
from ..schemas import SCHEMA_VERSION, Message, Row

# The metadata field a sample names its metric in; without it, every metric of the benchmark.
METRIC_FIELD = "metric"
# Sample ids become parts of conversation ids (file names of reports, label keys).
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$"


class ImportedConversation(Row):
    id: str = Field(pattern=ID_PATTERN, description="the sample's id in its file")
    sample: int = Field(default=0, ge=0, description="the repeat (an Inspect epoch - 1)")
    source: str = Field(description="the file it was read from")
    system_prompt: str | None = None
    messages: list[Message] = Field(description="the turns, system messages excluded")
    group: str | None = None
    metric: str | None = Field(default=None, description="the metric it is judged on; None: all")
    metadata: dict[str, Any] = Field(default_factory=dict)
    model: str | None = Field(default=None, description="the model that replied, where said")

    @model_validator(mode="after")
    def _a_conversation(self):
        if not self.messages:
            raise ValueError("it has no user or assistant message (a system-only sample)")
        if not any(m.role == "user" for m in self.messages):
            raise ValueError("it has no user message")
        if not any(m.role == "assistant" and m.content.strip() for m in self.messages):
            raise ValueError("it has no assistant reply")
        if any(m.role == "system" for m in self.messages):
            raise ValueError("a system message after the conversation began")
        return self

    @property
    def key(self) -> str:
        return self.id if self.sample == 0 else f"{self.id}:e{self.sample + 1}"


class ImportedSource(Row):
    path: str
    format: Literal["inspect", "jsonl"]
    sha256: str
    conversations: int


class ImportedFile(Row):
    """`imports/<benchmark>/<target>.json`: what `pressurebench import` read, normalized."""

    schema_version: Literal[1] = SCHEMA_VERSION
    benchmark: str
    target: str
    cluster_by: str | None = None
    sources: list[ImportedSource]
    rows: list[ImportedConversation] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self):
        seen: set[tuple[str, int]] = set()
        for row in self.rows:
            if (row.id, row.sample) in seen:
                raise ValueError(f"sample '{row.key}' appears twice")
            seen.add((row.id, row.sample))
        return self


def build(
    path: str,
    sample_id: Any,
    messages: list[tuple[str, str]],
    *,
    sample: int = 0,
    group: Any = None,
    metadata: dict[str, Any] | None = None,
    model: str | None = None,
) -> ImportedConversation:
    """One conversation from (role, text) pairs: leading system messages become its system
    prompt. Raises ConfigError naming the file and the sample."""
    where = f"sample '{sample_id}'" + (f" (epoch {sample + 1})" if sample else "")
    if not messages:
        raise ConfigError(path, "it has no chat messages", where)
    system: list[str] = []
    i = 0
    while i < len(messages) and messages[i][0] == "system":
        system.append(messages[i][1])
        i += 1
    for role, _ in messages[i:]:
        if role not in ("user", "assistant", "system"):
            raise ConfigError(
                path, f"it has a '{role}' message: only chat transcripts (system, user, "
                "assistant) are judged, never tool use", where,
            )
    metadata = dict(metadata or {})
    metric = metadata.get(METRIC_FIELD)
    try:
        return ImportedConversation(
            id=str(sample_id), sample=sample, source=path,
            system_prompt="\n\n".join(system) if system else None,
            messages=[Message(role=r, content=t) for r, t in messages[i:]],
            group=None if group is None else str(group),
            metric=None if metric is None else str(metric),
            metadata=metadata, model=model,
        )
    except ValidationError as exc:
        reasons = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        raise ConfigError(path, reasons, where) from None
