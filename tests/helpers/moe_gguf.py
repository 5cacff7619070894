"""A tiny GLM-4.5-shaped mixture-of-experts GGUF (architecture ``glm4moe``), written
with the ``gguf`` package: two layers (the first dense, the second with four routed
experts and a shared one, sigmoid routing as GLM-4.5's), the byte-level vocabulary of
``tests/engine/test_llamacpp_glm.py`` and GLM-4.5's chat template. Random weights:
what it tests is where llama.cpp puts the expert tensors, not the answers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.helpers.glm45_models import GLM45_TEMPLATE

SPECIALS = ["<|endoftext|>", "[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"]
MERGES = ["Ġ t", "h e", "Ġt he", "e l", "l o", "el lo", "h ello"]
#: The shape written: layers, width, heads, KV heads, head size, experts, expert width.
SHAPE = {"layers": 2, "embd": 64, "heads": 4, "kv_heads": 2, "head": 16, "ff": 96, "experts": 4, "ff_exp": 32}


def _byte_symbols() -> list[str]:
    """GPT-2's byte-to-unicode table (the byte-level BPE alphabet), as 256 symbols."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    extra = iter(range(256, 512))
    return [chr(b) if b in keep else chr(next(extra)) for b in range(256)]


def _metadata(w, gguf, tokens: list[str]) -> None:
    s = SHAPE
    w.add_name("tiny-glm45-moe")
    w.add_context_length(512)
    w.add_embedding_length(s["embd"])
    w.add_feed_forward_length(s["ff"])
    w.add_block_count(s["layers"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_key_length(s["head"])
    w.add_value_length(s["head"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(s["head"] // 2)
    w.add_expert_count(s["experts"])
    w.add_expert_used_count(2)
    w.add_expert_shared_count(1)
    w.add_leading_dense_block_count(1)
    w.add_expert_feed_forward_length(s["ff_exp"])
    w.add_expert_weights_scale(1.0)
    w.add_expert_weights_norm(True)
    w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    n_normal = len(tokens) - len(SPECIALS)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("glm4")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.NORMAL] * n_normal + [gguf.TokenType.CONTROL] * len(SPECIALS))
    w.add_token_merges(MERGES)
    w.add_eos_token_id(tokens.index("<|endoftext|>"))
    w.add_chat_template(GLM45_TEMPLATE)


def write_moe_gguf(path: Path) -> Path:
    """Write the GGUF to ``path`` (about 0.4 MiB, f32 tensors); returns ``path``."""
    import gguf

    s = SHAPE
    tokens = _byte_symbols() + [m.replace(" ", "") for m in MERGES] + SPECIALS
    w = gguf.GGUFWriter(str(path), "glm4moe")
    _metadata(w, gguf, tokens)
    rng = np.random.default_rng(0)
    embd, q, kv, n_exp, ff_exp = (
        s["embd"],
        s["heads"] * s["head"],
        s["kv_heads"] * s["head"],
        s["experts"],
        s["ff_exp"],
    )

    def t(name: str, *shape: int) -> None:
        w.add_tensor(name, (rng.standard_normal(shape) * 0.05).astype(np.float32))

    def ones(name: str) -> None:
        w.add_tensor(name, np.ones(embd, dtype=np.float32))

    t("token_embd.weight", len(tokens), embd)
    ones("output_norm.weight")
    t("output.weight", len(tokens), embd)
    for i in range(s["layers"]):
        ones(f"blk.{i}.attn_norm.weight")
        ones(f"blk.{i}.post_attention_norm.weight")
        for part, rows in (("q", q), ("k", kv), ("v", kv)):
            t(f"blk.{i}.attn_{part}.weight", rows, embd)
            t(f"blk.{i}.attn_{part}.bias", rows)
        t(f"blk.{i}.attn_output.weight", embd, q)
        if i == 0:  # the leading dense layer
            t(f"blk.{i}.ffn_gate.weight", s["ff"], embd)
            t(f"blk.{i}.ffn_up.weight", s["ff"], embd)
            t(f"blk.{i}.ffn_down.weight", embd, s["ff"])
            continue
        t(f"blk.{i}.ffn_gate_inp.weight", n_exp, embd)
        w.add_tensor(f"blk.{i}.exp_probs_b.bias", np.zeros(n_exp, dtype=np.float32))
        t(f"blk.{i}.ffn_gate_exps.weight", n_exp, ff_exp, embd)
        t(f"blk.{i}.ffn_up_exps.weight", n_exp, ff_exp, embd)
        t(f"blk.{i}.ffn_down_exps.weight", n_exp, embd, ff_exp)
        t(f"blk.{i}.ffn_gate_shexp.weight", ff_exp, embd)
        t(f"blk.{i}.ffn_up_shexp.weight", ff_exp, embd)
        t(f"blk.{i}.ffn_down_shexp.weight", embd, ff_exp)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
