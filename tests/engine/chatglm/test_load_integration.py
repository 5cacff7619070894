"""Original ChatGLM folders open through the app's loader with no remote code (issue 4)."""

from __future__ import annotations

import pytest

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.decode.generate import stream_chat


@pytest.mark.parametrize("family", ["chatglm2", "chatglm3"])
def test_original_folder_loads_converts_once_and_streams(make_checkpoint, family, monkeypatch, tmp_path):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    src, config, _ = make_checkpoint(family, n_shards=2)
    stages = []
    loaded = load_model(LoadSettings(model=str(src)), progress=lambda p: stages.append(p.stage))
    assert loaded.info.family == family
    assert loaded.info.prompt_format == family
    assert "converting" in stages
    assert loaded.model.__class__.__name__ == "GlmForCausalLM"
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=6))
    chunks = list(stream_chat(loaded, [ChatMessage("user", "你好")], box))
    assert chunks[-1].finish_reason in ("stop", "length"), chunks[-1].error
    text = "".join(c.text for c in chunks)
    assert "<|" not in text and "[Round" not in text  # random weights: text itself is noise
    # Second open: no conversion.
    stages.clear()
    load_model(LoadSettings(model=str(src)), progress=lambda p: stages.append(p.stage))
    assert "converting" not in stages


def test_prequantized_folder_is_refused_with_a_sentence(make_checkpoint, monkeypatch, tmp_path):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    src, *_ = make_checkpoint("chatglm3", n_shards=1, config_extra={"quantization_bit": 4})
    with pytest.raises(GlmdeskError) as err:
        load_model(LoadSettings(model=str(src)))
    assert err.value.kind == "unsupported_checkpoint"
