"""Family detection and prepare_checkpoint (convert once, reuse, tokenizer, format)."""

from __future__ import annotations

import json
import os

import pytest

from glmdesk.core.errors import GlmdeskError
from glmdesk.engine.chatglm import (
    ChatGLM2Format,
    ChatGLM3Format,
    ChatGLMTokenizer,
    converted_folder,
    detect_family,
    is_original_checkpoint,
    prepare_checkpoint,
)
from glmdesk.engine.chatglm import prepare as prepare_mod


def _config_only(tmp_path, name, config, files=()):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    for f, text in files:
        (folder / f).write_text(text)
    return folder


@pytest.mark.parametrize(
    ("family", "ratio"),
    [
        ("chatglm2", None),
        ("chatglm2-32k", 16.0),
        ("chatglm3", None),
        ("chatglm3-32k", 50.0),
        ("chatglm3-32k", 500.0),
    ],
)
def test_detects_thudm_families(make_checkpoint, family, ratio):
    src, *_ = make_checkpoint(family, n_shards=1, rope_ratio=ratio)
    assert detect_family(src) == family
    assert is_original_checkpoint(family)


def test_chatglm2_vs_3_falls_back_on_name_then_rope_ratio(tmp_path):
    base = {"model_type": "chatglm", "padded_vocab_size": 65024, "multi_query_attention": True}
    assert (
        detect_family(_config_only(tmp_path, "a", {**base, "_name_or_path": "THUDM/chatglm3-6b"}))
        == "chatglm3"
    )
    assert detect_family(_config_only(tmp_path, "b", {**base})) == "chatglm2"
    assert detect_family(_config_only(tmp_path, "c", {**base, "rope_ratio": 500})) == "chatglm3-32k"
    marker = [("tokenizer_config.json", '{"chat_template": "<|user|>"}')]
    assert detect_family(_config_only(tmp_path, "d", {**base, "_name_or_path": "x"}, marker)) == "chatglm3"
    arch_only = {"architectures": ["ChatGLMForConditionalGeneration"], "padded_vocab_size": 65024}
    assert detect_family(_config_only(tmp_path, "e", arch_only)) == "chatglm2"


def test_detects_other_families(tmp_path):
    glm4 = {"model_type": "chatglm", "padded_vocab_size": 151552, "rope_ratio": 500, "seq_length": 131072}
    assert detect_family(_config_only(tmp_path, "glm4", glm4)) == "glm4"
    assert (
        detect_family(_config_only(tmp_path, "hf", {"model_type": "glm", "vocab_size": 151552})) == "glm4-hf"
    )
    v1 = {
        "model_type": "chatglm",
        "vocab_size": 130528,
        "position_encoding_2d": True,
        "inner_hidden_size": 16384,
    }
    assert detect_family(_config_only(tmp_path, "v1", v1)) == "chatglm-v1"
    assert detect_family(_config_only(tmp_path, "llama", {"model_type": "llama"})) == "generic-hf"
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert detect_family(gguf) == "gguf"
    assert not is_original_checkpoint("glm4-hf") and is_original_checkpoint("glm4")


@pytest.mark.parametrize(
    ("setup", "kind"),
    [
        (lambda p: None, "model_not_found"),
        (lambda p: p.mkdir(), "not_a_model"),
        (lambda p: (p.mkdir(), (p / "config.json").write_text("{nope")), "not_a_model"),
        (lambda p: (p.mkdir(), (p / "config.json").write_text("{}")), "not_a_model"),
        (lambda p: p.write_text("x"), "not_a_model"),
    ],
)
def test_detect_errors_name_the_path(tmp_path, setup, kind):
    path = tmp_path / "thing"
    setup(path)
    with pytest.raises(GlmdeskError) as err:
        detect_family(path)
    assert err.value.kind == kind and str(path) in err.value.message


def test_prepare_converts_once_and_reuses(make_checkpoint, tmp_path, monkeypatch):
    src, config, _ = make_checkpoint("chatglm3", n_shards=2)
    calls = []
    real = prepare_mod.convert_checkpoint
    monkeypatch.setattr(prepare_mod, "convert_checkpoint", lambda *a, **k: calls.append(1) or real(*a, **k))
    cache = tmp_path / "cache"
    first = prepare_checkpoint(src, cache)
    second = prepare_checkpoint(src, cache)
    assert len(calls) == 1 and first.hf_folder == second.hf_folder
    assert first.hf_folder.parent == cache / "converted"
    assert first.family == "chatglm3" and isinstance(first.tokenizer, ChatGLMTokenizer)
    assert isinstance(first.prompt_format, ChatGLM3Format)
    assert first.stop_ids == first.prompt_format.stop_ids and first.context_length == config["seq_length"]
    assert [p.name for p in (cache / "converted").iterdir()] == [first.hf_folder.name]

    # A changed source file gives a new key and a new conversion.
    st = (src / "config.json").stat()
    os.utime(src / "config.json", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert converted_folder(src, cache) != first.hf_folder
    third = prepare_checkpoint(src, cache)
    assert len(calls) == 2 and third.hf_folder != first.hf_folder


def test_prepare_chatglm2_format(make_checkpoint, tmp_path):
    src, *_ = make_checkpoint("chatglm2-32k", rope_ratio=16.0, n_shards=1)
    prepared = prepare_checkpoint(src, tmp_path / "cache")
    assert isinstance(prepared.prompt_format, ChatGLM2Format) and prepared.stop_ids == frozenset({2})
    assert prepared.context_length == 32768


def test_prepare_glm4_without_a_usable_tokenizer_says_why(tmp_path):
    folder = _config_only(tmp_path, "glm-4-9b-chat", {"model_type": "chatglm", "padded_vocab_size": 151552})
    (folder / "tokenizer.model").write_text("IQ== 0\nIg== 1\n")  # tiktoken format
    try:
        import tiktoken  # noqa: F401

        pytest.skip("tiktoken is installed: the tiktoken path is taken")
    except ImportError:
        pass
    with pytest.raises(GlmdeskError) as err:
        prepare_checkpoint(folder, tmp_path / "cache")
    assert err.value.kind == "unsupported_checkpoint" and "tiktoken" in err.value.message
    assert not (tmp_path / "cache" / "converted").exists()


def test_prepare_refuses_non_chatglm(tmp_path):
    folder = _config_only(tmp_path, "llama", {"model_type": "llama"})
    with pytest.raises(GlmdeskError) as err:
        prepare_checkpoint(folder, tmp_path / "cache")
    assert err.value.kind == "unsupported_checkpoint" and "generic" in err.value.message
