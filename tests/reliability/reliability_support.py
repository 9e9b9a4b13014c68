"""Helpers of the reliability tests: mock-served params, the request log, artifact checks.

Every model in these params is served by `MockLLMServer` over HTTP through the
real provider adapters, so a test sees exactly what a run against a provider
would write, and can check it against what the server actually answered.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Self

import yaml
from pydantic import BaseModel

from mock_providers import LoggedRequest
from pressurebench.io import read_artifact, read_yaml_model
from pressurebench.llm.in_flight import FOLDER
from pressurebench.paths import CALLS, COST, MANIFEST
from pressurebench.schemas import (
    Benchmark,
    ConversationsFile,
    Cost,
    Manifest,
    ScenariosFile,
    ScoresFile,
)
from pressurebench.stats.results import Results
from support import TINY_BENCHMARK, WAIT_S, tiny_params

KEY_ENV = "PB_MOCK_KEY"
MOCK_KEY = "mock-key-for-reliability-tests"
PARAMS = "params/pipeline.yaml"
BENCHMARK = "tiny"
TARGETS = ["target-a", "target-b"]

# The model names the server sees, by model id.
MODEL_NAMES = {
    "gen": "gen-model",
    "user": "user-model",
    "judge": "judge-model",
    "target-a": "target-a-model",
    "target-b": "target-b-model",
}
ANTHROPIC_MODELS = {"judge", "target-b"}


def mock_model(server, model_id: str, provider: str, **spec) -> dict:
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    return {
        "provider": provider,
        "model": MODEL_NAMES.get(model_id, model_id),
        "base_url": base,
        "api_key_env": KEY_ENV,
        "temperature": 0.7,
        **spec,
    }


def mock_params(server, *, models: dict | None = None, anthropic: Iterable[str] = ANTHROPIC_MODELS,
                timeout_s: float = 0.5, **overrides) -> dict:
    """`tiny_params` with every model on `server`: OpenAI-compatible, and Anthropic for `anthropic`.

    Retries are few and fast, and a call the server leaves hanging times out
    after `timeout_s`, so fault runs take seconds.
    """
    anthropic = set(anthropic)
    registry = {
        mid: mock_model(server, mid, "anthropic" if mid in anthropic else "openai", timeout_s=timeout_s)
        for mid in MODEL_NAMES
    }
    for mid, spec in (models or {}).items():
        registry[mid] = {**registry.get(mid, {}), **spec}
    run = {"max_retries": 2, "repair_retries": 2, "backoff_base_s": 0.01, **overrides.pop("run", {})}
    params = tiny_params(models=registry, **overrides)
    params["run"] = {**params["run"], **run}
    return params


def write_project(root: Path, params: dict) -> Path:
    """A project directory as the `project` fixture makes it: params and the tiny benchmark."""
    (root / "params").mkdir(parents=True, exist_ok=True)
    (root / "benchmarks" / BENCHMARK).mkdir(parents=True, exist_ok=True)
    (root / "benchmarks" / BENCHMARK / "benchmark.yaml").write_text(yaml.safe_dump(TINY_BENCHMARK))
    path = root / PARAMS
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def run_pipeline(targets: Iterable[str] = TARGETS, *, aggregate: bool = True) -> None:
    """Every main-arm stage, in the current directory."""
    from pressurebench.stages import aggregate as aggregate_stage
    from pressurebench.stages import evaluate, gen_metrics, gen_scenarios, simulate

    gen_metrics.run(PARAMS, BENCHMARK)
    gen_scenarios.run(PARAMS, BENCHMARK)
    for target in targets:
        simulate.run(PARAMS, BENCHMARK, target)
        evaluate.run(PARAMS, BENCHMARK, target)
    if aggregate:
        aggregate_stage.run(PARAMS, BENCHMARK)


# --- the server's request log -------------------------------------------------


def _text(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", "")) for part in content or [] if isinstance(part, dict))


def sent_messages(entry: LoggedRequest) -> list[dict]:
    """The `{role, content}` list a completion request carried, the system prompt first.

    Anthropic bodies keep the system prompt apart; it is put back in front so
    both APIs compare with the messages the client was given.
    """
    body = entry.body or {}
    system = [{"role": "system", "content": _text(body["system"])}] if body.get("system") else []
    return system + [{"role": m["role"], "content": _text(m["content"])} for m in body.get("messages", [])]


def calls_starting_with(log: list[LoggedRequest], model_id: str, prefix: list[dict]) -> list[LoggedRequest]:
    """Requests to `model_id` whose messages begin with `prefix`: one structured call and its repairs.

    (A user-model or judge request carries its instructions in its last message, so
    no later turn's request starts with an earlier one.)
    """
    name = MODEL_NAMES[model_id]
    return [
        e for e in log
        if e.model == name and e.body is not None and sent_messages(e)[: len(prefix)] == prefix
    ]


def calls_with(log: list[LoggedRequest], model_id: str, messages: list[dict]) -> list[LoggedRequest]:
    """Requests to `model_id` with exactly these messages."""
    name = MODEL_NAMES[model_id]
    return [e for e in log if e.model == name and e.body is not None and sent_messages(e) == messages]


def answered(entries: Iterable[LoggedRequest]) -> list[LoggedRequest]:
    """The requests the server answered normally: no fault, HTTP 200."""
    return [e for e in entries if e.outcome == "ok" and e.status == 200]


# --- artifacts on disk ----------------------------------------------------------

ARTIFACT_MODELS: dict[str, type[BaseModel]] = {
    "scenarios.json": ScenariosFile,
    "conversations.json": ConversationsFile,
    "scores.json": ScoresFile,
    "results.json": Results,
}
# Written with `io.atomic_write_text`: `.<name>.<random>.tmp` in the same directory.
HIDDEN_TEMP = re.compile(r"^\.(?P<name>[^/]+)\.[A-Za-z0-9_]+\.tmp$")


def artifact_model(path: Path) -> type[BaseModel] | None:
    if path.name in ARTIFACT_MODELS:
        return ARTIFACT_MODELS[path.name]
    if path.name == MANIFEST:
        return Manifest
    if path.name == COST:
        return Cost
    if path.name == "benchmark.yaml":
        return Benchmark
    return None


def check_artifacts_complete(data_dir: Path) -> list[Path]:
    """Every file under `data_dir` is a complete, valid artifact or a hidden temporary file.

    Returns the artifacts found. Raises AssertionError (or the reader's
    ConfigError) naming the first file a reader could mistake for complete.
    """
    found = []
    for path in sorted(p for p in data_dir.rglob("*") if p.is_file()):
        if path.name.startswith("."):
            assert HIDDEN_TEMP.match(path.name), f"unexpected hidden file {path}"
            continue
        model = artifact_model(path)
        if model is Benchmark:
            read_yaml_model(path, Benchmark)
        elif model is not None:
            read_artifact(path, model)
        elif path.name == "metrics.json":
            json.loads(path.read_text(encoding="utf-8"))
        elif path.name == CALLS:
            check_call_record(path)
        else:
            raise AssertionError(f"unexpected file {path}")
        found.append(path)
    return found


def check_call_record(path: Path) -> None:
    """A stage's call record is whole: every line a recorded call whose reply replays."""
    from pressurebench.llm.call_record import CallRecord, RecordedCall

    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"call record cut short: {path}"
    record = CallRecord(path)
    try:
        for line in data.splitlines():
            call = RecordedCall.model_validate_json(line)
            assert record.replay(call.key) == call.response.model_dump(), path
    finally:
        record.close()


def check_cache_entries(cache_dir: Path) -> int:
    """Every cache entry parses and is filed under its own key; returns how many there are.

    (Claims on calls in flight, `in-flight/<key>.lock`, are no entries: a killed run
    leaves its own behind, empty and unlocked.)
    """
    n = 0
    for path in cache_dir.rglob("*"):
        if not path.is_file() or path.parent.name == FOLDER:
            continue
        if path.name.startswith("."):
            assert HIDDEN_TEMP.match(path.name), f"unexpected hidden file {path}"
            continue
        entry = json.loads(path.read_text(encoding="utf-8"))
        assert entry["key"] == path.stem and path.parent.name == path.stem[:2], path
        assert isinstance(entry["response"], dict) and isinstance(entry["request"], dict), path
        n += 1
    return n


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and modification time of every file under `root`."""
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# --- the command line in a real process ---------------------------------------------


def cli_process(args: list[str], cwd: Path, env: dict[str, str] | None = None,
                timeout: float = WAIT_S) -> subprocess.CompletedProcess:
    """`pressurebench ARGS` in a fresh interpreter, in `cwd`, with `env` on top of a key-free environment."""
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != KEY_ENV}
    return subprocess.run(
        [sys.executable, "-m", "pressurebench.commands.cli", *args],
        cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=timeout,
        check=False,
    )


def cli_sequence(argvs: list[list[str]], cwd: Path, env: dict[str, str] | None = None,
                 timeout: float = WAIT_S) -> subprocess.CompletedProcess:
    """Several `pressurebench` commands in one fresh interpreter, stopping at the first failure.

    One process pays the imports once; it is still a process of its own, so
    what it reads at start-up (`.env`, the environment) is what a user's would.
    """
    script = (
        "import json, sys\n"
        "from pressurebench.commands.cli import main\n"
        "for argv in json.loads(sys.argv[1]):\n"
        "    code = main(argv)\n"
        "    if code:\n"
        "        sys.exit(code)\n"
    )
    base = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != KEY_ENV}
    return subprocess.run(
        [sys.executable, "-c", script, json.dumps(argvs)],
        cwd=cwd, env={**base, **(env or {})}, capture_output=True, text=True, timeout=timeout,
        check=False,
    )


def message_lines(stderr: str) -> list[str]:
    """The lines of stderr a user reads as messages (progress bars redraw with carriage returns)."""
    return [line for line in stderr.replace("\r", "\n").splitlines() if line.startswith("pressurebench:")]


class BrokenHttpServer:
    """An endpoint that answers every request with a malformed HTTP header, like a broken proxy.

    The client's HTTP library then reports a response error that, in its
    repr, quotes the request it sent: headers, API key and all.
    """

    REPLY = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nBroken header line\r\n\r\n{}"

    def __init__(self):
        self.port: int | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    async def _handle(self, reader, writer) -> None:
        await reader.read(65536)
        writer.write(self.REPLY)
        await writer.drain()
        writer.close()

    def __enter__(self) -> Self:
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"
