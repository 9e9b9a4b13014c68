"""API keys reach the provider and nowhere else: not data, cache, manifests, reports, logs or terminals.

The servers accept exactly the fake keys below, so a run that works proves the
keys were sent; every byte the run left behind is then searched for them, raw
and base64-encoded. One target sits behind an endpoint that answers with a
malformed HTTP header: the HTTP library's error for it quotes the request
headers, which is how a key slips into an error row if anything lets it.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path

import pytest
import yaml
from reliability_support import (
    BENCHMARK,
    MODEL_NAMES,
    PARAMS,
    TARGETS,
    BrokenHttpServer,
    cli_sequence,
    run_pipeline,
)

from mock_providers import FaultPlan, MockLLMServer
from pressurebench.io import read_artifact
from pressurebench.llm.client import ModelClient
from pressurebench.llm.providers.registry import ModelApi
from pressurebench.llm.types import ProviderAuthError, RetryableError
from pressurebench.params import ModelSpec
from pressurebench.paths import Layout
from pressurebench.reports.browser import write_transcript_browser_for
from pressurebench.schemas import ConversationsFile
from support import REPO, tiny_params

OPENAI_ENV, ANTHROPIC_ENV = "OPENAI_API_KEY", "ANTHROPIC_API_KEY"
KEYS = {
    OPENAI_ENV: "sk-proj-PBLEAKCHECK-o7Yq2Rz9Xw4Lm1Nc8Vb3Qe6T",
    ANTHROPIC_ENV: "sk-ant-api03-PBLEAKCHECK-a5Tg6Hj2Kd9Qs4Wf1Zx7",
}
FAULTS = FaultPlan(server_error=0.05, truncated=0.05, refusal=0.05, bad_structured=0.05, seed=3,
                   retry_after=0.01)
STAGE_NOTEBOOKS = {
    "01_gen_metrics": {}, "02_gen_scenarios": {},
    **{f"03_simulate__{t}": {"target": t} for t in TARGETS},
    **{f"04_evaluate__{t}": {"target": t} for t in TARGETS},
    "05_aggregate": {},
}


def encodings(secret: str) -> list[bytes]:
    """The key as bytes, and every base64 form it takes inside a longer encoded stream."""
    raw = secret.encode()
    out = [raw]
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw)
        core = encoded[4 if shift else 0 : -4]  # groups that hold only key bytes
        out += [core, core.replace(b"+", b"-").replace(b"/", b"_")]
    return out


PATTERNS = [p for secret in KEYS.values() for p in encodings(secret)]


def leaks(root: Path, outputs: list[str], *, skip: set[str] = frozenset()) -> list[str]:
    """Every file under `root` (and every captured output) that holds a key in any form."""
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        if path.name in skip:
            continue
        data = path.read_bytes()
        if any(p in data for p in PATTERNS):
            found.append(str(path.relative_to(root)))
    found += [f"output #{i}" for i, text in enumerate(outputs) if any(p in text.encode() for p in PATTERNS)]
    return found


class Servers:
    """An OpenAI and an Anthropic mock that each accept only their own key, and a broken endpoint."""

    def __enter__(self):
        self.openai = MockLLMServer(api_key=KEYS[OPENAI_ENV], fault_plan=FAULTS).start()
        self.anthropic = MockLLMServer(api_key=KEYS[ANTHROPIC_ENV], fault_plan=FAULTS).start()
        self.broken = BrokenHttpServer().__enter__()
        return self

    def __exit__(self, *exc):
        self.broken.__exit__(*exc)
        self.anthropic.stop()
        self.openai.stop()

    def params(self) -> dict:
        def model(mid: str, provider: str, base: str) -> dict:
            env = OPENAI_ENV if provider == "openai" else ANTHROPIC_ENV
            return {"provider": provider, "model": MODEL_NAMES[mid], "base_url": base, "api_key_env": env}

        o, a = self.openai.openai_base_url, self.anthropic.anthropic_base_url
        return tiny_params(
            models={
                "gen": model("gen", "openai", o),
                "user": model("user", "openai", o),
                "judge": model("judge", "anthropic", a),
                "target-a": model("target-a", "openai", o),
                "target-b": model("target-b", "anthropic", self.broken.base_url),
            },
            run={"max_error_rate": 1.0, "max_retries": 1, "backoff_base_s": 0.01},
        )


@pytest.fixture
def servers():
    with Servers() as s:
        yield s


def assert_keys_were_used(root: Path) -> None:
    """The run reached the servers with the right keys, and the broken endpoint failed every call."""
    layout = Layout(root / "data", BENCHMARK)
    a = read_artifact(layout.conversations_file("target-a"), ConversationsFile).rows
    b = read_artifact(layout.conversations_file("target-b"), ConversationsFile).rows
    assert any(c.status == "ok" for c in a)
    assert b and all(c.status == "error" and "connection error" in c.error for c in b)


def write_browser(root: Path) -> None:
    write_transcript_browser_for(
        Layout(root / "data", BENCHMARK), TARGETS, root / "reports" / BENCHMARK / "transcripts.html"
    )


def test_no_key_in_any_file_or_output(project, servers, monkeypatch, capfd):
    for env, key in KEYS.items():
        monkeypatch.setenv(env, key)
    project.params_path.write_text(yaml.safe_dump(servers.params()))
    run_pipeline()
    write_browser(project.root)
    captured = capfd.readouterr()
    assert_keys_were_used(project.root)
    assert leaks(project.root, [captured.out, captured.err]) == []


def test_key_in_dotenv_works_and_never_leaks(project, servers):
    """No key in the environment, both in `.env`: the stages run (in a process of their own,
    which reads `.env` at start-up), and only `.env` holds the keys afterwards."""
    project.params_path.write_text(yaml.safe_dump(servers.params()))
    (project.root / ".env").write_text("".join(f"{env}={key}\n" for env, key in KEYS.items()))
    stages = [("gen_metrics", None), ("gen_scenarios", None), ("simulate", "target-a"),
              ("evaluate", "target-a"), ("simulate", "target-b")]
    proc = cli_sequence(
        [["run", s, "--benchmark", BENCHMARK] + (["--target", t] if t else []) for s, t in stages],
        project.root,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("ok  ") == len(stages)
    assert_keys_were_used(project.root)
    assert leaks(project.root, [proc.stdout, proc.stderr], skip={".env"}) == []


@pytest.mark.slow
def test_no_key_in_executed_notebooks_or_their_html(project, servers, monkeypatch, capfd):
    """The stage notebooks as DVC runs them (papermill kernels), rendered to HTML, plus the browser."""
    from pressurebench.pipeline.notebook_run import run_notebook

    for env, key in KEYS.items():
        monkeypatch.setenv(env, key)
    project.params_path.write_text(yaml.safe_dump(servers.params()))
    for stem, extra in STAGE_NOTEBOOKS.items():
        notebook = REPO / "notebooks" / f"{stem.split('__')[0]}.ipynb"
        html = run_notebook(notebook, Path("reports") / BENCHMARK / stem,
                            {"params_path": PARAMS, "benchmark": BENCHMARK, **extra})
        assert html.exists()
    write_browser(project.root)
    captured = capfd.readouterr()
    assert_keys_were_used(project.root)
    assert len(list((project.root / "reports").rglob("*.ipynb"))) == len(STAGE_NOTEBOOKS)
    assert leaks(project.root, [captured.out, captured.err]) == []


def test_the_client_blanks_keys_out_of_any_error_it_reports(tmp_path, monkeypatch):
    """Whatever an adapter quotes in an error, the key never leaves the client."""
    monkeypatch.setenv(OPENAI_ENV, KEYS[OPENAI_ENV])
    spec = ModelSpec(provider="openai", model="m", api_key_env=OPENAI_ENV)

    def quoting(error):
        class Provider(ModelApi):

            async def complete(self, request):
                raise error(f"request failed: headers {{'Authorization': 'Bearer {self.api_key}'}}")

            async def aclose(self):
                return None

        return lambda model_id, spec, api_key: Provider(spec, api_key)

    async def call(error):
        async with ModelClient({"m": spec}, tmp_path, provider_factory=quoting(error), max_retries=0) as c:
            return await c.chat("m", [{"role": "user", "content": "hi"}])

    result = asyncio.run(call(RetryableError))
    assert not result.ok and f"Bearer ${OPENAI_ENV}" in result.error
    assert KEYS[OPENAI_ENV] not in result.error
    with pytest.raises(ProviderAuthError) as err:
        asyncio.run(call(ProviderAuthError))
    assert KEYS[OPENAI_ENV] not in str(err.value) and f"${OPENAI_ENV}" in str(err.value)
