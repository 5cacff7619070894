"""GLM-4-0414 and GLM-Z1: the family added as one module (``engine/families/glm4_0414.py``).

A tiny random ``Glm4ForCausalLM`` folder is recognised as its family (not generic-hf),
loaded through the real loader, prompted with exactly the ids of its own chat template,
and a scripted Z1 reply streams its ``<think>`` block as reasoning, then the answer.
"""

from __future__ import annotations

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ReasoningPart, TextPart, merged
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.loader import load_model
from glmdesk.engine.chatglm.detect import detect_family
from glmdesk.engine.decode.generate import stream_answer
from glmdesk.engine.families import get_family, sampling_defaults
from tests.helpers import tool_models as tm


def test_recognised_as_their_family_with_its_defaults(glm4_0414_folder, glm_z1_folder):
    assert detect_family(glm4_0414_folder) == "glm4-0414"
    assert detect_family(glm_z1_folder) == "glm-z1"
    z1 = sampling_defaults("glm-z1")
    assert (z1.temperature, z1.top_p) == (0.6, 0.95)
    assert get_family("glm-z1").reasoning is not None and get_family("glm4-0414").reasoning is None


@pytest.fixture(scope="module")
def z1(glm_z1_folder):
    return load_model(LoadSettings(model=str(glm_z1_folder), device="cpu"))


def test_prompt_is_the_folders_chat_template(z1, glm_z1_folder):
    from transformers import AutoTokenizer

    messages = [
        ChatMessage("system", "You are a helpful assistant."),
        ChatMessage("user", "Hello world"),
        ChatMessage("assistant", "<think>hidden steps</think>The answer is 42."),
        ChatMessage("user", "what is the weather today?"),
    ]
    tok = AutoTokenizer.from_pretrained(glm_z1_folder)
    expected = tok.apply_chat_template(
        [{"role": m.role, "content": m.content} for m in messages], add_generation_prompt=True, tokenize=True
    )["input_ids"]
    assert z1.info.family == "glm-z1"
    assert z1.prompt_format.encode(messages) == expected
    # A stored answer keeps its reasoning apart: the later prompt leaves it out, as the template does.
    kept = ChatMessage("assistant", "The answer is 42.", reasoning="hidden steps")
    assert z1.prompt_format.encode([*messages[:2], kept, messages[3]]) == expected
    stops = {tok.convert_tokens_to_ids(t) for t in ("<|endoftext|>", "<|user|>", "<|observation|>")}
    assert z1.prompt_format.stop_ids == stops


def test_think_block_streams_as_reasoning_then_answer(z1):
    tok, stop = z1.tokenizer, z1.tokenizer.convert_tokens_to_ids("<|user|>")
    scripts = [
        tok.encode(text, add_special_tokens=False) + [stop]
        for text in ("x</think>answer", "<think>x</think>answer")
    ]
    forcer = tm.ForceTokens(scripts)
    z1.logits_processors = lambda: (forcer,)
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=40))
    for _ in scripts:
        chunks = list(stream_answer(z1, [ChatMessage("user", "Hello world")], params))
        assert chunks[-1].finish_reason == "stop"
        assert merged(p for c in chunks for p in c.parts) == (ReasoningPart("x"), TextPart("answer"))
        assert "".join(c.text for c in chunks) == "answer"
        first_text = next(i for i, c in enumerate(chunks) if c.text)
        assert any(isinstance(p, ReasoningPart) for c in chunks[:first_text] for p in c.parts)
        # Time to first token both ways: the first reasoning token, then the first answer token.
        assert chunks[first_text - 1].answer_ttft_s == 0.0
        last = chunks[-1]
        assert 0.0 < last.ttft_s < last.answer_ttft_s == chunks[first_text].answer_ttft_s
        assert last.reasoning_tokens == first_text  # one chunk per token: those before the answer
    unfinished = tm.ForceTokens([tok.encode("still thinking", add_special_tokens=False) + [stop]])
    z1.logits_processors = lambda: (unfinished,)
    chunks = list(stream_answer(z1, [ChatMessage("user", "Hello world")], params))
    assert "".join(c.text for c in chunks) == "" and chunks[-1].ttft_s > 0.0
    assert chunks[-1].answer_ttft_s == 0.0 and chunks[-1].reasoning_tokens == 0  # no answer began


def test_the_terminal_prints_the_thinking_apart_then_the_answer(z1, capsys):
    import threading

    from glmdesk.cli import commands
    from glmdesk.core.settings import CacheSettings
    from glmdesk.engine.backends.transformers.backend import TransformersBackend

    tok, stop = z1.tokenizer, z1.tokenizer.convert_tokens_to_ids("<|user|>")
    script = tok.encode("first\nsecond</think>answer", add_special_tokens=False) + [stop]
    forcer = tm.ForceTokens([script])
    z1.logits_processors = lambda: (forcer,)
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=40))
    backend = TransformersBackend(z1)
    text, reason = commands._stream_one(
        backend, [ChatMessage("user", "Hello")], params, CacheSettings(), threading.Event()
    )
    out, err = capsys.readouterr()
    assert (text, reason) == ("answer", "stop")
    assert out == "answer\n"  # standard output is the answer alone
    assert "Thinking:\n│ first\n│ second\n[thought (" in err and " tokens)]\n" in err
    assert "s thinking, " in err and "s answer," in err


def test_a_thinking_budget_closes_the_block_and_the_model_answers(z1):
    tok, stop = z1.tokenizer, z1.tokenizer.convert_tokens_to_ids("<|user|>")
    close = list(z1.prompt_format.reasoning_close_ids)
    script = tok.encode("one two three four five six seven", add_special_tokens=False) + [stop]
    forcer = tm.ForceTokens([script])  # it would think to the end; the budget stops it at 3
    z1.logits_processors = lambda: (forcer,)
    params = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=40, thinking_budget=3))
    chunks = list(stream_answer(z1, [ChatMessage("user", "Hello world")], params))
    parts = merged(p for c in chunks for p in c.parts)
    answer_ids = script[3 + len(close) : -1]  # the forced script goes on after the close marker
    assert parts == (ReasoningPart(tok.decode(script[:3])), TextPart(tok.decode(answer_ids).lstrip()))
    assert chunks[-1].reasoning_tokens == 3 + len(close) and chunks[-1].finish_reason == "stop"
    off = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=40))  # off by default
    chunks = list(stream_answer(z1, [ChatMessage("user", "Hello world")], off))
    assert "".join(c.text for c in chunks) == "" and "seven" in "".join(
        p.text for c in chunks for p in c.parts
    )
