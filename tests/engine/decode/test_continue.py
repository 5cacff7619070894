"""Continue: a greedy answer cut by the length limit and continued equals the answer run uncut.

On the embedded model (its chat template), on both engines: transformers and llama.cpp.
"""

from __future__ import annotations

import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.llamacpp.backend import LlamaCppBackend
from glmdesk.engine.decode.context import fit_prompt
from glmdesk.engine.decode.generate import stream_chat

QUESTION = [
    ChatMessage("system", "You are a helpful assistant."),
    ChatMessage("user", "Write a short poem about the sea."),
]
N = 12  # tokens before the cut


def greedy(n: int) -> ParamsBox:
    return ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=n))


@pytest.fixture(scope="module")
def llamacpp():
    b = LlamaCppBackend()
    b.load(LoadSettings(engine="llamacpp", threads=1))
    yield b
    b.close()


def answer(stream) -> tuple[str, list, str | None]:
    chunks = list(stream)
    return "".join(c.text for c in chunks), [i for c in chunks for i in c.token_ids], chunks[-1].finish_reason


def check_continuation(run) -> None:
    whole, whole_ids, _ = answer(run(QUESTION, 2 * N))
    cut, cut_ids, finish = answer(run(QUESTION, N))
    assert finish == "length" and len(cut_ids) == N
    rest, rest_ids, _ = answer(run([*QUESTION, ChatMessage("assistant", cut)], N))
    assert cut_ids + rest_ids == whole_ids
    assert cut + rest == whole
    assert rest and whole.startswith(cut)


def test_transformers_continuation_equals_the_uncut_answer(embedded):
    check_continuation(lambda msgs, n: stream_chat(embedded, msgs, greedy(n)))


def test_llamacpp_continuation_equals_the_uncut_answer(llamacpp):
    check_continuation(lambda msgs, n: llamacpp.stream(msgs, greedy(n)))


def test_chat_template_prompt_ends_with_the_partial_answer(embedded):
    fmt = embedded.prompt_format
    partial = ChatMessage("assistant", "The sea is")
    asked = fmt.encode(QUESTION)
    ids = fit_prompt(fmt, [*QUESTION, partial], 10_000).ids
    tail = embedded.tokenizer.encode(partial.content, add_special_tokens=False)
    assert ids == asked + tail  # the generation prompt, then the text: no <|im_end|>
    assert embedded.tokenizer.decode(ids).endswith("<|im_start|>assistant\nThe sea is")
