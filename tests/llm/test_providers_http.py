"""Both SDK adapters against a local server speaking the real wire formats, faults included."""

from __future__ import annotations

import asyncio

import pytest

from mock_providers import Fault, FaultPlan
from pressurebench.llm import ModelClient, ProviderAuthError, ProviderNotFound
from pressurebench.params import ModelSpec
from pressurebench.schemas import JudgeOutput, UserTurn

MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello"}]
PROVIDERS = ["openai", "anthropic"]


def client_for(server, provider: str, tmp_path, monkeypatch, **spec_kw) -> ModelClient:
    monkeypatch.setenv("PB_TEST_KEY", "test-key")
    base = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    model = "gpt-4o-mini" if provider == "openai" else "claude-haiku-4-5"
    spec = ModelSpec(provider=provider, model=model, base_url=base, api_key_env="PB_TEST_KEY",
                     price_per_mtok_in=1.0, price_per_mtok_out=4.0, **spec_kw)
    return ModelClient({"m": spec}, tmp_path / "cache", backoff_base_s=0.01, max_retries=3)


def chat(client, **kw):
    async def go():
        async with client:
            return await client.chat("m", MSGS, **kw)

    return asyncio.run(go())


@pytest.mark.parametrize("provider", PROVIDERS)
def test_text_reply_usage_cost_and_version(mock_server, provider, tmp_path, monkeypatch):
    result = chat(client_for(mock_server, provider, tmp_path, monkeypatch))
    assert result.ok and result.text
    assert result.input_tokens > 0 and result.output_tokens > 0
    assert result.cost_usd == pytest.approx((result.input_tokens + 4 * result.output_tokens) / 1e6)
    assert result.model_version and result.model_version != result.model_id
    request = mock_server.request_log[-1]
    assert request.provider == provider
    assert request.body["messages"][-1]["content"] in (
        "hello", [{"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}}])


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("schema", [JudgeOutput, UserTurn])
def test_structured_output(mock_server, provider, schema, tmp_path, monkeypatch):
    result = chat(client_for(mock_server, provider, tmp_path, monkeypatch), schema=schema)
    assert result.ok, result.error
    assert isinstance(result.parsed, schema)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_anthropic_and_openai_receive_sampling_params(mock_server, provider, tmp_path, monkeypatch):
    chat(client_for(mock_server, provider, tmp_path, monkeypatch, temperature=0.3))
    assert mock_server.request_log[-1].body["temperature"] == 0.3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rate_limit_retry_after_is_honoured(mock_server, provider, tmp_path, monkeypatch):
    """The wait before the retry is at least the server's retry-after: asserted on the delay the
    client chose, not on a clock (a busy machine only ever makes a run slower)."""
    mock_server.fault_plan = FaultPlan(fail_first_n=1, fail_first_kind=Fault.RATE_LIMIT, retry_after=0.4)
    client = client_for(mock_server, provider, tmp_path, monkeypatch)
    waits, backoff = [], client._backoff

    def recorded(attempt, retry_after):
        waits.append((retry_after, backoff(attempt, retry_after)))
        return waits[-1][1]

    monkeypatch.setattr(client, "_backoff", recorded)
    result = chat(client)
    assert result.ok
    ((retry_after, waited),) = waits
    assert retry_after == 0.4 and waited >= 0.4
    assert mock_server.fault_counts.get("rate_limit") == 1 and mock_server.total_requests == 2


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("kind", [Fault.SERVER_ERROR, Fault.MALFORMED_JSON])
def test_transient_faults_are_retried(mock_server, provider, kind, tmp_path, monkeypatch):
    mock_server.fault_plan = FaultPlan(fail_first_n=2, fail_first_kind=kind)
    result = chat(client_for(mock_server, provider, tmp_path, monkeypatch))
    assert result.ok and mock_server.total_requests == 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_persistent_500_becomes_an_error(mock_server, provider, tmp_path, monkeypatch):
    mock_server.fault_plan = FaultPlan(server_error=1.0)
    result = chat(client_for(mock_server, provider, tmp_path, monkeypatch))
    assert not result.ok and "HTTP 500" in result.error and "gave up after 4 attempts" in result.error


@pytest.mark.parametrize("provider", PROVIDERS)
def test_timeout_is_retried_then_reported(mock_server, provider, tmp_path, monkeypatch):
    mock_server.fault_plan = FaultPlan(hang=1.0, hang_seconds=5)
    client = client_for(mock_server, provider, tmp_path, monkeypatch, timeout_s=0.3)
    client.max_retries = 1
    result = chat(client)
    assert not result.ok and "timed out" in result.error


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    "kind, fragment",
    [(Fault.TRUNCATED, "truncated reply"), (Fault.EMPTY, "empty reply"), (Fault.REFUSAL, "refused")],
)
def test_bad_replies_never_pass_as_answers(mock_server, provider, kind, fragment, tmp_path, monkeypatch):
    mock_server.script(kind)
    result = chat(client_for(mock_server, provider, tmp_path, monkeypatch), schema=JudgeOutput)
    assert not result.ok and result.parsed is None and fragment in result.error


@pytest.mark.parametrize("provider", PROVIDERS)
def test_bad_structured_output_is_repaired(mock_server, provider, tmp_path, monkeypatch):
    mock_server.script(Fault.BAD_STRUCTURED, "ok")
    result = chat(client_for(mock_server, provider, tmp_path, monkeypatch), schema=JudgeOutput)
    assert result.ok and result.attempts == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_wrong_key_fails_fast_naming_the_model(mock_server, provider, tmp_path, monkeypatch):
    client = client_for(mock_server, provider, tmp_path, monkeypatch)
    monkeypatch.setenv("PB_TEST_KEY", "wrong-key")
    with pytest.raises(ProviderAuthError) as exc:
        chat(client)
    assert "HTTP 401" in str(exc.value) and ("gpt-4o-mini" in str(exc.value) or "claude" in str(exc.value))
    assert mock_server.total_requests == 1
    assert "wrong-key" not in str(exc.value)


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("wrong", ["model name", "base_url"])
def test_a_404_stops_at_once_labelled_not_found_never_as_a_refused_key(
        mock_server, provider, wrong, tmp_path, monkeypatch):
    """A misspelled model: OpenAI answers 404 `model_not_found` ("The model `<name>` does not
    exist or you do not have access to it."), Anthropic 404 `not_found_error` ("model:
    <name>") (their API references, errors); a base_url that leads to no API, 404 too. Neither
    is the key (401/403): the stage stops at the first one, saying what to check."""
    mock_server.serves_listed_only = True
    monkeypatch.setenv("PB_TEST_KEY", "test-key")
    base = mock_server.openai_base_url if provider == "openai" else mock_server.anthropic_base_url
    model = "gpt-4o-mini" if provider == "openai" else "claude-haiku-4-5"
    if wrong == "model name":
        model = "gpt-5.4-mimi" if provider == "openai" else "claude-haiku-4-6"
    else:
        base += "/wrong"
    spec = ModelSpec(provider=provider, model=model, base_url=base, api_key_env="PB_TEST_KEY")
    with pytest.raises(ProviderNotFound) as exc:
        chat(ModelClient({"m": spec}, tmp_path / "cache", backoff_base_s=0.01, max_retries=3))
    assert not isinstance(exc.value, ProviderAuthError)
    said = str(exc.value)
    assert "HTTP 404" in said and "not found: this endpoint serves no model of this name, or the " \
        "base_url leads to no API of this provider; `pressurebench check`" in said
    assert model in said
    assert mock_server.total_requests == 1


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cache_replays_without_a_request(mock_server, provider, tmp_path, monkeypatch):
    first = chat(client_for(mock_server, provider, tmp_path, monkeypatch), schema=JudgeOutput)
    again = chat(client_for(mock_server, provider, tmp_path, monkeypatch), schema=JudgeOutput)
    assert again.cached and again.parsed == first.parsed and mock_server.total_requests == 1
