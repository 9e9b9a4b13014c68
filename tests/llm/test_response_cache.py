"""The response cache's files: written whole, readable back, damaged entries asked again."""

from __future__ import annotations

from pressurebench.llm.cache import ResponseCache, cache_key
from pressurebench.llm.client import schema_for
from pressurebench.schemas import UserTurn

MATERIAL = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "sample": 0}
RESPONSE = {"text": "hello", "finish_reason": "stop", "input_tokens": 3, "output_tokens": 1}


def test_an_entry_in_a_new_shard_is_written_whole_and_read_back(tmp_path):
    cache = ResponseCache(tmp_path / "fresh" / "cache")
    key = cache_key(MATERIAL)
    assert cache.get(key) is None
    cache.put(key, MATERIAL, RESPONSE)
    assert cache.get(key) == RESPONSE
    files = [p.name for p in (tmp_path / "fresh" / "cache").rglob("*") if p.is_file()]
    assert files == [f"{key}.json"]  # no temporary file left behind
    assert cache.stats() == {"hits": 1, "misses": 1, "repaired": 0}


def test_a_damaged_entry_is_a_miss_and_is_rewritten(tmp_path):
    cache = ResponseCache(tmp_path)
    key = cache_key(MATERIAL)
    cache.put(key, MATERIAL, RESPONSE)
    path = next(tmp_path.rglob(f"{key}.json"))
    path.write_text('{"key": "' + key + '", "resp')  # cut short, as by a power cut
    assert cache.get(key) is None
    cache.put(key, MATERIAL, RESPONSE)
    assert cache.get(key) == RESPONSE
    assert cache.stats() == {"hits": 1, "misses": 1, "repaired": 1}


def test_an_entry_survives_its_shard_being_removed_mid_run(tmp_path):
    cache = ResponseCache(tmp_path)
    key = cache_key(MATERIAL)
    cache.put(key, MATERIAL, RESPONSE)
    path = next(tmp_path.rglob(f"{key}.json"))
    path.unlink()
    path.parent.rmdir()
    cache.put(key, MATERIAL, RESPONSE)
    assert cache.get(key) == RESPONSE


def test_a_schema_is_built_once_per_class():
    assert schema_for(UserTurn) is schema_for(UserTurn)
    assert schema_for(UserTurn) == UserTurn.model_json_schema()


def test_cache_keys_do_not_depend_on_where_a_schema_is_defined():
    """A call's key hashes the JSON schema of its answer. Pydantic names a nested model by its
    module only when two share a name; a key holding a module path would change when a module
    moves, and every cached and recorded call would be asked (and paid for) again."""
    import json

    from pressurebench.llm.client import schema_for
    from pressurebench.schemas import JudgeOutput, UserTurn
    from pressurebench.stages import fidelity, gen_metrics, gen_scenarios

    answers = [JudgeOutput, UserTurn, *gen_metrics.DRAFTS.values()]
    answers += [gen_scenarios.scenario_draft_schema(3), gen_scenarios.rewrite_draft_schema(3)]
    answers += [getattr(fidelity, n) for n in dir(fidelity) if n.endswith("Output")]
    assert len(answers) >= 8
    for model in answers:
        blob = json.dumps(schema_for(model))
        assert "pressurebench" not in blob and "__" not in blob, model
        moved = type(model.__name__, (model,),
                     {"__module__": "elsewhere.entirely", "__doc__": model.__doc__})
        assert model.model_json_schema() == moved.model_json_schema()
