"""Continue on the ChatGLM formats: the prompt ends with the partial answer, its turn left open."""

from __future__ import annotations

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import text_of
from glmdesk.engine.chatglm import ChatGLM2Format, ChatGLMTokenizer
from glmdesk.engine.decode.context import fit_prompt
from glmdesk.engine.decode.detokenizer import IncrementalDetokenizer
from glmdesk.engine.decode.generate import RESUME_CONTEXT_TOKENS
from glmdesk.engine.families.parser import reply_parser

QUESTION = ChatMessage("user", "hello world")
PARTIAL = ChatMessage("assistant", "the sea is blue and")


@pytest.mark.parametrize("name", ["g3", "g4"])
def test_role_token_prompt_ends_with_the_partial_answer_ids(name, request):
    fmt = request.getfixturevalue(name)
    encode = fmt._encode
    asked = fmt.encode([QUESTION])
    ids = fmt.encode([QUESTION, PARTIAL])
    # the question's prompt up to <|assistant|>, then the metadata newline and the answer text
    assert ids == asked + encode("\n") + encode(PARTIAL.content)
    assert ids[-len(encode(PARTIAL.content)) :] == encode(PARTIAL.content)
    assert fmt.ids["assistant"] not in ids[len(asked) :]  # the turn is left open
    assert ids.count(fmt.ids["assistant"]) == 1
    # a finished answer in the history is closed by the next turn, as before
    closed = fmt.encode([QUESTION, PARTIAL, ChatMessage("user", "more")])
    assert closed[: len(ids)] == ids and closed[-1] == fmt.ids["assistant"]


@pytest.mark.parametrize("name", ["g3", "g4"])
def test_continued_reply_is_not_filtered_for_a_metadata_line(name, request):
    fmt = request.getfixturevalue(name)
    shown = reply_parser(fmt, None, resumed=True)
    assert text_of(shown.feed("\n more")) == "\n more"  # mid-answer: a newline is text, not metadata
    assert text_of(reply_parser(fmt, None).feed("\n more")) == "more"


def test_chatglm2_continued_round_ends_with_the_partial_answer(sp_model_file):
    tok = ChatGLMTokenizer(sp_model_file)
    fmt = ChatGLM2Format(tok)
    history = [ChatMessage("user", "q1"), ChatMessage("assistant", "a1"), QUESTION, PARTIAL]
    assert fmt.build_text(history) == (
        "[Round 1]\n\n问：q1\n\n答：a1\n\n[Round 2]\n\n问：hello world\n\n答：the sea is blue and"
    )
    assert fmt.continuation_filter()(" more [Round 3]") == " more "  # spaces kept, rounds hidden


@pytest.mark.parametrize("name", ["g3", "g4"])
def test_fit_prompt_keeps_the_question_with_the_partial_answer(name, request):
    fmt = request.getfixturevalue(name)
    old = [ChatMessage("user", "old question " * 20), ChatMessage("assistant", "old answer " * 20)]
    msgs = [ChatMessage("system", "be brief"), *old, QUESTION, PARTIAL]
    full = fit_prompt(fmt, msgs, 10_000)
    assert full.dropped == () and full.ids == fmt.encode(msgs)
    tight = fit_prompt(fmt, msgs, len(fmt.encode([msgs[0], QUESTION, PARTIAL])))
    assert tight.dropped == (1, 2) and tight.kept == (0, 3, 4)
    assert tight.ids[-len(fmt._encode(PARTIAL.content)) :] == fmt._encode(PARTIAL.content)
    with pytest.raises(ValueError):
        fit_prompt(fmt, [ChatMessage("system", "only a system prompt")], 100)


def test_continued_text_keeps_its_leading_space_after_the_answer_tail(sp_model_file):
    tok = ChatGLMTokenizer(sp_model_file)
    ids = tok.encode("the sea is blue and the sky")
    k = next(i for i in range(2, len(ids)) if tok.sp.id_to_piece(ids[i]).startswith("▁"))
    alone = IncrementalDetokenizer(tok.decode)
    after = IncrementalDetokenizer(tok.decode)
    after.add_context(ids[k - RESUME_CONTEXT_TOKENS : k] if k >= RESUME_CONTEXT_TOKENS else ids[:k])
    text_alone = "".join(alone.push(i) for i in ids[k:]) + alone.flush()
    text_after = "".join(after.push(i) for i in ids[k:]) + after.flush()
    assert tok.decode(ids[:k]) + text_after == tok.decode(ids)
    assert text_after.startswith(" ") and text_alone == text_after[1:]  # sentencepiece drops it alone
