"""The params file (`params/pipeline.yaml`): what to run, validated strictly.

Unknown keys are errors: a misspelt setting that silently falls back to its
default is how a study ends up measuring something other than what it says.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .errors import ConfigError
from .io import read_yaml, validate_as
from .schemas import optional
from .workspace import dotenv_files

# Ids become DVC param paths (`models.<id>`) and directory names, so no dots or slashes:
# write `gpt-4-1`, not `gpt-4.1` (the provider's model name goes in `model:`).
ModelId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]
BenchmarkId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]

class Section(BaseModel):
    """Every params section: unknown keys refused, and values taken as written. A number
    must be one (not the string "20"), finite (no `.inf` cap that caps nothing), and an
    integer field takes no boolean (`turns: true` is no number of turns)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


# Seeds go to numpy and to providers: a non-negative 63-bit integer fits both.
Seed = Annotated[int, Field(ge=0, le=2**63 - 1)]


StructuredOutput = Literal["json_schema", "json_object", "tool", "prompt"]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]
# The counterfactual probes of the judge (`validation.judge_probes`).
JudgeProbe = Literal["identity", "paraphrase", "verbosity", "family", "repeat"]
JUDGE_PROBES: tuple[JudgeProbe, ...] = ("identity", "paraphrase", "verbosity", "family", "repeat")


class ImportedConversations(Section):
    """Conversations another tool had with this target, judged as its own (`pressurebench
    import`): the command writes this entry after it has validated the files and written their
    normalized copy (`paths.imported_file`), which the simulate stage turns into the target's
    conversations instead of simulating any."""

    sources: list[str] = Field(
        min_length=1,
        description="the files imported (Inspect eval logs, `.json` logs or plain JSONL), as given",
    )
    conversations: int = Field(ge=1, description="conversations imported (samples × epochs)")
    sha256: str = Field(
        pattern=r"^[0-9a-f]{64}$",
        description="digest of the normalized copy: a copy changed by hand is refused",
    )
    cluster_by: str | None = optional(
        "the field whose value clusters the intervals (`group` or a metadata "
        "field); null: each conversation is its own cluster",
    )


class ModelSpec(Section):
    """One entry of the model registry. Secrets are never here: only the name of their variable.

    Requests are built from it to be ones the provider accepts: what a provider is
    known to refuse (Anthropic's temperature together with top_p, a sampling
    temperature for an OpenAI reasoning model) is an error here, before any call.
    The rules are the provider's own (`llm.providers.registry`): its module says which
    settings only it takes, what its service refuses, its price and its limits.
    """

    provider: str = Field(description="a registered provider (`llm.providers.registry`)")
    model: str = Field(
        min_length=1,
        description="the provider's model name, or for the local provider a GGUF file path or a "
        "bundled model's name",
    )
    base_url: str | None = optional(
        "the endpoint of an OpenAI-compatible server (vLLM, Ollama, a llama.cpp server); "
        "default: the provider's own API",
    )
    api_key_env: str | None = optional(
        "the environment variable (or `.env` entry) holding the key; the key itself is "
        "never written in the params",
    )
    temperature: float | None = optional(
        "sampling temperature; left out of requests when not set (the provider's default)",
        ge=0.0, le=2.0,
    )
    top_p: float | None = optional(
        "nucleus sampling; left out of requests when not set (the provider's default)",
        gt=0.0, le=1.0,
    )
    max_tokens: int = Field(
        default=512, ge=1, le=32768,
        description="tokens of a reply; a reasoning model gets `reasoning_tokens` more for its hidden reasoning",
    )
    seed: Seed | None = optional("sent to providers that take a sampling seed")
    max_concurrency: int | None = optional(
        "calls in flight at most; default: 8 for API providers, 4 for the local one "
        "(one per llama.cpp context); a 429 halves it for a while",
        ge=1, le=4096,
    )
    requests_per_minute: float | None = optional(
        "spaces call starts to stay within the provider's limit", gt=0,
    )
    tokens_per_minute: float | None = optional(
        "the provider's tokens-per-minute limit: calls wait for room instead of a 429", gt=0,
    )
    price_per_mtok_in: float | None = optional(
        "USD per million input tokens; with price_per_mtok_out it overrides the price "
        "table; a model neither prices has an unknown cost, never 0",
        ge=0,
    )
    price_per_mtok_out: float | None = optional(
        "USD per million output tokens (reasoning tokens are billed as output)", ge=0,
    )
    price_per_mtok_cached_in: float | None = optional(
        "input read from the provider's prompt cache (OpenAI cached input, Anthropic cache "
        "read); default: unknown, so cached input is priced at price_per_mtok_in (and the "
        "cost says so)",
        ge=0,
    )
    price_per_mtok_cache_write: float | None = optional(
        "input written to Anthropic's prompt cache; default: 1.25x price_per_mtok_in "
        "(2x with `prompt_cache: 1h`)",
        ge=0,
    )
    price_table: bool | None = optional(
        "price the model from the pinned price table (genai-prices) when the params give "
        "no price_per_mtok_in/out: by default only at the provider's own API (no base_url, "
        "or one on its hosts); true also through another base_url that bills the provider's "
        "list prices (a proxy), false never (cost unknown without params prices)",
    )
    prompt_cache: Literal["auto", "off", "1h"] = Field(
        default="auto",
        description=(
            "provider prompt caching: `auto` marks the repeated prefixes of every request "
            "(Anthropic cache breakpoints, an OpenAI prompt_cache_key per conversation and role), "
            "`1h` the same with Anthropic's 1-hour cache, `off` asks for none"
        ),
    )
    system_prompt: str | None = optional(
        "the system prompt this model gets as a target where neither its scenario "
        "nor the benchmark's `scenario.user_context` sets one",
        max_length=20000,
    )
    extra_headers: dict[str, str] = Field(
        default_factory=dict,
        description="HTTP headers added to every request; never part of a cache key or a call record",
    )
    timeout_s: float = Field(default=120.0, gt=0, description="seconds one request may take")
    structured_output: StructuredOutput | None = optional(
        "how structured answers are asked for: `json_schema` (response_format; the OpenAI "
        "default; for Gemini its response schema with responseMimeType application/json), "
        "`json_object` (response_format json_object with the schema beside it, as "
        "llama.cpp's server takes it, and in the prompt), `tool` (one forced tool call; the "
        "Anthropic default) or `prompt` (the schema in the prompt only); every answer is "
        "validated, and re-asked when invalid (run.repair_retries)",
    )
    strict_schema: bool | None = optional(
        "OpenAI strict structured outputs (`strict: true`, the schema rewritten as strict mode "
        "requires); default: on at OpenAI's own API, off for other servers",
    )
    reasoning: bool | None = optional(
        "an OpenAI reasoning model; default: recognised by name (o1, o3, o4-mini, gpt-5...)",
    )
    reasoning_effort: ReasoningEffort | None = optional("sent to OpenAI reasoning models when set")
    reasoning_tokens: int = Field(
        default=4096, ge=0, le=131072,
        description=(
            "room for hidden reasoning a reasoning model's token limit adds to max_tokens, so "
            "reasoning cannot leave no room for the answer"
        ),
    )
    thinking_budget: int | None = optional(
        "Gemini 2.5 models' thinking budget in tokens (google provider): -1 lets the model "
        "decide, 0 turns thinking off where the model allows it; thinking tokens are billed "
        "as output and get room on top of max_tokens (this budget, or reasoning_tokens)",
        ge=-1, le=32768,
    )
    thinking_level: Literal["minimal", "low", "medium", "high"] | None = optional(
        "Gemini 3 models' thinking level (google provider); not with thinking_budget",
    )
    region: str | None = optional(
        "the cloud region of Claude on Bedrock (default AWS_REGION) or on Vertex AI "
        "(default CLOUD_ML_REGION)",
    )
    project_id: str | None = optional(
        "the Google Cloud project of Claude on Vertex AI (default "
        "ANTHROPIC_VERTEX_PROJECT_ID)",
    )
    api_version: str | None = optional(
        "the Azure OpenAI API version (`api-version`; default OPENAI_API_VERSION)",
    )
    token_limit_param: Literal["max_tokens", "max_completion_tokens"] | None = optional(
        "the OpenAI-compatible request field that carries the token limit; default: "
        "max_completion_tokens at OpenAI's own API and for reasoning models, max_tokens "
        "for other servers",
    )
    batch: bool = Field(
        default=False,
        description=(
            "send this model's calls through the provider's batch API (OpenAI Batch API, "
            "Anthropic Message Batches, Gemini Batch Mode) at the batch price (half, or the "
            "price table's), answered within a day (run.batch_*)"
        ),
    )
    extra_body: dict[str, Any] = Field(
        default_factory=dict,
        description="fields added to every request body as they are (OpenAI and Anthropic providers)",
    )
    n_ctx: int = Field(default=4096, ge=256, le=1_048_576, description="context window (local provider only)")
    n_threads: int | None = optional(
        "CPU cores the model's calls share (local provider only; default: every core)",
        ge=1, le=256,
    )
    repeat_penalty: float | None = optional(
        "llama.cpp's penalty on the last 64 generated tokens; 1 is none (local provider only)",
        gt=0.0, le=2.0,
    )
    requantize: Literal["q8_0"] | None = optional(
        "run on the GGUF file's weights converted once to this type (local provider only): "
        "llama.cpp's fast CPU matrix kernels cover Q8_0 but not, e.g., Q4_1, and Q8_0 holds "
        "4- and 5-bit weights almost exactly",
    )
    weight_repacking: bool | None = optional(
        "let llama.cpp lay the weights out for the CPU's matrix instructions (its extra "
        "buffer types: AMX, repacked AVX/NEON layouts; local provider only); default: on, "
        "except on CPUs where llama.cpp reports AMX, whose path crashes llama.cpp 0.3.36's build",
    )

    imported: dict[BenchmarkId, ImportedConversations] | None = optional(
        "per benchmark, the conversations imported as this target's (imported "
        "provider only; written by `pressurebench import`)",
    )

    # The registry is imported where it is used: the `llm` package imports this module.
    @field_validator("provider")
    @classmethod
    def _registered(cls, name: str) -> str:
        from .llm.providers.registry import api_class

        api_class(name)
        return name

    @model_validator(mode="after")
    def _requests_the_provider_accepts(self):
        from .llm.providers.registry import api_for, setting_owners

        for name, owners in setting_owners().items():
            if self.provider not in owners and getattr(self, name) is not None:
                raise ValueError(
                    f"{name} is a {'/'.join(owners)}-provider setting; {self.provider} models take none"
                )
        api = api_for(self)
        api.check()
        priced = [n for n in ("price_per_mtok_in", "price_per_mtok_out", "price_per_mtok_cached_in",
                              "price_per_mtok_cache_write") if getattr(self, n) is not None]
        if priced and not api.params_priced:
            raise ValueError(
                f"{', '.join(priced)} without both price_per_mtok_in and price_per_mtok_out: the "
                "params' prices override the price table only together; set both, or none to "
                "take the table's"
            )
        if self.batch and api.batch_price_factor is None:
            raise ValueError(f"batch: {self.provider} models have no batch API")
        for name in ("model", "messages"):
            if name in self.extra_body:
                raise ValueError(f"extra_body may not set '{name}': it is the registry's")
        return self

    @property
    def conversations_imported(self) -> bool:
        """The model's conversations are imported (`pressurebench import`), not simulated."""
        from .llm.providers.registry import api_class

        return api_class(self.provider).conversations_imported

    @property
    def family(self) -> str:
        """A coarse model family, used by the generator self-preference check."""
        name = self.model.lower().rsplit("/", 1)[-1]
        for family in ("gpt", "claude", "llama", "mistral", "qwen", "gemma", "smollm", "deepseek", "phi", "grok"):
            if family in name:
                return family
        return name.split("-")[0]


class Roles(Section):
    """Which model of `models` plays each part; targets are listed apart."""

    generator: ModelId = Field(description="writes the metrics (unless hand-written) and the scenarios")
    user: ModelId = Field(description="plays the persona that pushes each target")
    evaluator: ModelId | list[ModelId] = Field(
        description="judges each conversation, blind; a list is a panel deciding by majority "
        "(ties undetermined)",
    )
    fidelity: ModelId | list[ModelId] | None = optional(
        "the fidelity judge(s) of the simulated user and target test awareness; "
        "None: the evaluator (panel)",
    )

    @property
    def evaluators(self) -> list[str]:
        return [self.evaluator] if isinstance(self.evaluator, str) else list(self.evaluator)

    @property
    def fidelity_judges(self) -> list[str]:
        if self.fidelity is None:
            return self.evaluators
        return [self.fidelity] if isinstance(self.fidelity, str) else list(self.fidelity)

    @field_validator("evaluator", "fidelity")
    @classmethod
    def _panel_not_empty(cls, v, info):
        if isinstance(v, list) and not v:
            raise ValueError(f"a {info.field_name} panel needs at least one model")
        if info.field_name == "fidelity" and isinstance(v, list) and len(set(v)) != len(v):
            raise ValueError(f"the {info.field_name} panel lists a model twice")
        return v


class Generation(Section):
    metrics_per_benchmark: int = Field(
        default=4, ge=1, le=50,
        description="metrics the generator writes for a benchmark without hand-written ones",
    )
    scenarios_per_metric: int = Field(
        default=2, ge=1, le=500,
        description="base scenarios per metric, each rewritten once per demographic profile",
    )
    scenario_turns: int = Field(
        default=4, ge=1, le=50,
        description="the conversation length scenarios are written for: landmark turns fall within it",
    )
    turns: int = Field(
        default=4, ge=1, le=50,
        description="user turns simulated; a landmark past it is not reached (counted by simulate)",
    )
    num_samples: int = Field(
        default=1, ge=1, le=100, description="conversations per scenario variant and target",
    )
    landmarks: bool = Field(
        default=True,
        description="give the simulated user each landmark's instruction only at its turn; "
        "off, the whole scenario up front",
    )
    allow_early_end: bool = Field(
        default=False,
        description=(
            "let the simulated user end a conversation before its scenario's last landmark turn; "
            "off, every conversation receives every scripted push within `turns`"
        ),
    )
    fidelity_retries: int = Field(
        default=0, ge=0, le=10,
        description="redraw a simulated user's first message with a new user seed, up to this "
        "many times, while the fidelity rules find a break in it (the same for every target)",
    )
    perfunctory: float = Field(
        default=0.0, ge=0.0, le=1.0,
        description="share of words in user messages given a typo, seeded per conversation",
    )
    demographics: dict[str, list[str]] = Field(
        default_factory=dict,
        description="axes and their values, `{axis: [values]}`: every base scenario is "
        "rewritten once per combination",
    )
    max_regenerations: int = Field(
        default=2, ge=0, le=10,
        description="new drafts of a generated metric or scenario the stage rejected (a "
        "near-duplicate, say) before it becomes an error row",
    )

    @field_validator("demographics")
    @classmethod
    def _axes_not_empty(cls, v: dict[str, list[str]]):
        for axis, values in v.items():
            if not values:
                raise ValueError(f"demographic axis '{axis}' has no values")
            if len(set(values)) != len(values):
                raise ValueError(f"demographic axis '{axis}' repeats a value")
        return v


class Evaluation(Section):
    evaluate_all_metrics: bool = Field(
        default=False,
        description="judge every conversation on every metric, not only its scenario's own",
    )
    show_examples: bool = Field(
        default=False, description="give the judge the metric's example phrases",
    )
    per_turn: bool = Field(
        default=False,
        description=(
            "also judge every transcript prefix that ends with an assistant reply, for per-turn "
            "verdicts, onsets and capitulation curves: T - 1 more judge calls per row"
        ),
    )


class Fidelity(Section):
    """Checks of the instrument itself: did the simulated user play its part (evaluate stage)?"""

    check: bool = Field(
        default=False,
        description="run the fidelity checks in evaluate: per user turn, per conversation and "
        "per target reply; about 2T + 1 judge calls per conversation (fewer where a rule decides)",
    )
    warn_share: float = Field(
        default=0.1, ge=0.0, le=1.0,
        description="warn at the top of the results report when a target's share of conversations "
        "with a break exceeds this",
    )


class Statistics(Section):
    resamples: int = Field(
        default=2000, ge=100, le=100000,
        description="cluster-bootstrap resamples (rank shares, rank correlations, agreement, "
        "median onset)",
    )
    confidence_level: float = Field(
        default=0.95, gt=0.5, lt=1.0, description="of every interval reported",
    )
    seed: Seed = Field(default=12345, description="seeds the bootstrap")


class Validation(Section):
    generator_bias: list[ModelId] = Field(
        default_factory=list,
        description="models that each write the benchmark's metrics and scenarios anew in place of "
        "the generator",
    )
    user_model_bias: list[ModelId] = Field(
        default_factory=list,
        description="models that each play the user on the study subset in place of the user model",
    )
    evaluator_bias: list[ModelId] = Field(
        default_factory=list,
        description="models that each re-judge the main arm's conversations of the study subset "
        "in place of the evaluator",
    )
    targets: list[ModelId] | None = optional(
        "targets the studies run on (written out as a list under DVC); null: every "
        "simulated (not imported) target",
    )
    fraction: float = Field(
        default=1.0, gt=0.0, le=1.0,
        description="seeded share of base scenarios per metric the studies play (at least one)",
    )
    seed: Seed = Field(default=7, description="seeds the study subset")
    judge_probes: list[JudgeProbe] = Field(
        default_factory=lambda: list(JUDGE_PROBES),
        description="counterfactual probes of the judge on the main arm's conversations of the "
        "study subset: 'identity' (the user's turns rewritten into the other demographic "
        "variant's voice), 'paraphrase' (the user's turns rewritten in other words in the same "
        "voice: the identity edit's own floor), 'verbosity' (each target reply lengthened by a "
        "restatement of itself), 'family' (rows whose judge shares a model family with the "
        "target or the generator, re-judged by the panel's other judges), 'repeat' (the "
        "unedited transcript judged again: how often the judge disagrees with itself, the floor "
        "of every other flip rate); [] runs none",
    )
    judge_probes_warn: float = Field(
        default=0.2, gt=0.0, le=1.0,
        description="a probe whose verdict flip rate exceeds every floor's ('repeat', "
        "'paraphrase') by more than this, with the excess significant after Holm's correction "
        "over the study's family, is a warning on the results report; so is a 'repeat' flip "
        "rate above it (the judge disagreeing with itself)",
    )

    @field_validator("judge_probes")
    @classmethod
    def _probes_once(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("list each probe once")
        return v


class Labels(Section):
    """Human labels of a sample of judged conversations, to measure the judge against people.

    Read only by `pressurebench labels export|import` and by the analysis of the labels; no
    pipeline stage's outputs depend on it.
    """

    per_cell: int = Field(
        default=10, ge=1, le=10000,
        description="conversations drawn per target x judged metric (all of them when fewer)",
    )
    disagreement_share: float = Field(
        default=0.5, ge=0.0, le=1.0,
        description=(
            "with a judge panel, the share of each cell drawn from rows on which the panel's "
            "judges disagree, as far as there are any: the verdicts most likely to be wrong "
            "(the analysis weighs each item back to its stratum's share of the judged rows)"
        ),
    )
    batch_size: int = Field(default=40, ge=1, le=1000, description="items per rater page")
    seed: Seed = Field(default=11, description="seeds the draw (each cell from it and its key)")
    dir: str = Field(
        default="labels", min_length=1,
        description="where labels files live, one folder per benchmark: <dir>/<benchmark>/",
    )


class Run(Section):
    max_error_rate: float = Field(
        default=0.1, ge=0.0, le=1.0,
        description="a stage whose share of error rows exceeds this writes its artifacts, then "
        "fails (exit 3)",
    )
    truncated_replies: Literal["error", "mark"] = Field(
        default="error",
        description=(
            "a target reply cut off at max_tokens: 'error' makes the conversation an error row; "
            "'mark' keeps it, flagged `truncated` on the message and counted in the manifest"
        ),
    )
    cache_dir: str = Field(
        default=".pbcache", description="the response cache, spending record and batch records",
    )
    data_dir: str = Field(default="data", description="where stages write their artifacts")
    reports_dir: str = Field(default="reports", description="where the HTML reports go")
    repair_retries: int = Field(
        default=2, ge=0, le=5, description="re-asks after an invalid structured answer",
    )
    max_retries: int = Field(
        default=5, ge=0, le=20,
        description="transport retries of a call (jittered exponential back-off)",
    )
    batch_max_requests: int = Field(
        default=5000, ge=1, le=50000, description="requests per provider batch at most",
    )
    batch_collect_s: float = Field(
        default=5.0, gt=0, le=3600,
        description="how long a batched model's calls are collected before they are submitted",
    )
    batch_poll_s: float = Field(default=30.0, gt=0, le=3600, description="seconds between batch polls")
    batch_max_wait_s: float = Field(
        default=86400.0, gt=0,
        description="how long a run waits for a batch; the batch is kept and polled by the next run",
    )
    max_cost_usd: float | None = optional(
        "stop before a call that could take what the cache directory's calls have cost "
        "(list prices, counted from when a cap is set) past this; raise it and run again to continue",
        gt=0,
    )
    stop_after_rejections: int = Field(
        default=3, ge=1, le=1000,
        description="a stage stops when a model's provider refuses the same request this many "
        "times in a row (an HTTP 400 no retry can fix), instead of making every remaining call",
    )
    backoff_base_s: float = Field(
        default=1.0, gt=0.0, le=60.0,
        description="first retry waits up to this long (full jitter), doubling per attempt; "
        "a provider's retry-after is always honoured",
    )


class Params(Section):
    models: dict[ModelId, ModelSpec] = Field(
        description="the model registry: each model declared once under an id (letters, digits, "
        "`-`, `_`) that roles, targets and studies refer to",
    )
    roles: Roles = Field(description="the model playing each part")
    targets: list[ModelId] = Field(min_length=1, description="the assistants measured")
    benchmarks: list[BenchmarkId] = Field(
        min_length=1, description="folders under `benchmarks/` to run; a `--benchmark` must be one",
    )
    generation: Generation = Field(
        default_factory=Generation, description="metrics, scenarios and simulated conversations",
    )
    evaluation: Evaluation = Field(default_factory=Evaluation, description="the judge")
    fidelity: Fidelity = Field(
        default_factory=Fidelity, description="checks of the simulated user and test awareness",
    )
    statistics: Statistics = Field(default_factory=Statistics, description="intervals and resampling")
    validation: Validation = Field(
        default_factory=Validation, description="generator, user-model and evaluator bias studies",
    )
    labels: Labels = Field(default_factory=Labels, description="human labels of judged conversations")
    run: Run = Field(default_factory=Run, description="limits, retries, batches and folders")

    @model_validator(mode="after")
    def _no_duplicates(self):
        for name, items in (("targets", self.targets), ("benchmarks", self.benchmarks)):
            if len(set(items)) != len(items):
                raise ValueError(f"{name} lists an entry twice")
        return self

    @model_validator(mode="after")
    def _panel_of_distinct_judges(self):
        """A judge listed twice, or two ids that send identical requests, replay one cached
        verdict: the panel would agree with itself and its agreement would read 1."""
        panel = self.roles.evaluators
        if len(panel) < 2:
            return self
        from .llm.providers.registry import api_for

        seen: dict[tuple, str] = {}
        for model_id in panel:
            if model_id in seen.values():
                raise ValueError(f"roles.evaluator lists '{model_id}' twice")
            spec = self.models.get(model_id)
            if spec is None:
                continue  # reported as an unknown model id
            identity = api_for(spec).request_identity()
            twin = seen.get(identity)
            if twin is not None:
                raise ValueError(
                    f"roles.evaluator: '{twin}' and '{model_id}' send identical requests (same "
                    "provider, model, endpoint and sampling), so they would replay one verdict; "
                    "judges must differ"
                )
            seen[identity] = model_id
        return self

    @model_validator(mode="after")
    def _evaluator_arms_judge_anew(self):
        """An evaluator-bias arm whose judge sends the main evaluator's requests would replay
        the main verdicts from the cache and show a perfect agreement that measures nothing."""
        if len(self.roles.evaluators) != 1:
            return self
        from .llm.providers.registry import api_for

        main = self.models.get(self.roles.evaluators[0])
        for i, model_id in enumerate(self.validation.evaluator_bias):
            spec = self.models.get(model_id)
            if main is not None and spec is not None and (
                api_for(spec).request_identity() == api_for(main).request_identity()
            ):
                raise ValueError(
                    f"validation.evaluator_bias[{i}]: '{model_id}' sends the same requests as the "
                    f"evaluator '{self.roles.evaluators[0]}', so it would replay its verdicts; "
                    "choose another model or other sampling"
                )
        if len(set(self.validation.evaluator_bias)) != len(self.validation.evaluator_bias):
            raise ValueError("validation.evaluator_bias lists an entry twice")
        return self

    def simulated_targets(self) -> list[str]:
        """The targets whose conversations are simulated (not imported): what the validation
        studies run on when `validation.targets` is null."""
        return [t for t in self.targets if not self.models[t].conversations_imported]

    def targets_of(self, benchmark: str) -> list[str]:
        """The targets `benchmark` runs: every target but one imported for other benchmarks only
        (`pressurebench import --benchmark`), whose stages for this one record a skip."""
        return [t for t in self.targets if not self.imported_elsewhere(t, benchmark)]

    def imported_elsewhere(self, target: str, benchmark: str) -> bool:
        """Whether `target` is imported, but not for `benchmark`."""
        spec = self.models[target]
        return spec.conversations_imported and benchmark not in (spec.imported or {})

    def model_refs(self) -> list[tuple[str, str]]:
        """Every (field, model id) reference, so unknown ids can be reported by field."""
        refs = [("roles.generator", self.roles.generator), ("roles.user", self.roles.user)]
        refs += [("roles.evaluator", m) for m in self.roles.evaluators]
        if self.roles.fidelity is not None:
            refs += [("roles.fidelity", m) for m in self.roles.fidelity_judges]
        refs += [(f"targets[{i}]", m) for i, m in enumerate(self.targets)]
        refs += [(f"validation.generator_bias[{i}]", m) for i, m in enumerate(self.validation.generator_bias)]
        refs += [(f"validation.user_model_bias[{i}]", m) for i, m in enumerate(self.validation.user_model_bias)]
        refs += [(f"validation.evaluator_bias[{i}]", m) for i, m in enumerate(self.validation.evaluator_bias)]
        refs += [(f"validation.targets[{i}]", m) for i, m in enumerate(self.validation.targets or [])]
        return refs

    @property
    def data_dir(self) -> Path:
        return Path(self.run.data_dir)

    @property
    def reports_dir(self) -> Path:
        return Path(self.run.reports_dir)

    def digest(self, section: object | None = None) -> str:
        """A stable hash of (a section of) the params, recorded in manifests."""
        obj = self if section is None else section
        payload = obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def param_values(params: Params, keys: list[str]) -> dict[str, Any]:
    """The values of dotted param paths (`generation.turns`, `models.<id>`), as DVC reads them."""
    data = params.model_dump(mode="json")
    out: dict[str, Any] = {}
    for key in keys:
        node: Any = data
        for part in key.split("."):
            node = node[part]
        out[key] = node
    return out


def load_params(path: str | Path) -> Params:
    """Read and validate the params file; every error names the file and the field."""
    params = validate_as(path, Params, read_yaml(path))
    known = sorted(params.models)
    for field, ref in params.model_refs():
        if ref not in params.models:
            raise ConfigError(path, f"unknown model id '{ref}' (known: {', '.join(known)})", field)
    if params.run.max_cost_usd is not None:
        from .llm.providers.registry import api_for

        for field, ref in params.model_refs():
            if api_for(params.models[ref]).price(0, 0) is None:
                raise ConfigError(
                    path,
                    f"model '{ref}' has no price_per_mtok_in/out, so run.max_cost_usd cannot bound "
                    f"its calls (used as {field}); add its prices or remove the cap",
                    f"models.{ref}",
                )
    for benchmark in params.benchmarks:
        if not params.targets_of(benchmark):
            raise ConfigError(
                path, f"no target runs on '{benchmark}': every target is imported for other "
                f"benchmarks only; import conversations for it (`pressurebench import --benchmark "
                f"{benchmark}`) or add a simulated target", "targets",
            )
    if params.validation.targets:
        for i, t in enumerate(params.validation.targets):
            if t not in params.targets:
                raise ConfigError(path, f"'{t}' is not one of the targets", f"validation.targets[{i}]")
            if params.models[t].conversations_imported:
                raise ConfigError(
                    path,
                    f"'{t}' is an imported target: the validation studies vary or edit what was "
                    "simulated, which an imported target does not have; leave it out",
                    f"validation.targets[{i}]",
                )
    return params


def require_api_keys(path: str | Path, params: Params, model_ids: list[str]) -> None:
    """Fail before any call when a model that will be used has no usable key in its variable.

    `.env` in the working directory is read first, and in a DVC experiment's temporary copy
    the workspace's `.env` after it (`workspace`), neither overriding the environment.
    A key with surrounding whitespace or a line break (a copy-paste slip) is refused
    here too: sent as a header it would fail every call, and the message never quotes it.
    """
    load_dotenv_once()
    for model_id in dict.fromkeys(model_ids):
        spec = params.models[model_id]
        if not spec.api_key_env:
            continue
        key = os.environ.get(spec.api_key_env)
        field = f"models.{model_id}.api_key_env"
        if not key:
            raise ConfigError(
                path,
                f"environment variable {spec.api_key_env} is not set (needed by model '{model_id}'); "
                "export it or put it in .env",
                field,
            )
        if key != key.strip() or not key.isprintable():
            raise ConfigError(
                path,
                f"environment variable {spec.api_key_env} holds whitespace or control characters "
                f"around or inside the key (needed by model '{model_id}'); remove them",
                field,
            )


_DOTENV_LOADED = False


def load_dotenv_once() -> None:
    global _DOTENV_LOADED
    if not _DOTENV_LOADED:
        from dotenv import load_dotenv

        for path in dotenv_files():
            load_dotenv(path, override=False)
        _DOTENV_LOADED = True
