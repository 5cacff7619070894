"""KV reuse across turns on the llama.cpp engine, real embedded GGUF (issue 21).

What is guaranteed: a kept cache extended by the new prompt's tokens holds what a
fresh prefill of the whole prompt holds (the window strategies evict in blocks at
fixed positions of the sequence, so batching does not change what a token sees),
so greedy answers with reuse equal answers without it; ``context.n_decoded`` (the
tokens llama.cpp evaluated) shows that only the new tokens were prefilled.
"""

from __future__ import annotations

import threading

import pytest
import torch

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.llamacpp.backend import LlamaCppBackend
from glmdesk.engine.backends.llamacpp.kv import LlamaContext

SYSTEM = ChatMessage("system", "You are a helpful assistant.")
QUESTIONS = ["Name a colour.", "And a fruit?", "And an animal?"]
GREEDY = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=8))
# 4 sinks + 40 recent tokens, evicted 10 at a time: a 3-turn chat (~75 tokens) evicts.
WINDOW = CacheSettings(strategy="sliding_window", sinks=4, window=40)


@pytest.fixture(scope="module")
def backend():
    b = LlamaCppBackend()
    b.load(LoadSettings(engine="llamacpp", threads=1))  # one thread: see test_llamacpp_backend
    yield b
    b.close()


def dynamic(backend) -> CacheSettings:
    """Full for 60 tokens, then the window of 4 + 40."""
    per_token = backend.info.kv_bytes_per_token
    return CacheSettings(strategy="dynamic", sinks=4, window=40, budget_mib=60.5 * per_token / 2**20)


def answer(backend, messages, cache=None, key=None, params=GREEDY, stop=None):
    """``(ids, text, final chunk, tokens llama.cpp evaluated)`` of one answer."""
    before = backend.model._context.n_decoded if backend.model._context is not None else None
    chunks = list(backend.stream(messages, params, cache, stop, conversation=key))
    final = chunks[-1]
    assert final.error is None, final.error
    evaluated = None if before is None else backend.model._context.n_decoded - before
    return [i for c in chunks for i in c.token_ids], "".join(c.text for c in chunks), final, evaluated


def chat(backend, cache, key, questions=QUESTIONS):
    messages, turns = [SYSTEM], []
    for question in questions:
        messages.append(ChatMessage("user", question))
        turn = answer(backend, messages, cache, key)
        turns.append(turn)
        messages.append(ChatMessage("assistant", turn[1]))
    return turns


def stepped(final) -> int:
    """Generated tokens fed back into the cache (the last one is not when the answer
    ran out of length; a stop id never is)."""
    return final.n_generated - (final.finish_reason == "length")


@pytest.mark.parametrize("name", ["full", "sliding_window", "dynamic"])
def test_multi_turn_answers_with_reuse_equal_answers_without(backend, name):
    cache = {"full": CacheSettings(), "sliding_window": WINDOW, "dynamic": dynamic(backend)}[name]
    with_reuse = chat(backend, cache, f"reuse-{name}")
    without = chat(backend, cache, None)
    assert [t[0] for t in with_reuse] == [t[0] for t in without]
    assert with_reuse[0][2].reused_tokens == 0 and all(t[2].reused_tokens == 0 for t in without)
    for (_, _, final, evaluated), previous in zip(with_reuse[1:], with_reuse, strict=False):
        # everything the last answer processed is kept; only the new tokens are prefilled
        assert final.reused_tokens == previous[2].prompt_tokens + stepped(previous[2])
        assert evaluated == final.prompt_tokens - final.reused_tokens + stepped(final)
    for _, _, final, evaluated in without[1:]:
        assert evaluated == final.prompt_tokens + stepped(final)
    if name != "full":  # the window was passed: tokens stayed evicted across turns
        last = with_reuse[-1][2].cache
        assert last.evicted > 0 and last.tokens_held <= 44
        assert last.tokens_seen == with_reuse[-1][2].prompt_tokens + stepped(with_reuse[-1][2])
        assert (last.tokens_held, last.evicted) == (
            without[-1][2].cache.tokens_held,
            without[-1][2].cache.evicted,
        )
    backend.forget_conversation(f"reuse-{name}")


@pytest.mark.parametrize("name", ["full", "sliding_window"])
def test_regenerate_edit_and_system_prompt_cut_back(backend, name):
    cache = {"full": CacheSettings(), "sliding_window": WINDOW}[name]
    key = f"cut-{name}"
    first = [SYSTEM, ChatMessage("user", "Name a colour.")]
    a = answer(backend, first, cache, key)
    again = answer(backend, first, cache, key)  # regenerate: all but the last prompt token kept
    assert again[2].reused_tokens == a[2].prompt_tokens - 1 and again[3] == 1 + stepped(again[2])
    assert again[0] == a[0]
    edited = [SYSTEM, ChatMessage("user", "Name a country.")]
    b = answer(backend, edited, cache, key)
    fresh = answer(backend, edited, cache)
    assert 0 < b[2].reused_tokens < a[2].prompt_tokens - 2  # cut back inside the user message
    assert b[0] == fresh[0] and b[3] == b[2].prompt_tokens - b[2].reused_tokens + stepped(b[2])
    changed = [ChatMessage("system", "You are a terse assistant."), edited[1]]
    c = answer(backend, changed, cache, key)
    assert c[2].reused_tokens < a[2].prompt_tokens - 10  # cut back into the system prompt
    assert c[0] == answer(backend, changed, cache)[0]
    backend.forget_conversation(key)


def test_window_regenerate_after_an_eviction_prefills_afresh(backend):
    key = "evicted"
    messages = [SYSTEM, ChatMessage("user", "Count from 1 to 30, separated by commas.")]
    long = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=40))
    a = answer(backend, messages, WINDOW, key, long)
    assert a[2].cache.evicted > 0 and a[2].prompt_tokens < 44  # blocks evicted after the prompt
    again = answer(backend, messages, WINDOW, key, long)
    assert again[2].reused_tokens == 0 and again[0] == a[0]
    backend.forget_conversation(key)


def test_stop_keeps_what_was_processed(backend):
    key = "stopped"
    messages = [SYSTEM, ChatMessage("user", "Count from one to twenty.")]
    stop, shown = threading.Event(), []
    for chunk in backend.stream(messages, GREEDY, None, stop, conversation=key):
        shown.extend(chunk.token_ids)
        if len(shown) == 3:
            stop.set()
    nxt = messages + [ChatMessage("assistant", backend.model.decode(shown)), ChatMessage("user", "Go on.")]
    with_reuse = answer(backend, nxt, key=key)
    assert with_reuse[2].reused_tokens > 0
    assert with_reuse[0] == answer(backend, nxt)[0]
    backend.forget_conversation(key)


def test_one_conversation_is_kept_and_forget_clears_it(backend):
    first = [SYSTEM, ChatMessage("user", "Name a colour.")]
    other = [SYSTEM, ChatMessage("user", "Name a fruit.")]
    answer(backend, first, key="a")
    kept = backend.kept_kv_bytes()
    assert kept > 0 and backend.model.kv_pool.keys() == ["a"]
    assert kept == backend.model._context.kv_bytes()  # llama.cpp's own count of the held cells
    answer(backend, other, key="b")  # another conversation takes the context
    assert backend.model.kv_pool.keys() == ["b"]
    assert answer(backend, first, key="a")[2].reused_tokens == 0  # "a" was dropped, never stale
    backend.forget_conversation("a")
    assert backend.kept_kv_bytes() == 0 and backend.model._context.held() == 0
    assert answer(backend, first, key="a")[2].reused_tokens == 0
    assert answer(backend, first, WINDOW, key="a")[2].reused_tokens == 0  # other settings: afresh
    backend.forget_conversation("a")


def test_a_failed_answer_is_never_reused(backend, monkeypatch):
    key = "failed"
    messages = [SYSTEM, ChatMessage("user", "Name a colour.")]
    answer(backend, messages, key=key)
    real = LlamaContext.eval
    calls = []

    def failing(self, ids, all_logits=False):
        calls.append(len(ids))
        if len(calls) == 3:  # mid-answer: the cache is half written
            raise RuntimeError("llama_decode returned 1")
        return real(self, ids, all_logits)

    monkeypatch.setattr(LlamaContext, "eval", failing)
    nxt = messages + [ChatMessage("assistant", "Blue."), ChatMessage("user", "Another?")]
    final = list(backend.stream(nxt, GREEDY, conversation=key))[-1]
    assert final.finish_reason == "error" and key not in backend.model.kv_pool.keys()
    monkeypatch.undo()
    assert answer(backend, nxt, key=key)[2].reused_tokens == 0
    backend.forget_conversation(key)


def test_step_all_matches_after_a_cut_back(backend):
    """Cutting the cache back (``llama_memory_seq_rm``) leaves exactly the shorter
    sequence: its next logits equal a fresh evaluation's."""
    ids = backend.model.prompt_format.encode([SYSTEM, ChatMessage("user", "Name three colours.")])
    with backend.model.lock:
        source = backend.model.open_source(CacheSettings())
        source.prefill(torch.tensor([ids]))
        kept = source.reuse(ids[:10] + [ids[5]] * 4)
        cut = source.step_all(ids[10:14])[-1]
        fresh = backend.model.open_source(CacheSettings()).step_all(ids[:14])[-1]
    assert kept == 10
    assert torch.allclose(cut, fresh, atol=1e-3, rtol=0)


def test_cli_chat_on_llama_cpp_reuses_between_turns(embedded_folder):
    import re

    from tests.helpers.cli import run_cli

    out = run_cli(
        *["chat", "--engine", "llamacpp", "--threads", "1"],
        *["--system", "You are a helpful assistant.", "--temperature", "0", "--max-new-tokens", "8"],
        input_text="Name a colour.\nAnd a fruit?\n/clear\nAnd a fruit?\n/exit\n",
    )
    assert out.returncode == 0, out.stderr
    turns = re.findall(r"\[\d+ tokens, TTFT [\d.]+ s(, (\d+) prompt tokens reused)?", out.stderr)
    assert len(turns) == 3
    assert turns[0][1] == "" and int(turns[1][1]) > 20 and turns[2][1] == ""  # /clear forgets it
