"""The params file (`params/pipeline.yaml`): what to run, validated strictly.

Unknown keys are errors: a misspelt setting that silently falls back to its
default is how a study ends up measuring something other than what it says.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .errors import ConfigError
from .io import read_yaml, validate_as

# Ids become DVC param paths (`models.<id>`) and directory names, so no dots or slashes:
# write `gpt-4-1`, not `gpt-4.1` (the provider's model name goes in `model:`).
ModelId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]
BenchmarkId = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")]

# Calls in flight per model id. The embedded model runs as many calls at once as it has
# cores (a llama.cpp context each) and queues the rest, so a few in flight keep every core busy.
LOCAL_DEFAULT_CONCURRENCY = 4
REMOTE_DEFAULT_CONCURRENCY = 8


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSpec(Strict):
    """One entry of the model registry. Secrets are never here: only the name of their variable."""

    provider: Literal["openai", "anthropic", "local"]
    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str | None = None
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, gt=0.0, le=1.0)
    max_tokens: int = Field(default=512, ge=1, le=32768)
    seed: int | None = None
    max_concurrency: int | None = Field(default=None, ge=1, le=4096)
    requests_per_minute: float | None = Field(default=None, gt=0)
    price_per_mtok_in: float | None = Field(default=None, ge=0)
    price_per_mtok_out: float | None = Field(default=None, ge=0)
    system_prompt: str | None = None
    extra_headers: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(default=120.0, gt=0)
    n_ctx: int = Field(default=4096, ge=256, description="context window (local provider only)")
    n_threads: int | None = Field(
        default=None, ge=1, le=256,
        description="CPU cores the model's calls share (local provider only; default: every core)",
    )
    repeat_penalty: float | None = Field(
        default=None, gt=0.0, le=2.0,
        description="llama.cpp's penalty on the last 64 generated tokens; 1 is none (local provider only)",
    )
    requantize: Literal["q8_0"] | None = Field(
        default=None,
        description=(
            "run on the GGUF file's weights converted once to this type (local provider only): "
            "llama.cpp's fast CPU matrix kernels cover Q8_0 but not, e.g., Q4_1, and Q8_0 holds "
            "4- and 5-bit weights almost exactly"
        ),
    )

    @model_validator(mode="after")
    def _local_only_settings(self):
        if self.provider != "local":
            for name in ("repeat_penalty", "requantize"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"{name} is a local-provider setting; {self.provider} models take none"
                    )
        return self

    @property
    def concurrency(self) -> int:
        if self.max_concurrency is not None:
            return self.max_concurrency
        return LOCAL_DEFAULT_CONCURRENCY if self.provider == "local" else REMOTE_DEFAULT_CONCURRENCY

    @property
    def family(self) -> str:
        """A coarse model family, used by the generator self-preference check."""
        name = self.model.lower().rsplit("/", 1)[-1]
        for family in ("gpt", "claude", "llama", "mistral", "qwen", "gemma", "smollm", "deepseek", "phi", "grok"):
            if family in name:
                return family
        return name.split("-")[0]


class Roles(Strict):
    generator: ModelId
    user: ModelId
    evaluator: ModelId | list[ModelId]

    @property
    def evaluators(self) -> list[str]:
        return [self.evaluator] if isinstance(self.evaluator, str) else list(self.evaluator)

    @field_validator("evaluator")
    @classmethod
    def _panel_not_empty(cls, v):
        if isinstance(v, list) and not v:
            raise ValueError("an evaluator panel needs at least one model")
        return v


class Generation(Strict):
    metrics_per_benchmark: int = Field(default=4, ge=1, le=50)
    scenarios_per_metric: int = Field(default=2, ge=1, le=500)
    scenario_turns: int = Field(
        default=4, ge=1, le=50,
        description="the conversation length scenarios are written for: landmark turns fall within it",
    )
    turns: int = Field(
        default=4, ge=1, le=50,
        description="user turns simulated; a landmark past it is not reached (counted by simulate)",
    )
    num_samples: int = Field(default=1, ge=1, le=100)
    landmarks: bool = True
    perfunctory: float = Field(
        default=0.0, ge=0.0, le=1.0,
        description="share of words in user messages given a typo, seeded per conversation",
    )
    demographics: dict[str, list[str]] = Field(default_factory=dict)
    max_regenerations: int = Field(default=2, ge=0, le=10)

    @field_validator("demographics")
    @classmethod
    def _axes_not_empty(cls, v: dict[str, list[str]]):
        for axis, values in v.items():
            if not values:
                raise ValueError(f"demographic axis '{axis}' has no values")
            if len(set(values)) != len(values):
                raise ValueError(f"demographic axis '{axis}' repeats a value")
        return v


class Evaluation(Strict):
    evaluate_all_metrics: bool = False
    show_examples: bool = False


class Statistics(Strict):
    resamples: int = Field(default=2000, ge=100, le=100000)
    confidence_level: float = Field(default=0.95, gt=0.5, lt=1.0)
    seed: int = 12345


class Validation(Strict):
    generator_bias: list[ModelId] = Field(default_factory=list)
    user_model_bias: list[ModelId] = Field(default_factory=list)
    targets: list[ModelId] | None = None
    fraction: float = Field(default=1.0, gt=0.0, le=1.0)
    seed: int = 7


class Run(Strict):
    max_error_rate: float = Field(default=0.1, ge=0.0, le=1.0)
    truncated_replies: Literal["error", "mark"] = Field(
        default="error",
        description=(
            "a target reply cut off at max_tokens: 'error' makes the conversation an error row; "
            "'mark' keeps it, flagged `truncated` on the message and counted in the manifest"
        ),
    )
    cache_dir: str = ".pbcache"
    data_dir: str = "data"
    reports_dir: str = "reports"
    repair_retries: int = Field(default=2, ge=0, le=5)
    max_retries: int = Field(default=5, ge=0, le=20)
    backoff_base_s: float = Field(
        default=1.0, gt=0.0, le=60.0,
        description="first retry waits up to this long (full jitter), doubling per attempt; "
        "a provider's retry-after is always honoured",
    )


class Params(Strict):
    models: dict[ModelId, ModelSpec]
    roles: Roles
    targets: list[ModelId] = Field(min_length=1)
    benchmarks: list[BenchmarkId] = Field(min_length=1)
    generation: Generation = Field(default_factory=Generation)
    evaluation: Evaluation = Field(default_factory=Evaluation)
    statistics: Statistics = Field(default_factory=Statistics)
    validation: Validation = Field(default_factory=Validation)
    run: Run = Field(default_factory=Run)

    @model_validator(mode="after")
    def _no_duplicates(self):
        for name, items in (("targets", self.targets), ("benchmarks", self.benchmarks)):
            if len(set(items)) != len(items):
                raise ValueError(f"{name} lists an entry twice")
        return self

    def model_refs(self) -> list[tuple[str, str]]:
        """Every (field, model id) reference, so unknown ids can be reported by field."""
        refs = [("roles.generator", self.roles.generator), ("roles.user", self.roles.user)]
        refs += [("roles.evaluator", m) for m in self.roles.evaluators]
        refs += [(f"targets[{i}]", m) for i, m in enumerate(self.targets)]
        refs += [(f"validation.generator_bias[{i}]", m) for i, m in enumerate(self.validation.generator_bias)]
        refs += [(f"validation.user_model_bias[{i}]", m) for i, m in enumerate(self.validation.user_model_bias)]
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


def load_params(path: str | Path) -> Params:
    """Read and validate the params file; every error names the file and the field."""
    params = validate_as(path, Params, read_yaml(path))
    known = sorted(params.models)
    for field, ref in params.model_refs():
        if ref not in params.models:
            raise ConfigError(path, f"unknown model id '{ref}' (known: {', '.join(known)})", field)
    if params.validation.targets:
        for i, t in enumerate(params.validation.targets):
            if t not in params.targets:
                raise ConfigError(path, f"'{t}' is not one of the targets", f"validation.targets[{i}]")
    return params


def require_api_keys(path: str | Path, params: Params, model_ids: list[str]) -> None:
    """Fail before any call when a model that will be used has no usable key in its variable.

    `.env` in the working directory is read first (without overriding the environment).
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

        load_dotenv(Path.cwd() / ".env", override=False)
        _DOTENV_LOADED = True
