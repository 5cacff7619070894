"""A tiny GLM-4.7-Flash folder (``Glm4MoeLiteForCausalLM``, random weights) built in tests.

Two layers as the real model lays them out (the first dense, the second with four small
routed experts and a shared one), multi-head latent attention (a low-rank query, a
compressed key/value latent with a shared rotary key, as DeepSeek-V2's MLA), the GLM
tokenizer of :func:`~tests.helpers.glm4_0414_models.write_glm_tokenizer` with GLM-4.5's
special and tool tokens, and GLM-4.7's chat template: GLM-4.5's format whose generation
prompt opens ``<think>`` itself (``</think>`` with thinking off), and which keeps earlier
thinking when ``clear_thinking`` is false ("preserved thinking"), as the GLM-4.7 model
card describes. Reference data only: no model file is downloaded.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.glm4_0414_models import save_model, write_glm_tokenizer
from tests.helpers.glm45_models import CORPUS, GLM45_TEMPLATE, GLM_SPECIAL, TOOL_TAGS

_GLM45_PROMPT = "{{ '\\n<think></think>' if (enable_thinking is defined and not enable_thinking) else '' }}"
_GLM47_PROMPT = "{{ '</think>' if (enable_thinking is defined and not enable_thinking) else '<think>' }}"
_GLM45_KEEP = "{%- if loop.index0 > ns.last_user and thought -%}"
_GLM47_KEEP = "{%- if (loop.index0 > ns.last_user or (clear_thinking is defined and not clear_thinking)) and thought -%}"

GLM47_TEMPLATE = GLM45_TEMPLATE.replace(_GLM45_PROMPT, _GLM47_PROMPT).replace(_GLM45_KEEP, _GLM47_KEEP)
assert GLM47_TEMPLATE.count("'<think>'") == 1 and "clear_thinking" in GLM47_TEMPLATE


def write_glm47_flash(folder: Path, name: str = "zai-org/GLM-4.7-Flash") -> Path:
    """Write a tiny ``Glm4MoeLiteForCausalLM`` folder (config, weights, tokenizer) into ``folder``."""
    import torch
    from transformers import Glm4MoeLiteConfig, Glm4MoeLiteForCausalLM

    tokenizer, ids, stops = write_glm_tokenizer(folder, CORPUS, GLM47_TEMPLATE, GLM_SPECIAL, TOOL_TAGS)
    torch.manual_seed(0)
    config = Glm4MoeLiteConfig(
        vocab_size=-(-len(tokenizer) // 64) * 64, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
        num_hidden_layers=2, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
        num_attention_heads=4, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32,
        qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, max_position_embeddings=2048,
        pad_token_id=ids["<|endoftext|>"], bos_token_id=None, eos_token_id=stops,
    )  # fmt: skip
    return save_model(Glm4MoeLiteForCausalLM(config).eval(), folder, name)
