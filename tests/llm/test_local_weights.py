"""Local weights: the bundled file converted once to Q8_0, and its identity in keys and versions."""

from __future__ import annotations

import asyncio

import llama_cpp
import pytest

from fakes import Script
from pressurebench.errors import PressurebenchError
from pressurebench.llm import ModelClient
from pressurebench.llm.providers import local_weights
from pressurebench.llm.providers.local_weights import gguf_digest, requantized, resolve_gguf
from pressurebench.params import ModelSpec

MSGS = [{"role": "user", "content": "hello"}]


def run(coro):
    return asyncio.run(coro)



@pytest.fixture
def cache_home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-home"))
    return tmp_path / "cache-home"


def file_type(path) -> int:
    """The llama_ftype a GGUF file declares (its header, read without loading weights)."""
    return int(llama_cpp.Llama(str(path), vocab_only=True, verbose=False).metadata["general.file_type"])


def test_the_bundled_file_is_converted_once_to_q8_0_the_same_way_every_time(cache_home, tmp_path, monkeypatch):
    source = resolve_gguf("smollm2-135m-instruct")
    converted = requantized(source, "q8_0")
    assert converted.parent == cache_home / "pressurebench" / "gguf"
    assert gguf_digest(source) in converted.name
    assert converted.name.endswith(f".q8_0.llama-cpp-python-{llama_cpp.__version__}.gguf")
    assert file_type(source) == llama_cpp.LLAMA_FTYPE_MOSTLY_Q4_1
    assert file_type(converted) == llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    assert not list(converted.parent.glob(".*partial"))

    made = converted.stat().st_mtime_ns
    assert requantized(source, "q8_0") == converted and converted.stat().st_mtime_ns == made

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "elsewhere"))
    again = requantized(source, "q8_0")
    assert again != converted and again.read_bytes() == converted.read_bytes()


def test_a_conversion_writes_nothing_to_the_process_output(cache_home, capfd):
    """llama.cpp logs every tensor it converts, naming the file's absolute path; in a stage's
    report that buried the scenarios, so the conversion's native output is kept out of it."""
    capfd.readouterr()
    requantized(resolve_gguf("smollm2-135m-instruct"), "q8_0")
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    print("fds 1 and 2 are back")
    assert capfd.readouterr().out == "fds 1 and 2 are back\n"


def test_a_file_llama_cpp_cannot_convert_is_a_clear_error_and_leaves_nothing(cache_home, tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF but not really")
    with pytest.raises(PressurebenchError, match=r"could not convert .*broken\.gguf to q8_0") as error:
        requantized(broken, "q8_0")
    assert "status" in str(error.value)
    assert not any(p.is_file() for p in (cache_home / "pressurebench" / "gguf").glob("*"))


def test_an_unwritable_cache_folder_is_a_clear_error(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    with pytest.raises(PressurebenchError, match=r"cannot keep converted weights in .*XDG_CACHE_HOME"):
        requantized(resolve_gguf("smollm2-135m-instruct"), "q8_0")


def test_an_unknown_type_is_refused(cache_home):
    with pytest.raises(PressurebenchError, match="cannot requantize to 'q2_k'"):
        requantized(resolve_gguf("smollm2-135m-instruct"), "q2_k")


def test_the_weights_enter_the_cache_key_and_a_changed_file_misses_it(tmp_path):
    """Requantized or not, and which file: each is another key, so another seed and no stale reply."""
    source = resolve_gguf("smollm2-135m-instruct")
    copy = tmp_path / "copy.gguf"
    copy.write_bytes(source.read_bytes())
    script = Script(lambda mid, req: "x")
    models = {
        "shipped": ModelSpec(provider="local", model=str(copy)),
        "q8": ModelSpec(provider="local", model=str(copy), requantize="q8_0"),
    }
    client = ModelClient(models, tmp_path / "cache", provider_factory=script.factory())
    run(client.chat("shipped", MSGS))
    run(client.chat("q8", MSGS))
    run(client.chat("shipped", MSGS))
    assert len(script.calls) == 2 and script.calls[0].request.seed != script.calls[1].request.seed

    with open(copy, "ab") as fh:  # another file at the same path
        fh.write(b"\0")
    local_weights.gguf_digest.cache_clear()
    local_weights.weights_id.cache_clear()
    run(client.chat("shipped", MSGS))
    assert len(script.calls) == 3


@pytest.mark.slow
def test_a_requantized_model_answers_and_says_what_it_runs_on(cache_home, tmp_path):
    spec = ModelSpec(provider="local", model="smollm2-135m-instruct", requantize="q8_0", max_tokens=16)

    async def go():
        async with ModelClient({"smol": spec}, tmp_path / "cache") as client:
            return await client.chat("smol", MSGS, allow_truncated=True)

    result = asyncio.run(go())
    assert result.ok, result.error
    digest = gguf_digest(resolve_gguf("smollm2-135m-instruct"))
    assert result.model_version == f"smollm2-135m-instruct gguf:{digest} as q8_0"
    assert list((cache_home / "pressurebench" / "gguf").glob("*.q8_0.*.gguf"))
