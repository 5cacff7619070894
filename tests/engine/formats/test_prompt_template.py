"""Chat-template prompts: typed text never becomes a control token (issue 19 item 1)."""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glmdesk.core.messages import ChatMessage
from glmdesk.engine.formats.prompt import ChatTemplateFormat, Markup, render_template_parts


@pytest.fixture(scope="module")
def tokenizer(embedded):
    return embedded.tokenizer


@pytest.fixture(scope="module")
def fmt(tokenizer):
    return ChatTemplateFormat(tokenizer, frozenset({2}))


def plain(tokenizer, text: str) -> list[int]:
    return tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)


def test_typed_closing_tag_is_plain_and_templates_tag_is_special(tokenizer, fmt):
    """The issue's input: system prompt and user message both exactly ``<|im_end|>``."""
    im_start, im_end = 1, 2
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") == im_end
    typed = plain(tokenizer, "<|im_end|>")
    assert len(typed) > 1 and im_end not in typed and im_start not in typed
    nl = tokenizer.encode("\n", add_special_tokens=False)
    expected = (
        [im_start, *tokenizer.encode("system\n", add_special_tokens=False), *typed, im_end, *nl]
        + [im_start, *tokenizer.encode("user\n", add_special_tokens=False), *typed, im_end, *nl]
        + [im_start, *tokenizer.encode("assistant\n", add_special_tokens=False)]
    )
    ids = fmt.encode([ChatMessage("system", "<|im_end|>"), ChatMessage("user", "<|im_end|>")])
    assert ids == expected
    assert ids.count(im_end) == 2  # exactly the template's two closing tags


def test_empty_and_role_name_contents(tokenizer, fmt):
    messages = [ChatMessage("user", "assistant"), ChatMessage("assistant", ""), ChatMessage("user", "user")]
    ids = fmt.encode(messages)
    text = tokenizer.decode(ids)
    assert text == tokenizer.apply_chat_template(
        [{"role": m.role, "content": m.content} for m in messages], tokenize=False, add_generation_prompt=True
    )
    # the default system turn, three messages, the reply header
    assert ids.count(1) == 5 and ids.count(2) == 4


def test_trimming_template_keeps_contents_plain(tokenizer):
    """A template that trims contents (as Llama 3's does): the trimmed text is the
    content, the rest is markup, and the pieces join to the real rendering."""
    tok = copy.copy(tokenizer)
    tok.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] | trim }}<|im_end|>\n"
        "{% endfor %}<|im_start|>assistant\n"
    )
    messages = [ChatMessage("user", "  hi <|im_end|> \n")]
    parts = render_template_parts(tok, messages)
    assert parts == [
        Markup("<|im_start|>user\n"),
        "hi <|im_end|>",
        Markup("<|im_end|>\n<|im_start|>assistant"),
    ]
    ids = ChatTemplateFormat(tok, frozenset({2})).encode(messages)
    assert ids.count(2) == 1


# Texts that could be mistaken for markup: every special token of the vocabulary,
# role names, the template's own markup and pieces of it, and ordinary text.
def _atoms(tokenizer) -> list[str]:
    specials = list(tokenizer.all_special_tokens) + [
        tokenizer.convert_ids_to_tokens(i)
        for i in range(17)  # SmolLM2's added tokens
    ]
    markup = ["<|im_start|>system\n", "<|im_end|>\n", "<|im_start|>assistant\n", "\n", " ", "<|", "|>"]
    return sorted(set(specials + markup + ["system", "user", "assistant", "Paris", "你好", "🙂"]))


@pytest.fixture(scope="module")
def atoms(tokenizer):
    return _atoms(tokenizer)


def expected_ids(tokenizer, messages) -> list[int]:
    """Template markup ids from a rendering with (other) placeholders, contents plain."""
    marks = [f"QQPLACE{i}QQ" for i in range(len(messages))]
    rendered = tokenizer.apply_chat_template(
        [
            {"role": m.role, "content": mark if m.content else ""}
            for m, mark in zip(messages, marks, strict=True)
        ],
        tokenize=False,
        add_generation_prompt=True,
    )
    ids: list[int] = []
    for mark, m in zip(marks, messages, strict=True):
        if not m.content:
            continue
        head, rendered = rendered.split(mark, 1)
        ids += tokenizer.encode(head, add_special_tokens=False) + plain(tokenizer, m.content)
    return ids + tokenizer.encode(rendered, add_special_tokens=False)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_content_is_plain_text(tokenizer, fmt, atoms, data):
    content = st.lists(st.sampled_from(atoms), max_size=5).map("".join)
    turns = data.draw(
        st.lists(st.tuples(st.sampled_from(["user", "assistant"]), content), min_size=0, max_size=3)
    )
    system = data.draw(st.one_of(st.none(), content))
    last = data.draw(content)
    messages = ([ChatMessage("system", system)] if system is not None else []) + [
        ChatMessage(role, text) for role, text in turns
    ]
    messages.append(ChatMessage("user", last))
    ids = fmt.encode(messages)
    assert ids == expected_ids(tokenizer, messages)
    special = set(tokenizer.all_special_ids) | set(range(17))
    markup_specials = sum(
        sum(1 for i in tokenizer.encode(p.text, add_special_tokens=False) if i in special)
        for p in render_template_parts(tokenizer, messages)
        if isinstance(p, Markup)
    )
    assert sum(1 for i in ids if i in special) == markup_specials
