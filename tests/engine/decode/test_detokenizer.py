"""Incremental detokenization emits whole characters only (issue 2)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glmdesk.engine.decode.detokenizer import IncrementalDetokenizer

SAMPLES = [
    "你好，世界！今天天气很好。",
    "Emoji: 🎉👍🏽👨‍👩‍👧‍👦 and flags 🇫🇷🇨🇳.",
    "混合 text with 中文, emoji 😀 and code `x = 1`.\n新的一行",
]


def stream(tokenizer, ids):
    detok = IncrementalDetokenizer(lambda x: tokenizer.decode(x, skip_special_tokens=True))
    parts = [detok.push(i) for i in ids]
    parts.append(detok.flush())
    return parts


def test_cjk_and_emoji_are_split_over_tokens_and_held_back(embedded):
    tok = embedded.tokenizer
    for text in SAMPLES:
        ids = tok.encode(text, add_special_tokens=False)
        # The tokenizer really splits characters: some single ids decode to U+FFFD.
        parts = stream(tok, ids)
        assert "".join(parts) == tok.decode(ids, skip_special_tokens=True) == text
        assert all("\ufffd" not in p for p in parts)
    emoji_ids = tok.encode("🎉", add_special_tokens=False)
    assert len(emoji_ids) > 1 and "\ufffd" in tok.decode(emoji_ids[:1])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_token_sequences_concatenate_to_decode(embedded, data):
    tok = embedded.tokenizer
    vocab = len(tok)
    ids = data.draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=40))
    parts = stream(tok, ids)
    assert "".join(parts) == tok.decode(ids, skip_special_tokens=True)
    # Only the final flush may carry U+FFFD (an invalid sequence the model produced).
    assert all("\ufffd" not in p for p in parts[:-1] if not tok.decode([i for i in ids]).count("\ufffd"))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(list("你好世界中文字 abc😀🎉\n，。")), min_size=1, max_size=30))
def test_valid_text_never_shows_replacement(embedded, text):
    tok = embedded.tokenizer
    ids = tok.encode(text, add_special_tokens=False)
    parts = stream(tok, ids)
    assert "".join(parts) == text
    assert all("\ufffd" not in p for p in parts)


def test_cut_off_answer_drops_an_incomplete_character(embedded):
    """An answer cut by the token limit halfway through an emoji shows no U+FFFD."""
    tok = embedded.tokenizer
    ids = tok.encode("星星🌟", add_special_tokens=False)
    detok = IncrementalDetokenizer(lambda x: tok.decode(x, skip_special_tokens=True))
    parts = [detok.push(i) for i in ids[:-1]]  # the emoji's last byte never comes
    parts.append(detok.flush(drop_incomplete=True))
    assert "".join(parts) == "星星"


@pytest.mark.slow
def test_stream_cut_by_max_tokens_shows_no_replacement(embedded):
    from glmdesk.core.messages import ChatMessage
    from glmdesk.core.settings import ParamsBox, SamplingParams
    from glmdesk.engine.decode.generate import stream_chat

    messages = [ChatMessage("user", "用中文写一句话，并加一个表情符号 🎉")]
    for n in range(20, 26):
        chunks = list(
            stream_chat(embedded, messages, ParamsBox(SamplingParams(temperature=0, max_new_tokens=n)))
        )
        assert chunks[-1].finish_reason in ("length", "stop")
        assert all("\ufffd" not in c.text for c in chunks)
