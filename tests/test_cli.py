"""The command line: `estimate` call counts follow from the params exactly, `check` names what is wrong."""

from __future__ import annotations

import re

import pytest

from pressurebench.commands.cli import main
from pressurebench.commands.cost_forecast import by_stage, cached_share, estimate, totals
from pressurebench.params import load_params


def test_call_counts_follow_from_params(project):
    params = load_params(project.params_path)
    lines = estimate(params)
    # 2 hand-written metrics x 2 scenarios, no demographics, 1 sample, 3 turns, 2 targets; the
    # judge probes on both (validation.targets null): without demographics no identity edit,
    # a paraphrase of each of the 3 user turns and a restatement of each of the 3 replies, one
    # judge call per conversation for each, and one more for the repeat probe.
    assert by_stage(lines) == {"gen_scenarios": 4, "simulate": 2 * (4 * 3 * 2), "evaluate": 2 * 4,
                               "probes_edit": 2 * 4 * 3 * 2, "probes_evaluate": 2 * 4 * 3}
    assert not any(x.stage == "gen_metrics" for x in lines)
    assert totals(lines)[3] is None  # no prices in the registry: unknown, not 0


def test_per_turn_judging_adds_the_earlier_turns_to_the_estimate(project):
    """T turns judged turn by turn: T - 1 more calls per row, on shorter transcripts."""
    whole = estimate(load_params(project.params_path))
    project.write_params(evaluation={"per_turn": True})
    lines = estimate(load_params(project.params_path))
    assert by_stage(lines)["evaluate"] == by_stage(whole)["evaluate"] * 3
    (own,) = [x for x in whole if x.stage == "evaluate" and x.arm.endswith("target-a")]
    (each,) = [x for x in lines if x.stage == "evaluate" and x.arm.endswith("target-a")]
    assert each.calls == 3 * own.calls
    assert own.input_tokens / own.calls > each.input_tokens / each.calls


def paper_size(project, provider: str, model: str, per_turn: bool = True, **prices) -> list:
    """Six turns judged turn by turn, every model at one provider's model and prices."""
    from support import tiny_params

    data = tiny_params()
    for spec in data["models"].values():
        spec.update(provider=provider, model=model, price_per_mtok_in=3.0, price_per_mtok_out=15.0,
                    max_tokens=700, **prices)
    project.write_params(models=data["models"], evaluation={"per_turn": per_turn},
                         generation={"turns": 6, "scenario_turns": 6})
    return estimate(load_params(project.params_path))


def test_the_estimate_predicts_the_cached_share_and_prices_it_as_billed(project, capsys):
    """OpenAI caches 1024 tokens and more of a repeated prefix, in 128-token steps (its prompt
    caching guide); Anthropic a prefix ending at a breakpoint, from the model's minimum on."""
    lines = paper_size(project, "openai", "gpt-5-mini", price_per_mtok_cached_in=0.3)
    share = cached_share(lines)
    assert 0.3 < share < 1
    for x in lines:
        assert x.cached_input_tokens <= x.input_tokens and x.cache_write_tokens == 0
        if x.cached_input_tokens:
            assert x.cost_usd < x.uncached_cost_usd
            saved = x.cached_input_tokens * (3.0 - 0.3) / 1e6
            assert x.uncached_cost_usd - x.cost_usd == pytest.approx(saved)
    assert main(["estimate"]) == 0
    out = capsys.readouterr().out
    assert f"Prompt caching: {share:.0%} of the input" in out and "uncached USD" in out
    claude = paper_size(project, "anthropic", "claude-sonnet-4-5", price_per_mtok_cached_in=0.3)
    assert cached_share(claude) > 0.3 and sum(x.cache_write_tokens for x in claude) > 0
    off = paper_size(project, "anthropic", "claude-sonnet-4-5", prompt_cache="off")
    assert cached_share(off) == 0 and totals(off)[3] > totals(claude)[3]


def test_the_estimate_writes_nothing_for_a_request_no_later_one_extends(project):
    """Anthropic bills a write at 1.25x the input price (its prompt caching docs, "Pricing"), and
    a request no later one extends marks only what it reads (`llm.prompt_cache.cache_marks`):
    judged whole, each transcript is one request of well over 1024 tokens that writes nothing."""
    lines = paper_size(project, "anthropic", "claude-sonnet-4-5", per_turn=False, price_per_mtok_cached_in=0.3)
    judge = [x for x in lines if x.stage == "evaluate" and x.role == "evaluator"]
    assert judge and all(x.input_tokens / x.calls > 2048 and x.cache_write_tokens == 0 for x in judge)
    target = [x for x in lines if x.role == "target"]
    assert all(0 < x.cache_write_tokens < x.input_tokens - x.cached_input_tokens for x in target)


def test_a_model_without_a_cached_price_is_estimated_at_the_full_input_price(project, capsys):
    lines = paper_size(project, "openai", "gpt-5-mini")
    assert cached_share(lines) > 0.3
    assert all(x.cost_usd == pytest.approx(x.uncached_cost_usd) for x in lines)
    assert main(["estimate"]) == 0
    assert ("No cached-input price for judge, target-a, target-b, user (neither "
            "price_per_mtok_cached_in nor the price table's): their cached input") \
        in capsys.readouterr().out


def test_fidelity_checks_are_counted_per_fidelity_judge_and_owned_conversation(project):
    """Per conversation: one check per user message and per reply, one for its pressure; per
    fidelity judge; in every arm that simulates, not in an evaluator arm."""
    whole = estimate(load_params(project.params_path))
    project.write_params(
        fidelity={"check": True},
        roles={"fidelity": ["judge", "gen"]},
        validation={"evaluator_bias": ["user"], "targets": ["target-a"]},
    )
    lines = estimate(load_params(project.params_path))
    checks = [x for x in lines if x.role.startswith("fidelity")]
    main_a = [x for x in checks if x.arm == "tiny/main/target-a"]
    # 4 conversations x (3 user messages + 1 pressure + 3 replies), per judge
    assert sum(x.calls for x in main_a if x.model_id == "judge") == 4 * (3 + 1 + 3)
    assert {x.model_id for x in main_a} == {"judge", "gen"}
    assert not any(x.arm.startswith("tiny/evaluator") for x in checks)
    assert by_stage(lines)["evaluate"] == by_stage(whole)["evaluate"] + 4 + 2 * 2 * 4 * 7


def test_demographics_samples_panel_and_validation_arms(project):
    project.write_params(
        generation={"demographics": {"age": ["a", "b", "c"], "gender": ["x", "y"]}, "num_samples": 2},
        roles={"generator": "gen", "user": "user", "evaluator": ["judge", "gen"]},
        validation={"user_model_bias": ["gen"], "evaluator_bias": ["user"], "targets": ["target-a"],
                    "fraction": 0.5},
    )
    lines = estimate(load_params(project.params_path))
    rewrites = [x for x in lines if x.stage == "gen_scenarios" and x.calls == 4 * 6]
    assert len(rewrites) == 1
    main_eval = [x for x in lines if x.stage == "evaluate" and x.arm.startswith("tiny/main")]
    assert {x.model_id for x in main_eval} == {"judge", "gen"}
    assert all(x.calls == 4 * 6 * 2 for x in main_eval)
    arm_sim = [x for x in lines if x.stage == "simulate" and x.arm.startswith("tiny/user/gen")]
    assert {x.arm for x in arm_sim} == {"tiny/user/gen/target-a"}
    assert all(x.calls == 24 * 2 * 3 // 2 for x in arm_sim)
    # an evaluator arm only re-judges the planned half of the main conversations
    rejudged = [x for x in lines if x.arm.startswith("tiny/evaluator/user")]
    assert {(x.stage, x.model_id, x.calls) for x in rejudged} == {("evaluate", "user", 24 * 2 // 2)}
    # the judge probes edit every user message (identity, paraphrase) and reply (verbosity) of
    # the half, and every judge of the panel re-reads each edited conversation
    probes = {(x.stage, x.role, x.model_id, x.calls) for x in lines if "/probes/" in x.arm}
    assert probes == {
        *{("probes_edit", f"generator ({p})", "gen", 24 * 2 // 2 * 3)
          for p in ("identity", "paraphrase", "verbosity")},
        *{("probes_evaluate", f"evaluator ({p})", j, 24 * 2 // 2)
          for p in ("identity", "paraphrase", "verbosity", "repeat") for j in ("judge", "gen")},
    }


def test_prices_give_a_cost(project):
    from support import tiny_params

    data = tiny_params()
    for spec in data["models"].values():
        spec.update(price_per_mtok_in=1.0, price_per_mtok_out=1.0)
    project.write_params(models=data["models"])
    _, tin, tout, cost = totals(estimate(load_params(project.params_path)))
    assert cost == pytest.approx((tin + tout) / 1e6) and cost > 0


def test_estimate_blames_only_the_models_without_a_price_and_names_each_row(project, capsys):
    from support import tiny_params

    data = tiny_params()
    for model_id, spec in data["models"].items():
        if model_id != "judge":
            spec.update(price_per_mtok_in=1.0, price_per_mtok_out=1.0)
    project.write_params(models=data["models"], generation={"demographics": {"age": ["a", "b"]}})
    assert main(["estimate"]) == 0
    out = capsys.readouterr().out
    assert "'unknown' cost: no price for judge, neither in the params" in out
    roles = [re.split(r"\s{2,}", line)[:3] for line in out.splitlines()
             if line.startswith("gen_scenarios")]
    assert len(roles) == 2 and len({" ".join(r) for r in roles}) == 2, roles
    assert "(base scenarios)" in out and "(demographic rewrites)" in out
    for spec in data["models"].values():
        spec.update(price_per_mtok_in=1.0, price_per_mtok_out=1.0)
    project.write_params(models=data["models"])
    assert main(["estimate"]) == 0
    assert "unknown" not in capsys.readouterr().out


def test_cli_estimate_and_check(project, capsys):
    assert main(["estimate"]) == 0
    out = capsys.readouterr().out
    assert "simulate" in out and "unknown" in out and "total" in out
    assert main(["check", "--offline"]) == 0
    assert "ok  benchmark tiny: 2 hand-written metrics" in capsys.readouterr().out


def test_check_lists_every_missing_key_before_anything_is_spent(project, capsys, monkeypatch):
    from support import tiny_params

    models = tiny_params()["models"]
    models["judge"]["api_key_env"] = "PB_NOPE_KEY"
    models["target-b"]["api_key_env"] = "PB_OTHER_KEY"
    project.write_params(models=models)
    assert main(["check", "--offline"]) == 2
    err = capsys.readouterr().err
    assert "PB_NOPE_KEY is not set (needed by model 'judge')" in err
    assert "PB_OTHER_KEY is not set (needed by model 'target-b')" in err


def test_check_asks_each_endpoint_once_with_its_key(project, capsys, monkeypatch, mock_server):
    from support import tiny_params

    models = tiny_params()["models"]
    for spec in models.values():
        spec.update(base_url=mock_server.openai_base_url, api_key_env="PB_CHECK_KEY")
    models["judge"] = {"provider": "anthropic", "model": "claude-haiku-4-5",
                       "base_url": mock_server.anthropic_base_url, "api_key_env": "PB_CHECK_KEY"}
    project.write_params(models=models)
    monkeypatch.setenv("PB_CHECK_KEY", mock_server.api_key)
    mock_server.models = ("gen-model", "user-model", "judge-model", "target-a", "target-b",
                          "claude-haiku-4-5")
    assert main(["check"]) == 0
    assert "every endpoint answers" in capsys.readouterr().out
    assert mock_server.path_counts == {"/v1/models": 2}  # one per distinct endpoint, nothing paid

    monkeypatch.setenv("PB_CHECK_KEY", "a-wrong-key-value")
    assert main(["check"]) == 2
    assert "refused the key in PB_CHECK_KEY (HTTP 401)" in capsys.readouterr().err

    models["judge"]["base_url"] = "http://127.0.0.1:9"  # nothing listens there
    project.write_params(models=models)
    monkeypatch.setenv("PB_CHECK_KEY", mock_server.api_key)
    assert main(["check"]) == 2
    assert "model 'judge': http://127.0.0.1:9/v1/models cannot be reached" in capsys.readouterr().err
    assert main(["check", "--offline"]) == 0


def test_inputs_past_their_bounds_are_clear_errors(project, capsys):
    import yaml

    bench = project.root / "benchmarks" / "tiny" / "benchmark.yaml"
    data = yaml.safe_load(bench.read_text())
    data["description"] = "word " * 5000
    bench.write_text(yaml.safe_dump(data))
    assert main(["check", "--offline"]) == 2
    err = capsys.readouterr().err
    assert "benchmark.yaml: description" in err and "at most 20000 characters" in err
    bench.write_text("description: " + "x" * (3 * 1024 * 1024))
    assert main(["check", "--offline"]) == 2
    assert "YAML inputs are limited to 2 MiB" in capsys.readouterr().err


def test_cli_reports_one_line_errors(project, capsys):
    project.write_params(generation={"turns": 0})
    assert main(["check"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "params/pipeline.yaml: generation.turns" in err


def test_check_writes_the_defaults_dvc_reads_instead_of_failing_on_them(project, capsys):
    """DVC resolves dvc.yaml from the params file and refuses a declared param the file lacks;
    `check` writes those keys' defaults, so DVC's own error never reaches the user."""
    from pressurebench.commands.preflight import dvc_param_problems
    from support import REPO

    (project.root / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text())
    before = load_params(project.params_path)
    assert main(["check", "--offline"]) == 0
    captured = capsys.readouterr()
    assert "Could not find" not in captured.err and "missing from the file" not in captured.err
    assert ('wrote  params/pipeline.yaml: validation.targets: ["target-a", "target-b"]'
            in captured.out)
    assert "wrote  params/pipeline.yaml: run.truncated_replies: \"error\"" in captured.out
    after = load_params(project.params_path)
    assert after.model_dump(exclude={"validation"}) == before.model_dump(exclude={"validation"})
    assert after.validation.targets == before.targets
    assert dvc_param_problems("params/pipeline.yaml")[1] == []
    assert main(["check", "--offline"]) == 0
    assert "wrote" not in capsys.readouterr().out  # nothing left to write

def test_repository_params_spell_out_every_declared_key(monkeypatch):
    from pressurebench.commands.preflight import dvc_param_problems
    from support import REPO

    monkeypatch.chdir(REPO)
    watched, problems, files = dvc_param_problems("params/pipeline.yaml")
    assert watched > 20 and problems == [] and files == {"params/pipeline.yaml"}


def test_check_of_a_params_file_the_pipeline_does_not_read_says_so(monkeypatch, capsys, tmp_path):
    import shutil

    from support import REPO

    for rel in ("dvc.yaml", "params", "benchmarks"):
        (shutil.copytree if (REPO / rel).is_dir() else shutil.copy)(REPO / rel, tmp_path / rel)
    monkeypatch.chdir(tmp_path)
    example = "params/examples/openai-reasoning-judge-claude-user.yaml"
    shipped = (tmp_path / example).read_text()
    assert main(["check", "--offline", "--params", example]) in (0, 2)
    out = capsys.readouterr().out
    assert "all 0 params" not in out
    assert (f"note  dvc.yaml: no stage reads {example} (they read "
            "params/pipeline.yaml); `dvc repro` will not use it until "
            f"`pressurebench use {example}`.") in out
    assert (tmp_path / example).read_text() == shipped  # a file DVC does not read is not written


def test_check_warns_of_a_benchmark_named_other_than_its_folder(project, capsys):
    import yaml

    path = project.root / "benchmarks" / "tiny" / "benchmark.yaml"
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "name": "tiny-v2"}))
    assert main(["check", "--offline"]) == 0
    assert ("warn  benchmarks/tiny/benchmark.yaml: name: 'tiny-v2' differs from its folder "
            "'tiny'; the pipeline knows this benchmark as 'tiny' (set name: tiny to match)"
            ) in capsys.readouterr().out


def test_estimate_warns_when_its_total_is_above_the_spending_cap(project, capsys):
    """The cap stops a run at the first call that could pass it (`llm.spending`): an estimate
    above it says so before anything is spent, and still exits 0 (it is a forecast, not a
    check). A cap set mid-study counts the spending record too."""
    import json

    from support import tiny_params

    data = tiny_params()
    for spec in data["models"].values():
        spec.update(price_per_mtok_in=3.0, price_per_mtok_out=15.0)
    project.write_params(models=data["models"])
    cost = totals(estimate(load_params(project.params_path)))[3]
    project.write_params(models=data["models"], run={"max_cost_usd": round(cost / 2, 2)})
    assert main(["estimate"]) == 0
    out = capsys.readouterr().out
    assert (f"warn  the estimated cost, ${cost:.2f}, is above run.max_cost_usd = "
            f"${cost / 2:.2f}: the run will stop at the cap") in out

    project.write_params(models=data["models"], run={"max_cost_usd": round(cost * 1.5, 2)})
    assert main(["estimate"]) == 0
    assert "warn" not in capsys.readouterr().out
    (project.root / ".pbcache").mkdir()
    (project.root / ".pbcache" / "spending.json").write_text(json.dumps(
        {"spent_usd": cost, "in_flight_usd": {}}))
    assert main(["estimate"]) == 0
    assert f"plus the ${cost:.2f} already spent through .pbcache" in capsys.readouterr().out


def test_size_also_runs_under_its_former_name_plan(project, capsys):
    """`pressurebench plan` was the name of `size`; scripts calling it run unchanged for a release."""
    assert main(["size", "--half-width", "0.1"]) == 0
    sized = capsys.readouterr().out
    assert "base scenarios/metric" in sized
    assert main(["plan", "--half-width", "0.1"]) == 0
    assert capsys.readouterr().out == sized
