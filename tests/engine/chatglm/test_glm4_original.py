"""GLM-4 original folders out of the box (issue 19 item 9)."""

from __future__ import annotations

import json

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.chatglm.detect import declared_tokenizer, detect_family
from glmdesk.engine.decode.generate import stream_chat


def test_small_vocabulary_glm4_folder_is_read_as_glm4(make_glm4_checkpoint):
    folder, config = make_glm4_checkpoint()
    assert config["padded_vocab_size"] < 100_000
    assert declared_tokenizer(folder) == "tiktoken"
    assert detect_family(folder) == "glm4"


def test_declared_class_decides_without_a_readable_tokenizer_file(make_glm4_checkpoint):
    folder, _ = make_glm4_checkpoint()
    (folder / "tokenizer.model").unlink()
    assert detect_family(folder) == "glm4"  # tokenizer_config.json says ChatGLM4Tokenizer
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "ChatGLMTokenizer"}))
    assert detect_family(folder) in ("chatglm3-32k", "chatglm2-32k")


def test_chatglm3_folder_still_read_as_chatglm3(make_checkpoint):
    folder, *_ = make_checkpoint("chatglm3", n_shards=1)
    assert declared_tokenizer(folder) == "sentencepiece"
    assert detect_family(folder) == "chatglm3"


def test_small_glm4_folder_loads_and_streams(make_glm4_checkpoint, monkeypatch, tmp_path):
    """The whole path with the tiktoken tokenizer (a dependency, no pip install)."""
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    folder, _ = make_glm4_checkpoint()
    loaded = load_model(LoadSettings(model=str(folder)))
    assert loaded.info.family == "glm4" and loaded.info.prompt_format == "glm4"
    assert loaded.tokenizer.__class__.__name__ == "TiktokenGLM4Tokenizer"
    ids = loaded.prompt_format.encode([ChatMessage("user", "hello <|user|>")])
    n_ranks = 262
    assert ids[:2] == [n_ranks + 2, n_ranks + 4]  # [gMASK] <sop> right after the ranks
    assert ids[-1] == n_ranks + 8 and ids.count(n_ranks + 7) == 1  # typed <|user|> stays text
    chunks = list(
        stream_chat(loaded, [ChatMessage("user", "hello")], ParamsBox(SamplingParams(max_new_tokens=6)))
    )
    assert chunks[-1].finish_reason in ("stop", "length"), chunks[-1].error
    assert "\ufffd" not in "".join(c.text for c in chunks)  # the UTF-8 guard on tiktoken bytes
