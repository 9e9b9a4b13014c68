"""The provider registry: each provider's module owns its rules, and a new provider is one module.

The provider registered here, from a test module and no other file, is validated
in the params, priced, limited, cached and called through the one client exactly
as the built-in ones are.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
import yaml

from pressurebench.errors import ConfigError
from pressurebench.llm import ModelClient
from pressurebench.llm.providers import registry
from pressurebench.llm.providers.registry import (
    ModelApi,
    api_class,
    api_for,
    model_api,
    provider_names,
)
from pressurebench.llm.types import ProviderRequest, ProviderResponse
from pressurebench.params import ModelSpec, load_params
from pressurebench.pipeline.native_crash import embedded_models
from pressurebench.schemas import JudgeOutput
from pressurebench.stage_run import package_versions
from support import REPO, tiny_params

PROVIDER_NAME = re.compile(r'"(openai|anthropic|local)"')


def test_nothing_outside_the_providers_names_a_provider():
    package = REPO / "src" / "pressurebench"
    providers = package / "llm" / "providers"
    hits = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in sorted(package.rglob("*.py")) if providers not in path.parents
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if PROVIDER_NAME.search(line)
    ]
    assert not hits, "branch on the provider's rules (llm.providers.registry), not its name:\n" + "\n".join(hits)


def test_every_provider_module_of_the_folder_registers_itself():
    folder = REPO / "src" / "pressurebench" / "llm" / "providers"
    modules = sorted(p.stem for p in folder.glob("*_provider.py"))
    assert provider_names() == ["anthropic", "anthropic-bedrock", "anthropic-vertex", "azure-openai",
                                "google", "imported", "local", "openai"]
    assert sorted(api_class(n).__module__.rsplit(".", 1)[1] for n in provider_names()) == modules


def test_an_unknown_provider_is_refused_naming_the_registered_ones(tmp_path):
    data = tiny_params()
    data["models"]["gen"]["provider"] = "gemini"
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as err:
        load_params(path)
    assert "models.gen.provider" in str(err.value)
    assert ("unknown provider 'gemini' (registered: 'anthropic', 'anthropic-bedrock', 'anthropic-vertex', "
            "'azure-openai', 'google', 'imported', 'local', 'openai')") in str(err.value)


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="provider 'openai' is registered twice"):
        model_api("openai")(type("Other", (ModelApi,), {}))


# --- a provider from one module ---------------------------------------------------------------


@pytest.fixture
def echo(monkeypatch):
    """A provider registered by this module alone: it answers with the last message, refuses
    top_p, takes a setting of its own and bills at the params' prices."""
    provider_names()  # the built-in providers are registered before the copy is taken
    monkeypatch.setattr(registry, "_APIS", dict(registry._APIS))
    calls: list[ProviderRequest] = []

    @model_api("echo")
    class EchoProvider(ModelApi):
        settings = ("repeat_penalty",)  # borrowed: the built-in local provider owns it too
        distributions = ("pyyaml",)

        def check(self) -> None:
            if self.spec.top_p is not None:
                raise ValueError("echo takes no top_p")

        def token_limit(self, answer_tokens: int) -> int:
            return answer_tokens + 10

        async def complete(self, request: ProviderRequest) -> ProviderResponse:
            calls.append(request)
            said = request.messages[-1]["content"]
            text = (json.dumps({"justification": f"echo of {said}", "present": True})
                    if request.schema else f"echo: {said}")
            return ProviderResponse(text=text, finish_reason="stop", input_tokens=1000,
                                    output_tokens=500, model_version="echo-1")

    return calls


def write(tmp_path, **models) -> str:
    data = tiny_params()
    data["models"].update(models)
    data["targets"] = list(models)
    first = next(iter(models))
    data["roles"] = {"generator": first, "user": first, "evaluator": first}
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_the_new_provider_is_validated_by_its_own_rules(echo, tmp_path):
    with pytest.raises(ConfigError, match=r"models.e: Value error, echo takes no top_p"):
        load_params(write(tmp_path, e={"provider": "echo", "model": "x", "top_p": 0.5}))
    with pytest.raises(ConfigError,
                       match="reasoning_effort is a azure-openai/openai-provider setting; echo models take none"):
        load_params(write(tmp_path, e={"provider": "echo", "model": "x", "reasoning_effort": "low"}))
    with pytest.raises(ConfigError, match="repeat_penalty is a echo/local-provider setting; openai models take"):
        load_params(write(tmp_path, e={"provider": "openai", "model": "x", "repeat_penalty": 1.1}))
    with pytest.raises(ConfigError, match="batch: echo models have no batch API"):
        load_params(write(tmp_path, e={"provider": "echo", "model": "x", "batch": True}))
    with pytest.raises(ConfigError, match="model 'e' has no price_per_mtok_in/out"):
        load_params(_capped(tmp_path, e={"provider": "echo", "model": "x"}))
    params = load_params(write(tmp_path, e={"provider": "echo", "model": "x", "repeat_penalty": 1.1},
                               m={"provider": "local", "model": "x", "repeat_penalty": 1.1}))
    assert params.models["e"].repeat_penalty == params.models["m"].repeat_penalty == 1.1


def _capped(tmp_path, **models) -> str:
    path = write(tmp_path, **models)
    data = yaml.safe_load(Path(path).read_text())
    data["run"]["max_cost_usd"] = 1.0
    Path(path).write_text(yaml.safe_dump(data))
    return path


def test_the_new_provider_answers_through_the_client_priced_limited_and_cached(echo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the params' cache_dir is relative
    path = write(tmp_path, e={"provider": "echo", "model": "x", "price_per_mtok_in": 2.0,
                              "price_per_mtok_out": 10.0, "max_tokens": 50})
    params = load_params(path)
    messages = [{"role": "user", "content": "hello"}]

    async def go():
        async with ModelClient.from_params(params) as client:
            text = await client.chat("e", messages)
            judged = await client.chat("e", messages, schema=JudgeOutput)
            return client, text, judged

    client, text, judged = asyncio.run(go())
    assert text.ok and text.text == "echo: hello" and text.model_version == "echo-1"
    assert text.cost_usd == pytest.approx((1000 * 2.0 + 500 * 10.0) / 1e6)
    assert judged.ok and judged.parsed == JudgeOutput(justification="echo of hello", present=True)
    assert echo[0].max_tokens == 50 and client.api("e").token_limit(50) == 60
    assert client.api("e").concurrency == registry.REMOTE_DEFAULT_CONCURRENCY
    assert client.concurrency_report()["e"].maximum == registry.REMOTE_DEFAULT_CONCURRENCY

    again, _, _ = asyncio.run(go())
    assert len(echo) == 2  # the second run replays both calls from the cache
    assert again.usage()["e"].cached_calls == 2


def test_the_new_provider_reaches_the_manifest_and_the_crash_report(echo, tmp_path):
    path = write(tmp_path, e={"provider": "echo", "model": "x"})
    assert "pyyaml" in package_versions()
    assert embedded_models(path) == []  # it runs no model in-process
    local = write(tmp_path, e={"provider": "echo", "model": "x"},
                  m={"provider": "local", "model": "smollm2-135m-instruct"})
    assert [(api.name, ids) for api, ids in embedded_models(local)] == [("local", ["m"])]


def test_request_identity_follows_the_providers_key_material():
    """Two ids send the same requests exactly when their provider says so: an OpenAI reasoning
    model's room to reason is part of it, an Anthropic model's is not (it has none)."""
    a = api_for(ModelSpec(provider="openai", model="o3"))
    b = api_for(ModelSpec(provider="openai", model="o3", reasoning_tokens=100))
    assert a.request_identity() != b.request_identity()
    c = api_for(ModelSpec(provider="anthropic", model="claude-haiku-4-5"))
    d = api_for(ModelSpec(provider="anthropic", model="claude-haiku-4-5", reasoning_tokens=100))
    assert c.request_identity() == d.request_identity()
