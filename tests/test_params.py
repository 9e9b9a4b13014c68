"""Params validation: strict keys, references by id, one-line errors naming file and field."""

from __future__ import annotations

import pytest
import yaml

from pressurebench.errors import ConfigError
from pressurebench.llm.providers.registry import api_for
from pressurebench.params import load_params, require_api_keys
from support import tiny_params


def write(tmp_path, data) -> str:
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(data) if not isinstance(data, str) else data)
    return str(path)


def error_of(tmp_path, data) -> str:
    with pytest.raises(ConfigError) as exc:
        load_params(write(tmp_path, data))
    message = str(exc.value)
    assert "\n" not in message
    return message


def test_repository_params_are_valid():
    from support import REPO

    params = load_params(REPO / "params" / "pipeline.yaml")
    assert params.models[params.roles.user].provider == "local"
    assert len(params.targets) >= 2


def test_tiny_params_load(tmp_path):
    params = load_params(write(tmp_path, tiny_params()))
    assert params.roles.evaluators == ["judge"]
    assert params.generation.turns == 3
    assert api_for(params.models["target-a"]).concurrency == 8


def test_unknown_key_is_an_error_naming_the_field(tmp_path):
    data = tiny_params(generation={"turnz": 4})
    msg = error_of(tmp_path, data)
    assert "pipeline.yaml: generation.turnz:" in msg and "Extra inputs" in msg


def test_unknown_model_in_roles(tmp_path):
    msg = error_of(tmp_path, tiny_params(roles={"generator": "gen", "user": "nobody", "evaluator": "judge"}))
    assert "roles.user" in msg and "unknown model id 'nobody'" in msg


def test_unknown_model_in_targets(tmp_path):
    msg = error_of(tmp_path, tiny_params(targets=["target-a", "ghost"]))
    assert "targets[1]" in msg and "'ghost'" in msg


def test_evaluator_panel(tmp_path):
    params = load_params(write(tmp_path, tiny_params(roles={"generator": "gen", "user": "user",
                                                            "evaluator": ["judge", "gen"]})))
    assert params.roles.evaluators == ["judge", "gen"]


def panel_params(**judges) -> dict:
    data = tiny_params(roles={"generator": "gen", "user": "user", "evaluator": list(judges)})
    data["models"].update(judges)
    return data


def test_a_panel_naming_a_judge_twice_is_refused(tmp_path):
    data = tiny_params(roles={"generator": "gen", "user": "user", "evaluator": ["judge", "judge"]})
    assert "roles.evaluator lists 'judge' twice" in error_of(tmp_path, data)


def test_a_panel_of_two_ids_sending_identical_requests_is_refused(tmp_path):
    same = {"provider": "openai", "model": "judge-model", "temperature": 0.0}
    # a price, a concurrency limit or a key variable does not change what is sent
    twin = {**same, "price_per_mtok_in": 3.0, "price_per_mtok_out": 9.0, "max_concurrency": 2,
            "api_key_env": "OTHER_KEY"}
    msg = error_of(tmp_path, panel_params(j1=same, j2=twin))
    assert "'j1' and 'j2' send identical requests" in msg


def test_an_evaluator_arm_that_would_replay_the_main_verdicts_is_refused(tmp_path):
    data = tiny_params()
    judge = data["models"][data["roles"]["evaluator"]]
    data["models"]["twin"] = {**judge, "price_per_mtok_in": 1.0, "price_per_mtok_out": 2.0}  # sends the same requests
    data["validation"] = {"evaluator_bias": ["twin"]}
    assert "'twin' sends the same requests as the evaluator" in error_of(tmp_path, data)
    data["models"]["twin"] = {**judge, "temperature": 0.9}
    assert load_params(write(tmp_path, data)).validation.evaluator_bias == ["twin"]


@pytest.mark.parametrize("change", [{"temperature": 0.5}, {"model": "other-model"},
                                    {"base_url": "http://127.0.0.1:9/v1"}, {"seed": 3}])
def test_a_panel_of_judges_that_differ_in_what_they_send_is_accepted(tmp_path, change):
    same = {"provider": "openai", "model": "judge-model", "temperature": 0.0}
    params = load_params(write(tmp_path, panel_params(j1=same, j2={**same, **change})))
    assert params.roles.evaluators == ["j1", "j2"]


@pytest.mark.parametrize(
    ("base", "change"),
    [
        ({"provider": "openai", "model": "m"}, {"price_per_mtok_in": 1.0, "price_per_mtok_out": 2.0}),
        ({"provider": "openai", "model": "m"}, {"temperature": 0.3}),
        ({"provider": "openai", "model": "m"}, {"structured_output": "json_object"}),
        ({"provider": "openai", "model": "m"}, {"extra_body": {"x": 1}}),
        ({"provider": "openai", "model": "o3"}, {"reasoning_effort": "low"}),
        ({"provider": "anthropic", "model": "claude-haiku-4-5"}, {"structured_output": "tool"}),
        ({"provider": "anthropic", "model": "claude-haiku-4-5"}, {"timeout_s": 5}),
        ({"provider": "local", "model": "smollm2-135m-instruct"}, {"repeat_penalty": 1.1}),
        ({"provider": "local", "model": "smollm2-135m-instruct"}, {"requantize": "q8_0"}),
        ({"provider": "local", "model": "smollm2-135m-instruct"}, {"max_concurrency": 2}),
    ],
)
def test_request_identity_changes_exactly_when_the_cache_key_does(base, change):
    """The panel check and the client agree on what makes two models' requests the same."""
    from pressurebench.llm.client import ModelClient
    from pressurebench.llm.providers.registry import connect
    from pressurebench.params import ModelSpec

    def material(spec: ModelSpec) -> dict:
        client = ModelClient({"m": spec}, "/nonexistent-cache")
        provider = connect("m", spec, "key")
        return client._request(provider, spec, [{"role": "user", "content": "hi"}], None, 0,
                               None)[2]

    a, b = ModelSpec(**base), ModelSpec(**{**base, **change})
    same_identity = api_for(a).request_identity() == api_for(b).request_identity()
    assert same_identity == (material(a) == material(b))


@pytest.mark.parametrize("turns", [0, -2])
def test_turns_must_be_positive(tmp_path, turns):
    msg = error_of(tmp_path, tiny_params(generation={"turns": turns}))
    assert "generation.turns" in msg


def test_empty_demographic_axis(tmp_path):
    msg = error_of(tmp_path, tiny_params(generation={"demographics": {"age": []}}))
    assert "generation.demographics" in msg and "'age' has no values" in msg


def test_malformed_yaml_names_line(tmp_path):
    with pytest.raises(ConfigError) as exc:
        load_params(write(tmp_path, "models: {a: [1, 2\nroles: x\n"))
    assert "malformed YAML at line" in str(exc.value)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="file not found"):
        load_params(tmp_path / "nope.yaml")


def test_bad_provider_names_field(tmp_path):
    data = tiny_params()
    data["models"]["gen"]["provider"] = "gemini"
    msg = error_of(tmp_path, data)
    assert "models.gen.provider" in msg


def test_missing_api_key_fails_before_any_call(tmp_path, monkeypatch):
    data = tiny_params()
    data["models"]["gen"]["api_key_env"] = "PB_TEST_MISSING_KEY"
    path = write(tmp_path, data)
    params = load_params(path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as exc:
        require_api_keys(path, params, ["gen"])
    msg = str(exc.value)
    assert "models.gen.api_key_env" in msg and "PB_TEST_MISSING_KEY" in msg and "'gen'" in msg
    monkeypatch.setenv("PB_TEST_MISSING_KEY", "sk-test")
    require_api_keys(path, params, ["gen"])


def test_family():
    from pressurebench.params import ModelSpec

    assert ModelSpec(provider="openai", model="gpt-4o-2024-08-06").family == "gpt"
    assert ModelSpec(provider="anthropic", model="claude-sonnet-4-5").family == "claude"
    assert ModelSpec(provider="local", model="smollm2-135m-instruct").family == "smollm"


@pytest.mark.parametrize("setting, value", [("repeat_penalty", 1.1), ("requantize", "q8_0")])
def test_local_settings_are_refused_on_api_models(tmp_path, setting, value):
    data = tiny_params()
    data["models"]["user"][setting] = value
    message = error_of(tmp_path, data)
    assert "models.user" in message and f"{setting} is a local-provider setting" in message
    data["models"]["user"] = {"provider": "local", "model": "smollm2-135m-instruct", setting: value}
    assert getattr(load_params(write(tmp_path, data)).models["user"], setting) == value


def test_requantize_names_a_known_type(tmp_path):
    data = tiny_params()
    data["models"]["user"] = {"provider": "local", "model": "smollm2-135m-instruct", "requantize": "q3"}
    assert "models.user.requantize" in error_of(tmp_path, data)


@pytest.mark.parametrize(("section", "field", "text"), [
    ("run", "max_cost_usd", ".inf"),
    ("run", "max_cost_usd", ".nan"),
    ("run", "max_cost_usd", '"20"'),
    ("run", "max_error_rate", '"0.1"'),
    ("generation", "turns", "true"),
    ("generation", "turns", '"4"'),
    ("generation", "turns", "4.0"),
    ("statistics", "resamples", "false"),
    ("statistics", "seed", "-1"),
    ("statistics", "seed", str(2**64)),
    ("labels", "per_cell", "1.0e+400"),
    ("run", "backoff_base_s", "1.0e+400"),
])
def test_numbers_are_finite_numbers_of_their_own_type(tmp_path, section, field, text):
    """Written in YAML as a user would: a string, a boolean, an infinite or out-of-range
    number is refused, never coerced."""
    params = tiny_params()
    params.setdefault(section, {})[field] = "PLACEHOLDER"
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False).replace("PLACEHOLDER", text))
    with pytest.raises(ConfigError) as err:
        load_params(path)
    assert f"{section}.{field}" in str(err.value)


def test_numbers_as_written_are_taken(tmp_path):
    params = tiny_params(run={"backoff_base_s": 2}, generation={"turns": 5, "perfunctory": 0})
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    loaded = load_params(path)
    assert loaded.run.backoff_base_s == 2.0 and isinstance(loaded.run.backoff_base_s, float)
    assert loaded.generation.turns == 5 and loaded.generation.perfunctory == 0.0
