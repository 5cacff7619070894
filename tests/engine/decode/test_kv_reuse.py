"""KV reuse across turns on the real embedded model (issue 21).

What is guaranteed, per strategy: after :meth:`CacheStrategy.reuse` the logits of
the new prompt equal a fresh prefill of the whole prompt with the same strategy up
to fp32 rounding (``TOL``) for ``full``, ``sliding_window`` and ``dynamic`` (their
attention pattern is defined per position, whatever the chunking: sinks + window
for each query), so greedy answers are equal; for ``quantized`` (fp8 scale
calibrated on the first chunk) the reused cache equals the same cache fed the same
pieces bit for bit (a prefix is kept only while it holds the whole first chunk),
and differs from a fresh prefill by the quantization error of another scale.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.transformers.loaded_model import LoadedModel
from glmdesk.engine.cache import make_cache_strategy
from glmdesk.engine.decode.generate import stream_chat

TEXT = (Path(__file__).parents[3] / "benchmarks" / "data" / "public_domain.txt").read_text()
TOL = 2e-4
# 45 KiB per token: a 3 MiB budget switches the dynamic strategy at 68 tokens.
STRATEGIES = {
    "full": CacheSettings(),
    "sliding_window": CacheSettings(strategy="sliding_window", sinks=4, window=40),
    "dynamic": CacheSettings(strategy="dynamic", sinks=4, window=40, budget_mib=3.0),
    "quantized": CacheSettings(strategy="quantized"),
}
GREEDY = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=6))
QUESTIONS = ["Name a colour.", "And a fruit?"]


@pytest.fixture(scope="module")
def text_ids(embedded):
    return embedded.tokenizer(TEXT[:4000]).input_ids


def greedy(strategy, prompt: list[int], reused: int, n: int) -> tuple[list[int], torch.Tensor]:
    """Prefill ``prompt[reused:]``, then ``n`` greedy tokens (each stepped into the
    cache); returns the ids and the prompt's last logits."""
    logits = strategy.prefill(torch.tensor([prompt[reused:]]))
    first = logits.clone()
    out = []
    for _ in range(n):
        token = int(torch.argmax(logits))
        out.append(token)
        logits = strategy.step(token)
    return out, first


@pytest.mark.parametrize("name", ["full", "sliding_window", "dynamic"])
def test_reused_prompt_gives_the_fresh_prefill_logits(embedded_model, text_ids, name):
    settings = STRATEGIES[name]
    kept = make_cache_strategy(embedded_model, settings)
    first = text_ids[:50]
    answer, _ = greedy(kept, first, kept.reuse(first), 6)
    assert kept.ids == first + answer
    nxt = first + answer + text_ids[50:90]  # the next prompt extends the held sequence
    reused = kept.reuse(nxt)
    assert reused == len(first) + len(answer)
    got, got_logits = greedy(kept, nxt, reused, 6)
    fresh = make_cache_strategy(embedded_model, settings)
    want, want_logits = greedy(fresh, nxt, fresh.reuse(nxt), 6)
    assert torch.allclose(got_logits, want_logits, atol=TOL, rtol=0)
    assert got == want
    assert kept.stats().tokens_seen == fresh.stats().tokens_seen == len(nxt) + 6
    assert kept.stats().tokens_held == fresh.stats().tokens_held


@pytest.mark.parametrize("name", ["full", "sliding_window", "dynamic", "quantized"])
def test_an_edited_prompt_keeps_only_what_is_still_exact(embedded_model, text_ids, name):
    settings = STRATEGIES[name]
    kept = make_cache_strategy(embedded_model, settings)
    first = text_ids[:30]
    greedy(kept, first, kept.reuse(first), 4)
    edited = text_ids[:20] + text_ids[200:230]  # diverges at position 20
    reused = kept.reuse(edited)
    # Nothing was evicted yet (33 tokens seen < 4 sinks + 40): the window keeps the
    # common prefix too; fp8 cannot (its scale came from all 30 first tokens).
    assert reused == (0 if name == "quantized" else 20)
    got, got_logits = greedy(kept, edited, reused, 5)
    fresh = make_cache_strategy(embedded_model, settings)
    want, want_logits = greedy(fresh, edited, 0, 5)
    assert torch.allclose(got_logits, want_logits, atol=TOL, rtol=0)
    assert got == want


@pytest.mark.parametrize("name", ["sliding_window", "dynamic"])
def test_after_eviction_only_an_exact_extension_is_reused(embedded_model, text_ids, name):
    settings = STRATEGIES[name]
    kept = make_cache_strategy(embedded_model, settings)
    first = text_ids[:100]  # past sinks + window (and the dynamic switch)
    greedy(kept, first, kept.reuse(first), 3)
    assert kept.stats().evicted > 0
    # Regenerate (same prompt): the prefix up to the last prompt token was evicted
    # from the middle, so nothing can be kept: a fresh prefill, same answer.
    assert kept.reuse(first) == 0
    assert kept.stats().tokens_seen == 0
    got, got_logits = greedy(kept, first, 0, 5)
    want, want_logits = greedy(make_cache_strategy(embedded_model, settings), first, 0, 5)
    assert got == want and torch.allclose(got_logits, want_logits, atol=TOL, rtol=0)


def test_quantized_reuse_equals_the_same_pieces_fed_without_a_break(embedded_model, text_ids):
    settings = STRATEGIES["quantized"]
    kept = make_cache_strategy(embedded_model, settings)
    first = text_ids[:40]
    answer, _ = greedy(kept, first, kept.reuse(first), 4)
    nxt = first + answer + text_ids[40:70]
    got, got_logits = greedy(kept, nxt, kept.reuse(nxt), 4)
    replay = make_cache_strategy(embedded_model, settings)
    replay.prefill(torch.tensor([first]))
    for token in answer:
        replay.step(token)
    want, want_logits = greedy(replay, nxt, len(first) + len(answer), 4)
    assert got == want and torch.equal(got_logits, want_logits)
    # Cut back inside the answer (past the calibration chunk): still the same pieces.
    edited = first + answer[:2] + text_ids[300:320]
    assert kept.reuse(edited) == len(first) + 2
    replay = make_cache_strategy(embedded_model, settings)
    replay.prefill(torch.tensor([first]))
    for token in answer[:2]:
        replay.step(token)
    got, got_logits = greedy(kept, edited, len(first) + 2, 3)
    want, want_logits = greedy(replay, edited, len(first) + 2, 3)
    assert got == want and torch.equal(got_logits, want_logits)


def chat(loaded, settings, conversation, questions=QUESTIONS, box=GREEDY):
    """Answer ``questions`` in turn; returns [(ids, text, final chunk)] per turn."""
    messages: list[ChatMessage] = []
    turns = []
    for question in questions:
        messages.append(ChatMessage("user", question))
        chunks = list(stream_chat(loaded, messages, box, settings, conversation=conversation))
        final = chunks[-1]
        assert final.error is None, final.error
        text = "".join(c.text for c in chunks)
        turns.append(([t for c in chunks for t in c.token_ids], text, final))
        messages.append(ChatMessage("assistant", text))
    return turns


@pytest.mark.parametrize("name", ["full", "sliding_window", "dynamic"])
def test_multi_turn_answers_with_reuse_equal_answers_without(embedded, name):
    settings = STRATEGIES[name]
    key = f"reuse-{name}"
    with_reuse = chat(embedded, settings, key)
    without = chat(embedded, settings, None)
    assert [t[0] for t in with_reuse] == [t[0] for t in without]
    assert with_reuse[0][2].reused_tokens == 0
    for _, _, final in with_reuse[1:]:
        assert 0 < final.reused_tokens < final.prompt_tokens
    assert all(t[2].reused_tokens == 0 for t in without)
    assert key in embedded.kv_pool.keys()
    embedded.kv_pool.discard(key)


def test_regenerate_and_changed_system_prompt_cut_back(embedded):
    key = "cut-back"
    system = ChatMessage("system", "Answer in one word.")
    first = [system, ChatMessage("user", "Name a colour.")]
    a = list(stream_chat(embedded, first, GREEDY, conversation=key))
    again = list(stream_chat(embedded, first, GREEDY, conversation=key))  # regenerate
    assert again[-1].reused_tokens == a[-1].prompt_tokens - 1
    assert [c.token_ids for c in again] == [c.token_ids for c in a]
    changed = [ChatMessage("system", "Answer in two words."), first[1]]
    b = list(stream_chat(embedded, changed, GREEDY, conversation=key))
    fresh = list(stream_chat(embedded, changed, GREEDY))
    assert b[-1].reused_tokens < a[-1].prompt_tokens - 5  # cut back into the system prompt
    assert [c.token_ids for c in b] == [c.token_ids for c in fresh]
    embedded.kv_pool.discard(key)


def test_sampling_changes_keep_the_cache_and_other_settings_drop_it(embedded):
    key = "settings"
    messages = [ChatMessage("user", "Name a colour.")]
    list(stream_chat(embedded, messages, GREEDY, conversation=key))
    hot = ParamsBox(SamplingParams(temperature=0.9, top_p=0.5, seed=3, max_new_tokens=4))
    assert list(stream_chat(embedded, messages, hot, conversation=key))[-1].reused_tokens > 0
    chunked = CacheSettings(prefill_chunk=7)  # how prompts run, not what the cache holds
    assert list(stream_chat(embedded, messages, GREEDY, chunked, conversation=key))[-1].reused_tokens > 0
    window = STRATEGIES["sliding_window"]
    assert list(stream_chat(embedded, messages, GREEDY, window, conversation=key))[-1].reused_tokens == 0
    embedded.kv_pool.discard(key)


def test_stop_keeps_what_was_processed(embedded):
    import threading

    key = "stopped"
    messages = [ChatMessage("user", "Count from one to twenty.")]
    stop = threading.Event()
    shown = []
    for chunk in stream_chat(embedded, messages, GREEDY, stop=stop, conversation=key):
        shown.extend(chunk.token_ids)
        if len(shown) == 3:
            stop.set()
    assert len(shown) == 3
    nxt = messages + [ChatMessage("assistant", embedded.decode(shown)), ChatMessage("user", "Go on.")]
    with_reuse = list(stream_chat(embedded, nxt, GREEDY, conversation=key))
    fresh = list(stream_chat(embedded, nxt, GREEDY))
    assert with_reuse[-1].reused_tokens > 0
    assert [c.token_ids for c in with_reuse] == [c.token_ids for c in fresh]
    embedded.kv_pool.discard(key)


def test_a_failed_answer_is_never_reused(embedded, monkeypatch):
    key = "failed"
    messages = [ChatMessage("user", "Name a colour.")]
    list(stream_chat(embedded, messages, GREEDY, conversation=key))
    assert key in embedded.kv_pool.keys()
    from glmdesk.engine.cache.full import FullCacheStrategy

    def broken(self, input_ids, start):
        raise RuntimeError("forward failed")

    monkeypatch.setattr(FullCacheStrategy, "_forward", broken)
    final = list(stream_chat(embedded, messages + [ChatMessage("user", "More")], GREEDY, conversation=key))[
        -1
    ]
    assert final.finish_reason == "error"
    assert key not in embedded.kv_pool.keys()


def test_pool_reports_bytes_and_unload_clears_it(embedded):
    loaded = LoadedModel(embedded.model, embedded.tokenizer, embedded.prompt_format, embedded.info)
    final = chat(loaded, CacheSettings(), "a", QUESTIONS[:1])[0][2]
    assert final.kept_kv_bytes == 0  # this answer's cache is taken, not kept, while it runs
    chat(loaded, CacheSettings(), "b", QUESTIONS[:1])
    assert loaded.kv_pool.keys() == ["a", "b"]
    assert loaded.kv_pool.total_bytes() > 0
    kept = [loaded.kv_pool.take("a", None), loaded.kv_pool.take("b", None)]  # other settings: released
    assert kept == [None, None] and len(loaded.kv_pool) == 0
    chat(loaded, CacheSettings(), "c", QUESTIONS[:1])
    loaded.close()
    assert len(loaded.kv_pool) == 0 and loaded.kv_pool.total_bytes() == 0


def test_backend_keeps_a_cache_per_conversation_key(embedded):
    from glmdesk.engine.backends.transformers.backend import TransformersBackend

    backend = TransformersBackend(embedded)  # shares the session's model, does not close it
    messages = [ChatMessage("user", "Name a colour.")]
    list(backend.stream(messages, GREEDY, conversation="serve"))
    assert backend.kept_kv_bytes() > 0
    again = list(backend.stream(messages, GREEDY, conversation="serve"))
    assert again[-1].reused_tokens == again[-1].prompt_tokens - 1
    backend.forget_conversation("serve")
    assert "serve" not in embedded.kv_pool.keys()
    assert list(backend.stream(messages, GREEDY, conversation="serve"))[-1].reused_tokens == 0
    backend.forget_conversation("serve")


def test_pool_drops_the_least_recently_used_past_its_budget(embedded_model, text_ids):
    from glmdesk.engine.decode.kv_pool import KVPool

    def kept_cache(n: int):
        strategy = make_cache_strategy(embedded_model, CacheSettings())
        strategy.prefill(torch.tensor([text_ids[:n]]))
        return strategy

    size = kept_cache(5).stats().kv_bytes  # one first allocation (256 tokens), ~11 MiB
    pool = KVPool(lambda compat, held: int(2.5 * size))
    caches = {key: kept_cache(5) for key in "abc"}
    pool.put("a", caches["a"], "s")
    pool.put("b", caches["b"], "s")
    pool.put("a", pool.take("a", "s"), "s")  # "a" used again: "b" is now the oldest
    pool.put("c", caches["c"], "s")
    assert pool.keys() == ["a", "c"] and pool.total_bytes() == 2 * size
    assert caches["b"].cache is None  # released
    alone = KVPool(lambda compat, held: size // 2)
    alone.put("big", kept_cache(5), "s")  # the newest stays even alone over the budget
    assert alone.keys() == ["big"]
