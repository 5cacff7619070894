"""A tiny GLM-4-shaped GGUF (architecture ``chatglm``, GLM-4's ``chatglm-bpe``
byte-level vocabulary with its special tokens), written here with the ``gguf``
package, run by the llama.cpp backend: glmdesk's role-token format gives the ids
of the GGUF's own tokenizer, role tokens as ids, typed role tags as text.

The weights are random (the answers are noise); what is tested is the prompt ids,
the stop ids and that llama.cpp runs the architecture through glmdesk's loop.
"""

from __future__ import annotations

import numpy as np
import pytest

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends.llamacpp.backend import LlamaCppBackend

SPECIALS = [
    "<|endoftext|>",
    "[MASK]",
    "[gMASK]",
    "[sMASK]",
    "<sop>",
    "<eop>",
    "<|system|>",
    "<|user|>",
    "<|assistant|>",
    "<|observation|>",
]
MERGES = ["Ġ t", "h e", "Ġt he", "e l", "l o", "el lo", "h ello"]


def byte_symbols() -> list[str]:
    """GPT-2's byte-to-unicode table (the byte-level BPE alphabet), as 256 symbols."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    extra = iter(range(256, 512))
    return [chr(b) if b in keep else chr(next(extra)) for b in range(256)]


def write_tiny_glm(path, context_length: int = 512) -> dict[str, int]:
    """Write the GGUF (``context_length`` in tokens); return the special tokens' ids."""
    import gguf

    tokens = byte_symbols() + [m.replace(" ", "") for m in MERGES] + SPECIALS
    types = [gguf.TokenType.NORMAL] * (len(tokens) - len(SPECIALS)) + [gguf.TokenType.CONTROL] * len(SPECIALS)
    ids = {name: tokens.index(name) for name in SPECIALS}
    n_vocab, n_embd, n_head, n_kv, n_ff, n_layer = len(tokens), 64, 4, 2, 128, 2
    head = n_embd // n_head
    w = gguf.GGUFWriter(str(path), "chatglm")
    w.add_name("tiny-glm4")
    w.add_context_length(context_length)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_block_count(n_layer)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head // 2)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("chatglm-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(MERGES)
    w.add_eos_token_id(ids["<|endoftext|>"])
    w.add_pad_token_id(ids["<|endoftext|>"])
    rng = np.random.default_rng(0)

    def t(name, *shape):
        w.add_tensor(name, (rng.standard_normal(shape) * 0.05).astype(np.float32))

    t("token_embd.weight", n_vocab, n_embd)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    t("output.weight", n_vocab, n_embd)
    qkv = n_embd + 2 * n_kv * head
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        t(f"blk.{i}.attn_qkv.weight", qkv, n_embd)
        t(f"blk.{i}.attn_qkv.bias", qkv)
        t(f"blk.{i}.attn_output.weight", n_embd, n_embd)
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        t(f"blk.{i}.ffn_up.weight", 2 * n_ff, n_embd)
        t(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return ids


@pytest.fixture(scope="module")
def tiny_glm(tmp_path_factory):
    path = tmp_path_factory.mktemp("glm") / "tiny-glm4.gguf"
    ids = write_tiny_glm(path)
    backend = LlamaCppBackend()
    backend.load(LoadSettings(model=str(path), engine="llamacpp"))
    yield backend, ids
    backend.close()


def test_role_token_format_with_gguf_ids(tiny_glm):
    backend, ids = tiny_glm
    fmt, vocab = backend.model.prompt_format, backend.model.vocab
    assert backend.info.family == "glm4" and fmt.name == "glm4"
    messages = [ChatMessage("system", "be brief"), ChatMessage("user", "hello the tel")]
    got = fmt.encode(messages)
    plain = vocab.encode
    expected = (
        [ids["[gMASK]"], ids["<sop>"]]
        + [ids["<|system|>"], *plain("\n"), *plain("be brief")]
        + [ids["<|user|>"], *plain("\n"), *plain("hello the tel")]
        + [ids["<|assistant|>"]]
    )
    assert got == expected
    # GLM-4's own layout, tokenized whole by the GGUF's tokenizer with special tokens parsed
    text = "[gMASK]<sop><|system|>\nbe brief<|user|>\nhello the tel<|assistant|>"
    assert vocab.encode(text, special=True) == got
    typed = fmt.encode([ChatMessage("user", "hello <|assistant|><|user|> tel")])
    assert typed.count(ids["<|assistant|>"]) == 1 and typed.count(ids["<|user|>"]) == 1  # tags stayed text
    assert plain(" the") == [tokens_id(vocab, "Ġthe")]  # the merges apply (byte-level BPE)


def tokens_id(vocab, text):
    return next(i for i in range(vocab.n_vocab) if vocab.text(i) == text)


def test_stop_ids_are_glm4_s(tiny_glm):
    backend, ids = tiny_glm
    assert backend.capabilities().stop_ids == {ids["<|endoftext|>"], ids["<|user|>"], ids["<|observation|>"]}


def test_random_glm_answers_through_the_loop(tiny_glm):
    backend, _ = tiny_glm
    box = ParamsBox(SamplingParams(temperature=1.0, seed=1, max_new_tokens=40))
    for cache in (CacheSettings(), CacheSettings(strategy="sliding_window", window=16, sinks=2)):
        final = list(backend.stream([ChatMessage("user", "hello")], box, cache))[-1]
        assert final.finish_reason in ("stop", "length"), final.error
        assert final.cache.kv_bytes > 0


@pytest.mark.parametrize(
    "cache", [CacheSettings(), CacheSettings(strategy="sliding_window", window=24, sinks=2)]
)
def test_glm_format_reuse_gives_the_answers_of_a_fresh_prefill(tiny_glm, cache):
    """Issue 21 on GLM-4's role tokens: a kept cache (window evicting past 26 tokens)
    answers each turn as a fresh prefill of the whole conversation does."""
    backend, _ = tiny_glm
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=6))
    answers = {}
    for key in ("glm", None):
        messages, turns = [ChatMessage("system", "be brief")], []
        for question in ("hello the tel", "hello", "the hello tel"):
            messages.append(ChatMessage("user", question))
            chunks = list(backend.stream(messages, box, cache, conversation=key))
            assert chunks[-1].error is None, chunks[-1].error
            turns.append(([i for c in chunks for i in c.token_ids], chunks[-1].reused_tokens))
            messages.append(ChatMessage("assistant", "".join(c.text for c in chunks)))
        answers[key] = turns
    assert [ids for ids, _ in answers["glm"]] == [ids for ids, _ in answers[None]]
    reused = [n > 0 for _, n in answers["glm"]]
    # GLM-4 writes "\n" after <|assistant|> in the history, so a turn keeps the previous
    # prompt, not its answer; the window's third turn then starts where a block was
    # evicted since, and is prefilled afresh.
    assert reused == ([False, True, True] if cache.strategy == "full" else [False, True, False])
    backend.forget_conversation("glm")


@pytest.fixture(scope="module")
def tiny_glm_2k(tmp_path_factory):
    """The tiny GGUF with room for GLM-4's tools turn (about 600 byte-level tokens)."""
    path = tmp_path_factory.mktemp("glm2k") / "tiny-glm4.gguf"
    ids = write_tiny_glm(path, context_length=2048)
    backend = LlamaCppBackend()
    backend.load(LoadSettings(model=str(path), engine="llamacpp"))
    yield backend, ids
    backend.close()


def test_forced_call_on_llamacpp(tiny_glm_2k, monkeypatch):
    """A forced function (``ToolSet.forced``): the prompt ends with ``<|assistant|>`` and the
    function's metadata line as the GGUF tokenizer encodes GLM-4's text, and the loop, with a
    test-only processor forcing only the argument tokens, ends with that call."""
    import torch

    from glmdesk.core.tools import FunctionSpec, ToolSet

    backend, ids = tiny_glm_2k
    fmt, vocab = backend.model.prompt_format, backend.model.vocab
    tools = ToolSet((FunctionSpec("hello", "", {}), FunctionSpec("tel", "", {})), forced="tel")
    messages = [ChatMessage("system", "", tools=tools), ChatMessage("user", "hello the tel")]
    got = fmt.encode(messages)
    unforced = fmt.encode([ChatMessage("system", "", tools=ToolSet(tools.functions)), messages[1]])
    assert unforced[-1] == ids["<|assistant|>"] and got == unforced + vocab.encode("tel\n")
    script = vocab.encode('{"the": "hello"}') + [ids["<|observation|>"]]

    def force(seen: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        k = seen.shape[1] - len(got)
        forced = torch.full_like(scores, float("-inf"))
        forced[:, script[min(k, len(script) - 1)]] = 0.0
        return forced

    monkeypatch.setattr(backend.model, "logits_processors", lambda: (force,))
    box = ParamsBox(SamplingParams(temperature=0.0, max_new_tokens=40))
    chunks = list(backend.stream(messages, box))
    last = chunks[-1]
    assert last.finish_reason == "tool_calls", (last.error, last.notice)
    assert (last.tool_call.name, dict(last.tool_call.arguments)) == ("tel", {"the": "hello"})
    assert last.prompt_tokens == len(got) and "".join(c.text for c in chunks) == ""
