"""ChatGLMTokenizer, the ChatGLM2/ChatGLM3 prompt ids and the reply filters."""

from __future__ import annotations

import pytest
import sentencepiece as spm
from hypothesis import given, settings
from hypothesis import strategies as st

from glmdesk.core.messages import ChatMessage
from glmdesk.engine.chatglm import SPECIAL_TOKENS, ChatGLM2Format, ChatGLM3Format, ChatGLMTokenizer
from glmdesk.engine.formats.chatglm_formats import ChatGLM2ReplyFilter, LeadingMetadataFilter

U, A, S = "user", "assistant", "system"


@pytest.fixture(scope="module")
def tok(sp_model_file):
    return ChatGLMTokenizer(sp_model_file)


@pytest.fixture(scope="module")
def sp(sp_model_file):
    return spm.SentencePieceProcessor(model_file=str(sp_model_file))


def msgs(*pairs):
    return [ChatMessage(r, c) for r, c in pairs]


def test_special_ids_follow_the_sentencepiece_vocab(tok, sp):
    n = sp.vocab_size()
    assert tok.n_words == n
    assert [tok.special_id(t) for t in SPECIAL_TOKENS] == list(range(n, n + 9))
    # The real model: n = 64789 -> [gMASK] 64790, sop 64792, <|user|> 64795, <|observation|> 64797.
    assert tok.special_id("[gMASK]") - n == 64790 - 64789
    assert tok.special_id("<|observation|>") - n == 64797 - 64789
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2)
    assert tok.convert_ids_to_tokens(n + 6) == "<|user|>" and tok.convert_tokens_to_ids("sop") == n + 3


def test_encode_never_yields_special_ids(tok):
    ids = tok.encode("<|user|> [gMASK] sop eop <|assistant|> </s> <s>")
    assert ids and all(0 < i < tok.n_words and i not in (1, 2) for i in ids)
    assert tok.decode(ids) == "<|user|> [gMASK] sop eop <|assistant|> </s> <s>"


def test_decode_skips_special_ids_and_padding(tok):
    ids = tok.encode("Hello world")
    mixed = [
        tok.special_id("[gMASK]"),
        tok.special_id("sop"),
        *ids,
        2,
        tok.special_id("<|user|>"),
        tok.n_words + 20,
    ]
    assert tok.decode(mixed) == "Hello world"
    assert tok.decode(mixed, skip_special_tokens=False) == "[gMASK]sop Hello world<|user|>"


def test_byte_fallback_windows_end_in_replacement_until_whole(tok):
    ids = tok.encode("好🙂好")
    pieces = tok.convert_ids_to_tokens(ids)
    assert [p for p in pieces if p.startswith("<0x")] == ["<0xF0>", "<0x9F>", "<0x99>", "<0x82>"]
    texts = [tok.decode(ids[:k]) for k in range(1, len(ids) + 1)]
    assert all("\ufffd" not in t or t.endswith("\ufffd") for t in texts)
    assert texts[-1] == "好🙂好"


def test_window_decode_drops_the_dummy_space_consistently(tok):
    ids = tok.encode("Hello world again")
    first_word = next(i for i, p in enumerate(tok.convert_ids_to_tokens(ids)) if i and p.startswith("▁"))
    window = ids[first_word:]
    assert not tok.decode(window).startswith(" ")
    assert tok.decode(window, keep_leading_space=True).startswith(" ")
    assert tok.decode(ids[:first_word]) + tok.decode(window, keep_leading_space=True) == tok.decode(ids)


def test_incremental_detokenizer_reproduces_full_decode(tok):
    detok_mod = pytest.importorskip("glmdesk.engine.decode.detokenizer")
    text = "你好！ Hello 🙂 world\n\n答：很好。"
    ids = tok.encode(text)
    d = detok_mod.IncrementalDetokenizer(lambda i: tok.decode(i, skip_special_tokens=True))
    out = "".join(d.push(i) for i in ids) + d.flush()
    assert out == tok.decode(ids) == text
    assert "\ufffd" not in out


# -- ChatGLM2 --------------------------------------------------------------------


def g2_expected(tok, text):
    return [tok.special_id("[gMASK]"), tok.special_id("sop"), *tok.encode(text)]


def test_chatglm2_first_and_third_turn(tok):
    fmt = ChatGLM2Format(tok)
    assert fmt.encode(msgs((U, "你好"))) == g2_expected(tok, "[Round 1]\n\n问：你好\n\n答：")
    third = msgs((U, "q1"), (A, "a1"), (U, "q2"), (A, "a2"), (U, "q3"))
    text = "[Round 1]\n\n问：q1\n\n答：a1\n\n[Round 2]\n\n问：q2\n\n答：a2\n\n[Round 3]\n\n问：q3\n\n答："
    assert fmt.encode(third) == g2_expected(tok, text)
    assert fmt.stop_ids == frozenset({2})


def test_chatglm2_system_prompt_is_prepended_to_the_first_question(tok):
    fmt = ChatGLM2Format(tok)
    assert fmt.encode(msgs((S, "Be brief."), (U, "你好"))) == g2_expected(
        tok, "[Round 1]\n\n问：Be brief.\n\n你好\n\n答："
    )
    third = msgs((S, "Be brief."), (U, "q1"), (A, "a1"), (U, "q2"), (A, "a2"), (U, "q3"))
    text = (
        "[Round 1]\n\n问：Be brief.\n\nq1\n\n答：a1\n\n[Round 2]\n\n问：q2\n\n答：a2\n\n"
        "[Round 3]\n\n问：q3\n\n答："
    )
    assert fmt.encode(third) == g2_expected(tok, text)


def test_chatglm2_typed_markers_stay_text(tok):
    ids = ChatGLM2Format(tok).encode(msgs((U, "<|user|> [Round 2] [gMASK]")))
    assert ids[:2] == [tok.special_id("[gMASK]"), tok.special_id("sop")]
    assert all(i < tok.n_words for i in ids[2:])


# -- ChatGLM3 --------------------------------------------------------------------


def g3(tok, *msgs_):
    s = tok.special_id
    ids = [s("[gMASK]"), s("sop")]
    for role, content in msgs_:
        ids += [s(f"<|{role}|>"), *tok.encode("\n"), *tok.encode(content)]
    return ids + [s("<|assistant|>")]


def test_chatglm3_first_and_third_turn(tok):
    fmt = ChatGLM3Format(tok)
    s = tok.special_id
    first = fmt.encode(msgs((U, "你好")))
    assert first == [
        s("[gMASK]"),
        s("sop"),
        s("<|user|>"),
        *tok.encode("\n"),
        *tok.encode("你好"),
        s("<|assistant|>"),
    ]
    turns = ((U, "q1"), (A, "a1"), (U, "q2"), (A, "a2"), (U, "q3"))
    assert fmt.encode(msgs(*turns)) == g3(tok, *turns)
    assert fmt.stop_ids == frozenset({2, s("<|user|>"), s("<|observation|>")})


def test_chatglm3_system_prompt_uses_the_system_role(tok):
    fmt = ChatGLM3Format(tok)
    s = tok.special_id
    ids = fmt.encode(msgs((S, "Be brief."), (U, "hi")))
    assert ids[:3] == [s("[gMASK]"), s("sop"), s("<|system|>")]
    assert ids == g3(tok, (S, "Be brief."), (U, "hi"))
    turns = ((S, "Be brief."), (U, "q1"), (A, "a1"), (U, "q2"), (A, "a2"), (U, "q3"))
    assert fmt.encode(msgs(*turns)) == g3(tok, *turns)


def test_chatglm3_typed_role_tags_are_plain_text(tok):
    fmt = ChatGLM3Format(tok)
    ids = fmt.encode(msgs((U, "<|user|>\n<|assistant|> [Round 2] <|observation|>")))
    specials = [i for i in ids if i >= tok.n_words]
    s = tok.special_id
    assert specials == [s("[gMASK]"), s("sop"), s("<|user|>"), s("<|assistant|>")]


# -- reply filters -----------------------------------------------------------------


def run_filter(f, parts):
    return "".join(f(p) for p in parts) + f.flush()


def splits(text):
    return st.lists(st.integers(0, len(text)), max_size=6).map(
        lambda cuts: [text[a:b] for a, b in zip([0, *sorted(cuts)], [*sorted(cuts), len(text)], strict=True)]
    )


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_chatglm3_filter_strips_the_empty_metadata_line_at_any_split(data):
    parts = data.draw(splits("\n 你好，我是 ChatGLM3。\nSecond line"))
    assert run_filter(LeadingMetadataFilter(), parts) == "你好，我是 ChatGLM3。\nSecond line"
    tool = data.draw(splits('get_weather\n{"city": "Beijing"}'))
    assert run_filter(LeadingMetadataFilter(), tool) == 'get_weather\n{"city": "Beijing"}'


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_chatglm2_filter_hides_round_headers_at_any_split(data):
    parts = data.draw(splits(" 好的 [1] list\n\n[Round 3]\n\n问：more"))
    assert run_filter(ChatGLM2ReplyFilter(), parts) == "好的 [1] list\n\n"
    plain = data.draw(splits("Array a[R] ends with ["))
    assert run_filter(ChatGLM2ReplyFilter(), plain) == "Array a[R] ends with ["
