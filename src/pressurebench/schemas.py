"""Every file the pipeline reads or writes, as pydantic models.

Field names follow impactbench's (`persona`, `latent_adversarial_goal`,
`landmarks[{turn, instruction}]`, `transcript[{role, content}]`, `present`,
`passed`, `sample`, ...) so its data can be imported. A rename is one edit here.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    field_validator,
    model_validator,
)

SCHEMA_VERSION: Final = 1

MetricId = Annotated[str, Field(pattern=r"^m\d{2,}$")]
Status = Literal["ok", "error"]

_SCENARIO_ID = re.compile(r"^(m\d{2,})_s(\d{3,})_v(\d{2,})$")


class Row(BaseModel):
    """The base of every record a file holds, here and in every other module: a field the
    model does not declare is refused, so a misspelt or stale key is an error, never dropped."""

    model_config = ConfigDict(extra="forbid")


def optional(
    description: str, *, ge: float | None = None, gt: float | None = None,
    le: float | None = None, max_length: int | None = None,
) -> Any:
    """A field that may be left out: null unless given (then within the bounds, as `Field`
    takes them), and what leaving it out means in its `description`. Null is the absence of a
    value, never a stand-in for 0 or for a default a reader must guess."""
    return Field(default=None, description=description, ge=ge, gt=gt, le=le, max_length=max_length)


def unique_by(key: str, what: str) -> AfterValidator:
    """The validator of a list of rows that are found by their `key` (`what` names the keys in
    the error): a key that stands twice is an error."""

    def check(rows: list[Any]) -> list[Any]:
        keys = [getattr(row, key) for row in rows]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{what} are not unique")
        return rows

    return AfterValidator(check)


# --- benchmark definitions -------------------------------------------------


class Metric(Row):
    """One observable behaviour. For a negative metric the definition describes the behaviour to avoid."""

    id: MetricId
    name: str = Field(min_length=1, max_length=300)
    type: Literal["positive", "negative"]
    definition: str = Field(min_length=1, max_length=5000)
    examples: list[Annotated[str, Field(max_length=2000)]] = Field(default_factory=list, max_length=50)


class ScenarioContext(Row):
    user_context: str | None = Field(default=None, max_length=20000)


class GenerationError(Row):
    """A generation step that failed after its bounded retries: counted, never papered over."""

    stage: Literal["gen_metrics", "gen_scenarios"]
    metric_id: str | None = None
    base_id: str | None = None
    demographic: dict[str, str] | None = None
    reason: str


class Benchmark(Row):
    """Bounded like every input a user writes: each text goes into prompts, so one far past
    these bounds is a mistake that would cost tokens (or a context window) on every call."""

    name: str = Field(min_length=1, max_length=300)
    description: str = Field(min_length=1, max_length=20000)
    scenario: ScenarioContext = Field(default_factory=ScenarioContext)
    metrics: list[Metric] = Field(default_factory=list)
    generator: str | None = optional("model id that wrote the metrics; absent when hand-written")
    errors: list[GenerationError] = Field(
        default_factory=list,
        description="metrics gen_metrics was asked for but could not write: non-empty means short",
    )

    @field_validator("metrics")
    @classmethod
    def _unique_ids(cls, metrics: list[Metric]):
        seen: set[str] = set()
        for m in metrics:
            if m.id in seen:
                raise ValueError(f"duplicate metric id '{m.id}'")
            seen.add(m.id)
        return metrics

    def metric(self, metric_id: str) -> Metric:
        for m in self.metrics:
            if m.id == metric_id:
                return m
        raise KeyError(metric_id)


# --- scenarios -------------------------------------------------------------


class Landmark(Row):
    turn: int = Field(ge=1)
    instruction: str = Field(min_length=1)


def scenario_id(metric_id: str, scenario_no: int, variant_no: int) -> str:
    """Lineage id `m01_s002_v01`: metric, base scenario, demographic variant."""
    return f"{metric_id}_s{scenario_no:03d}_v{variant_no:02d}"


def base_id_of(scenario_id_: str) -> str:
    m = _SCENARIO_ID.match(scenario_id_)
    if not m:
        raise ValueError(f"'{scenario_id_}' is not a lineage id like m01_s002_v01")
    return f"{m.group(1)}_s{m.group(2)}"


class Scenario(Row):
    """One demographic variant of a base scenario: the row simulate plays."""

    id: str = Field(pattern=_SCENARIO_ID.pattern)
    metric_id: MetricId
    base_id: str
    persona: str = Field(min_length=1)
    user_goal: str = Field(min_length=1)
    latent_adversarial_goal: str = Field(min_length=1)
    landmarks: list[Landmark] = Field(default_factory=list)
    demographic: dict[str, str] = Field(default_factory=dict)
    system_prompt: str | None = optional("overrides the target's system prompt")

    @model_validator(mode="after")
    def _lineage(self):
        if base_id_of(self.id) != self.base_id:
            raise ValueError(f"base_id '{self.base_id}' does not match id '{self.id}'")
        if not self.id.startswith(self.metric_id + "_"):
            raise ValueError(f"metric_id '{self.metric_id}' does not match id '{self.id}'")
        return self


class BenchmarkFile(Row):
    """What every artifact file of one benchmark starts with: its schema version, then the
    benchmark it belongs to."""

    schema_version: Literal[1] = SCHEMA_VERSION
    benchmark: str


class TargetFile(BenchmarkFile):
    """An artifact file of one target of a benchmark: the target follows the benchmark."""

    target: str


class ScenariosFile(BenchmarkFile):
    rows: Annotated[list[Scenario], unique_by("id", "scenario ids")]
    errors: list[GenerationError] = Field(default_factory=list)
    curated: list[str] = Field(
        default_factory=list, description="ids of rows taken from the curated scenarios file"
    )


# --- usage and cost --------------------------------------------------------


class ModelUsage(Row):
    """Token usage of one model. `cost_usd` is null when a price is unknown: null is not 0.

    A conversation row describes the calls it consists of, which must not depend
    on whether a run replayed them from the cache: there `cost_usd` is the list
    price of the tokens, and `cached_calls` and `latency_s` are null (what one
    run actually replayed, spent and waited is in that stage's cost file).
    """

    calls: int = 0
    cached_calls: int | None = 0
    failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0  # hidden reasoning included: it is billed as output
    reasoning_tokens: int = 0  # of output_tokens, spent on a reasoning model's hidden reasoning
    cached_input_tokens: int = 0  # of input_tokens, read from the provider's prompt cache
    cache_write_tokens: int = 0  # of input_tokens, written to the provider's prompt cache
    cost_usd: float | None = 0.0
    latency_s: float | None = 0.0


class RecordedUsage(Row):
    """What one model's calls of a stage cost and took when they were made, replayed calls
    included: the cost and time each call's reply carries in the cache and the stage's record
    (`llm.types.ProviderResponse`). A run that replays every call pays nothing (`ModelUsage`)
    and still knows what its calls cost. A reply stored before costs were kept is priced at
    the params' list prices; one stored without its time is left out of `timed_calls`."""

    calls: int = Field(default=0, ge=0)
    cost_usd: float | None = Field(default=0.0, description="None when a model has no price")
    timed_calls: int = Field(default=0, ge=0, description="calls whose time was recorded")
    latency_s: float = Field(default=0.0, ge=0, description="their times summed")


class ConcurrencyReport(Row):
    """How one API model's calls in flight followed its provider's rate limits (AIMD)."""

    maximum: int
    lowest: int
    final: int
    decreases: int = Field(description="times a rate-limit answer (HTTP 429) halved the limit")
    rate_limited: int = Field(description="rate-limit answers (HTTP 429) received")


class PriceSource(Row):
    """Where one model's prices came from and what they were, as its calls were priced: the
    params' own, a price table (its name and version, the entry the model name matched and
    the date its prices apply to), or none (cost unknown, never 0). Rates are USD per million
    tokens; a table's rate is its base one (some models bill long prompts at a higher rate,
    which the cost includes)."""

    source: str | None = Field(
        description="'params', the price table and its version (e.g. 'genai-prices 0.2.3'), a "
        "provider that charges nothing ('local (no charge)'), or null: no price is known",
    )
    table_entry: str | None = optional("the table's provider/model the model name matched")
    on: str | None = optional("the date (UTC) the table's prices apply to")
    batch: bool = Field(default=False, description="its calls went through the provider's batch API")
    input: float | None = None
    cached_input: float | None = optional("input read from a prompt cache; null: priced as input")
    cache_write: float | None = optional("input written to a prompt cache")
    output: float | None = None
    long_prompt_tiers: bool = Field(
        default=False, description="the table bills long prompts at a higher rate (included in cost)",
    )


class Cost(Row):
    schema_version: Literal[1] = SCHEMA_VERSION
    by_model: dict[str, ModelUsage] = Field(default_factory=dict)
    prices: dict[str, PriceSource] = Field(
        default_factory=dict, description="per model, where its prices came from and what they were",
    )
    total_cost_usd: float | None = 0.0
    unknown_price_models: list[str] = Field(default_factory=list)
    cached_price_unknown_models: list[str] = Field(
        default_factory=list,
        description="models that read input from a prompt cache but have no "
        "price_per_mtok_cached_in: that input is priced at the full input price",
    )
    recorded: dict[str, RecordedUsage] = Field(
        default_factory=dict,
        description="per model, what the calls cost and took when they were made (replays too)",
    )
    recorded_cost_usd: float | None = optional("what every call of the stage cost when it was made")
    concurrency: dict[str, ConcurrencyReport] = Field(default_factory=dict)
    cache_repaired: int = Field(
        default=0, ge=0,
        description="damaged cache entries (unreadable, of another call, invalid) asked again and rewritten",
    )


# --- conversations ---------------------------------------------------------


class Message(Row):
    role: Literal["system", "user", "assistant"]
    content: str
    truncated: bool = Field(default=False, description="the reply was cut off at max_tokens")


# The roles a judge (and a human rater) reads, as the judge's prompt names them: system
# messages are never shown, since a scenario may set the target's system prompt.
SPEAKER_LABELS = {"user": "User", "assistant": "Assistant"}


class ConversationRow(Row):
    """A row about one conversation: which it is (its id, its scenario's lineage, the target
    that replied, the sample) comes first."""

    conv_id: str
    scenario_id: str
    base_id: str
    metric_id: str
    target: str
    sample: int = Field(ge=0)


class Conversation(ConversationRow):
    demographic: dict[str, str] = Field(default_factory=dict)
    user_model: str
    system_prompt: str | None = None
    transcript: list[Message] = Field(default_factory=list)
    status: Status
    error: str | None = None
    ended_by: Literal["user", "max_turns"] | None = None
    turns: int = 0
    user_redraws: int = Field(
        default=0, ge=0,
        description="times the user's first message was drawn again (generation.fidelity_retries)",
    )
    model_versions: dict[str, str | None] = Field(default_factory=dict)
    usage: dict[str, ModelUsage] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _status_consistent(self):
        if self.status == "error" and not self.error:
            raise ValueError("an error row needs a reason")
        if self.status == "ok" and not any(m.role == "assistant" for m in self.transcript):
            raise ValueError("an ok conversation needs at least one assistant reply")
        return self


def conv_id(scenario_id_: str, target: str, sample: int) -> str:
    return f"{scenario_id_}__{target}__s{sample}"


def skipped_field():
    return optional(
        "why the target has no rows for this benchmark (an imported target with no "
        "conversations imported for it); null: the stage ran",
    )


class SkippedTarget(TargetFile):
    """A file of a target the benchmark does not run (its `skipped` says why) holds no row."""

    @model_validator(mode="after")
    def _skipped_holds_no_rows(self):
        if getattr(self, "skipped", None) is not None and getattr(self, "rows", None):
            raise ValueError("a skipped target's file holds no rows")
        return self


class ConversationsFile(SkippedTarget):
    rows: list[Conversation]
    skipped: str | None = skipped_field()


# --- scores ----------------------------------------------------------------

# Every error reason a score row can carry starts with one of these, so
# aggregation and reports can count errors by cause.
CONVERSATION_FAILED = "conversation failed"
NO_VERDICT = "no judge returned a verdict"
JUDGES_TIED = "judges tied"
ERROR_CATEGORIES = (CONVERSATION_FAILED, NO_VERDICT, JUDGES_TIED)


def error_category(reason: str) -> str:
    """The cause of a score error row; "other" for reasons written elsewhere (imported data)."""
    for category in ERROR_CATEGORIES:
        if reason.startswith(category):
            return category
    return "other"


def verdict_unless_error(
    status: Status, error: str | None, verdict: tuple[object, ...], *,
    error_with_verdict: str, ok_without_verdict: str,
) -> None:
    """The rule of every judged row: an ok row has each part of its verdict, an error row none
    of them and a reason (a failed judgement is never read as a verdict)."""
    if status == "error":
        if any(part is not None for part in verdict) or not error:
            raise ValueError(error_with_verdict)
    elif any(part is None for part in verdict):
        raise ValueError(ok_without_verdict)


class JudgeVerdict(Row):
    model_id: str
    present: bool | None = None
    justification: str | None = None
    status: Status
    error: str | None = None
    model_version: str | None = None


class TurnVerdict(Row):
    """The panel's verdict on the transcript up to and including the assistant's `turn`-th reply.

    Judged blind like the whole transcript; a failed judgement is an error for this
    turn alone, never the verdict of a neighbouring turn carried over.
    """

    turn: int = Field(ge=1)
    present: bool | None = None
    passed: bool | None = None
    status: Status
    error: str | None = None
    judges: list[JudgeVerdict] = Field(default_factory=list)

    @model_validator(mode="after")
    def _verdict_consistent(self):
        verdict_unless_error(self.status, self.error, (self.present, self.passed),
                             error_with_verdict="an error turn carries no verdict and needs a reason",
                             ok_without_verdict="an ok turn needs a verdict")
        return self


class Onset(Row):
    """When the target first failed the metric, read off its per-turn verdicts.

    A right-censored time: `observed_turns` is the turn it gave in (`turn`) or,
    when it never did while observed, the last turn it was seen holding.
    Observation stops at the conversation's last reply ("end" after the full
    `generation.turns`, "ended_early" when the user stopped sooner) or before the
    first turn the judges could not decide ("judge_error"): what came after is
    unknown, not a pass.
    """

    turn: int | None = optional("first failing turn; None if none", ge=1)
    observed_turns: int = Field(ge=0)
    censored: Literal["end", "ended_early", "judge_error"] | None = None
    flips: int = Field(ge=0, description="verdict changes between consecutive judged turns")
    recovered: bool | None = optional(
        "gave in, then passed at the last turn; None if it never gave in",
    )

    @model_validator(mode="after")
    def _event_or_censored(self):
        if (self.turn is None) == (self.censored is None):
            raise ValueError("an onset is either observed (turn) or censored, not both")
        if self.turn is not None and self.turn != self.observed_turns:
            raise ValueError("an observed onset ends observation at its turn")
        return self


class Score(Row):
    conv_id: str
    scenario_id: str
    base_id: str
    metric_id: str
    scenario_metric_id: str
    metric_type: Literal["positive", "negative"]
    target: str
    sample: int = Field(ge=0)
    demographic: dict[str, str] = Field(default_factory=dict)
    present: bool | None = None
    passed: bool | None = None
    justification: str | None = None
    status: Status
    error: str | None = None
    judges: list[JudgeVerdict] = Field(default_factory=list)
    turn_verdicts: list[TurnVerdict] = Field(
        default_factory=list,
        description="per-turn verdicts (evaluation.per_turn); the last is the row's own verdict",
    )
    onset: Onset | None = None

    @model_validator(mode="after")
    def _verdict_consistent(self):
        if [t.turn for t in self.turn_verdicts] != list(range(1, len(self.turn_verdicts) + 1)):
            raise ValueError("turn verdicts must be turns 1, 2, ... in order")
        if self.turn_verdicts and self.turn_verdicts[-1].present != self.present:
            raise ValueError("the last turn's verdict is the row's verdict")
        if self.status == "error":
            if self.present is not None or self.passed is not None:
                raise ValueError("an error row carries no verdict")
            if not self.error:
                raise ValueError("an error row needs a reason")
        else:
            if self.present is None or self.passed is None:
                raise ValueError("an ok row needs a verdict")
            expected = self.present if self.metric_type == "positive" else not self.present
            if self.passed != expected:
                raise ValueError("passed does not follow from present and the metric type")
        return self


# --- fidelity of the instrument --------------------------------------------------
# Did the simulated user play its part, and did the target notice it was being tested?

# What a user turn or a whole conversation can break. Each is the failure, so True is a break.
USER_BREAKS = ("out_of_character", "leak", "role_swap", "landmark_skipped", "no_pressure")
TEST_AWARENESS = "test_awareness"
UserBreak = Literal["out_of_character", "leak", "role_swap", "landmark_skipped", "no_pressure"]
FidelityKind = Literal[
    "out_of_character", "leak", "role_swap", "landmark_skipped", "no_pressure", "test_awareness"
]


class FidelityJudgeVerdict(Row):
    """One fidelity judge's answer to one check: `flagged` is True when it found the break."""

    model_id: str
    flagged: bool | None = None
    justification: str | None = None
    status: Status
    error: str | None = None
    model_version: str | None = None


class FidelityCheck(Row):
    """One check of one turn (`turn` None: of the whole conversation), decided by a detector
    or by the fidelity judge(s). An undecided check is an error with a reason, never a pass."""

    kind: FidelityKind
    turn: int | None = Field(default=None, ge=1)
    flagged: bool | None = None
    decided_by: Literal["detector", "judge"] | None = None
    reason: str | None = optional("the detector's rule or the judge's words")
    status: Status
    error: str | None = None
    judges: list[FidelityJudgeVerdict] = Field(default_factory=list)

    @model_validator(mode="after")
    def _decided_or_error(self):
        verdict_unless_error(
            self.status, self.error, (self.flagged, self.decided_by),
            error_with_verdict="an undecided check carries no verdict and needs a reason",
            ok_without_verdict="a decided check needs a verdict and what decided it",
        )
        if (self.kind == "no_pressure") != (self.turn is None):
            raise ValueError("no_pressure is checked per conversation, every other kind per turn")
        return self


class ConversationFidelity(ConversationRow):
    """Every fidelity check of one conversation, and what they add up to.

    `broken`: some user check found a break (True); none did and all were
    decided (False); none did but some could not be decided (None, and the
    row is an error: an unchecked turn is not a faithful one). `test_aware`
    likewise over the target's replies.
    """

    user_model: str
    demographic: dict[str, str] = Field(default_factory=dict)
    ended_by: Literal["user", "max_turns"] | None = optional(
        "as recorded by simulate: 'user' is an early end",
    )
    status: Status
    error: str | None = None
    broken: bool | None = None
    breaks: list[UserBreak] = Field(default_factory=list, description="kinds found, in order")
    test_aware: bool | None = None
    checks: list[FidelityCheck] = Field(default_factory=list)

    @model_validator(mode="after")
    def _adds_up(self):
        user = [c for c in self.checks if c.kind != TEST_AWARENESS]
        aware = [c for c in self.checks if c.kind == TEST_AWARENESS]
        found = list(dict.fromkeys(c.kind for c in user if c.flagged))
        broken = True if found else (None if any(c.status == "error" for c in user) or not user else False)
        awareness = (
            True if any(c.flagged for c in aware)
            else None if any(c.status == "error" for c in aware) or not aware else False
        )
        if self.breaks != found or self.broken is not broken or self.test_aware is not awareness:
            raise ValueError("broken, breaks and test_aware must follow from the checks")
        if (self.status == "error") != (broken is None) or (self.status == "error") != bool(self.error):
            raise ValueError("a row is an error exactly when its breaks are undecided, with a reason")
        return self


class ScoresFile(SkippedTarget):
    per_turn: bool = Field(default=False, description="rows carry per-turn verdicts and onsets")
    rows: list[Score]
    fidelity: list[ConversationFidelity] | None = optional(
        "fidelity checks, one row per conversation; None when they were not run",
    )
    skipped: str | None = skipped_field()


# --- the judge probes (`validation.judge_probes`) ----------------------------------

EditProbe = Literal["identity", "paraphrase", "verbosity"]


class MessageEdit(Row):
    """One message a probe rewrote: where it is in the transcript and how long it was before
    and after (characters), so the size of every edit is on record."""

    index: int = Field(ge=0, description="position in the transcript")
    role: Literal["user", "assistant"]
    chars_before: int = Field(ge=0)
    chars_after: int = Field(ge=0)
    truncated: bool = Field(default=False, description="the editing model's reply was cut off")


class ProbeEdit(Row):
    """One of the main arm's conversations after one probe's edit, or the reason there is none.

    identity: the user's turns rewritten into the voice of the other demographic variant of
    the same base scenario (`as_scenario_id`); the target's replies are byte-identical.
    paraphrase: the user's turns rewritten in other words in the same voice; the target's
    replies are byte-identical.
    verbosity: every target reply followed by a restatement of itself; the user's turns are
    byte-identical.
    """

    probe: EditProbe
    conv_id: str
    scenario_id: str
    as_scenario_id: str | None = optional(
        "identity: the variant whose voice the user's turns now speak in",
    )
    as_demographic: dict[str, str] = Field(
        default_factory=dict, description="identity: that variant's demographic values"
    )
    status: Status
    error: str | None = None
    edits: list[MessageEdit] = Field(default_factory=list)
    transcript: list[Message] = Field(
        default_factory=list, description="the edited transcript; empty on an error row"
    )

    @model_validator(mode="after")
    def _status_consistent(self):
        if self.status == "error" and not self.error:
            raise ValueError("an error row needs a reason")
        if self.status == "ok" and not self.transcript:
            raise ValueError("an ok row needs its edited transcript")
        return self


class ProbeEditsFile(TargetFile):
    editor: str = Field(description="the model that wrote the edits (roles.generator)")
    probes: list[EditProbe]
    scenario_ids: list[str] = Field(description="the study subset's scenario rows")
    rows: list[ProbeEdit]


class ProbeScores(Row):
    """One probe's verdicts on one target's conversations, or why it judged none."""

    judges: list[str] = Field(description="the judge(s) of this probe's rows")
    rows: list[Score]
    reason: str | None = optional("why there are no rows")


class ProbeScoresFile(TargetFile):
    evaluators: list[str] = Field(description="the main arm's judge(s)")
    probes: dict[str, ProbeScores]


# --- structured outputs the models are asked for -------------------------------
# Every string and list is bounded: the embedded model is tiny and rambles.


class JudgeOutput(Row):
    """The evaluator's answer. `present` must be a real JSON boolean: "false" is not False."""

    justification: str = Field(min_length=1, max_length=600)
    present: StrictBool


class FidelityOutput(Row):
    """What every answer of the fidelity judge starts with: why, in a bounded text."""

    justification: str = Field(min_length=1, max_length=400)


class UserTurnFidelityOutput(FidelityOutput):
    """The fidelity judge's answer about one simulated-user message."""

    in_character: StrictBool
    leak: StrictBool
    role_swap: StrictBool


class LandmarkTurnFidelityOutput(UserTurnFidelityOutput):
    """The same, at a turn where the user's plan asked for something (a landmark)."""

    landmark_followed: StrictBool


class PressureOutput(FidelityOutput):
    """The fidelity judge's answer about a whole conversation's user messages."""

    pressure_applied: StrictBool


class AwarenessOutput(FidelityOutput):
    """The fidelity judge's answer about one assistant reply."""

    test_aware: StrictBool


class UserTurn(Row):
    """The simulated user's move. `thought` never reaches the transcript."""

    # One sentence and one to three sentences, as the prompt asks: small models fill any
    # bound they are given.
    thought: str = Field(max_length=160)
    message: str = Field(min_length=1, max_length=400)
    end_conversation: StrictBool

    @field_validator("message")
    @classmethod
    def _says_something(cls, v: str) -> str:
        # Whitespace satisfies minLength in constrained decoding; rejecting it here makes
        # the client re-ask (a repair retry) instead of the turn failing outright.
        if not v.strip():
            raise ValueError("the message is blank: write what the user says")
        return v


# --- provenance --------------------------------------------------------------


class Manifest(Row):
    """What produced an artifact: enough to reproduce it or to know it cannot be."""

    schema_version: Literal[1] = SCHEMA_VERSION
    stage: str
    benchmark: str
    target: str | None = None
    arm: str | None = None
    started_at: str
    finished_at: str
    duration_s: float
    pressurebench_version: str
    python_version: str
    packages: dict[str, str | None]
    params_sha256: str
    params: dict
    prompt_sha256: dict[str, str]
    models: dict[str, dict]
    model_versions: dict[str, list[str]]
    seeds: dict[str, int | None]
    counts: dict[str, int]
    cache: dict[str, int]
    cost_usd: float | None
    prices: dict[str, PriceSource] = Field(
        default_factory=dict, description="per model, where its prices came from and what they were",
    )
