"""KV reuse on the ChatGLM prompt formats (tiny original checkpoints, issue 21).

ChatGLM2 encodes whole rounds as one string and ChatGLM3 starts each reply with a
metadata line the reply filter hides, so the ids a cache holds after an answer
(prompt + generated) and the next prompt's ids (the shown reply re-encoded) may
part earlier than the text does: reuse keeps only the common id prefix, and the
answers are the same as without reuse.
"""

from __future__ import annotations

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.decode.generate import stream_chat

GREEDY = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=5))
STRATEGIES = [CacheSettings(), CacheSettings(strategy="sliding_window", sinks=4, window=16)]


def chat(loaded, cache, key):
    messages = [ChatMessage("system", "Be brief.")]
    turns = []
    for question in ("你好", "What is the weather today?", "请写一首诗。"):
        messages.append(ChatMessage("user", question))
        chunks = list(stream_chat(loaded, messages, GREEDY, cache, conversation=key))
        assert chunks[-1].error is None, chunks[-1].error
        turns.append(
            ([t for c in chunks for t in c.token_ids], chunks[-1].reused_tokens, chunks[-1].prompt_tokens)
        )
        messages.append(ChatMessage("assistant", "".join(c.text for c in chunks)))
    return turns


@pytest.mark.parametrize("family", ["chatglm2", "chatglm3"])
def test_chatglm_answers_with_reuse_equal_answers_without(make_checkpoint, family, monkeypatch, tmp_path):
    monkeypatch.setenv("GLMDESK_MODEL_CACHE", str(tmp_path / "models"))
    src, *_ = make_checkpoint(family, n_shards=1)
    loaded = load_model(LoadSettings(model=str(src), threads=1))
    for cache in STRATEGIES:
        key = f"{family}-{cache.strategy}"
        with_reuse = chat(loaded, cache, key)
        without = chat(loaded, cache, None)
        assert [t[0] for t in with_reuse] == [t[0] for t in without]
        assert with_reuse[0][1] == 0 and all(t[1] == 0 for t in without)
        if cache.strategy == "full":  # the system prompt and first question at least
            assert all(0 < reused < prompt for _, reused, prompt in with_reuse[1:]), with_reuse
        # The window (4 + 16 tokens) evicted during the first answer: reused only when
        # the next prompt extends the held ids exactly, which the re-encoded reply may not.
    loaded.close()
