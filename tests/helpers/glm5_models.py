"""Tiny GLM-5 and GLM-5.3-Flash folders (random weights) built in tests.

GLM-5 (``GlmMoeDsaForCausalLM``, ``model_type`` ``glm_moe_dsa``): multi-head latent
attention as GLM-4.7-Flash's, with DeepSeek-style sparse attention (an indexer scores
every held key with its own per-token *indexer key* and each query attends to the
``index_topk`` best), a dense first layer and a small MoE. GLM-5.3-Flash
(``Glm5NextForConditionalGeneration``, ``glm5_next``): the hybrid of linear-attention
(KDA) layers, which keep a fixed-size recurrent state, and indexed MLA layers (every
fourth), whose indexer scores pools of ``index_kpool`` keys; its vision tower is tiny
and unused by text chat. Both with the GLM tokenizer of
:func:`~tests.helpers.glm4_0414_models.write_glm_tokenizer` and GLM-4.7's chat
template (:data:`~tests.helpers.glm47_flash_models.GLM47_TEMPLATE`): the shapes of
transformers 5.24's configuration classes, scaled down. GLM-5's indexer has 8 heads:
with fewer, a random model scores many keys exactly 0 after the ReLU, and the top-k
among equal scores depends on slot order, which a sink + window ring changes. No model
file is downloaded.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers.glm4_0414_models import save_model, write_glm_tokenizer
from tests.helpers.glm45_models import CORPUS, GLM_SPECIAL, TOOL_TAGS
from tests.helpers.glm47_flash_models import GLM47_TEMPLATE

#: GLM-5.2's effort stanza as public projects quote its template (effort ``high`` when asked,
#: else ``max``), then a stand-in line that writes the level where a test can see it: the
#: published template's own rendering of the level could not be read here (no network).
GLM52_EFFORT = (
    "{%- set effective_reasoning_effort = 'high' if reasoning_effort is defined and "
    "reasoning_effort == 'high' else 'max' -%}"
)
GLM52_TEMPLATE = GLM47_TEMPLATE.replace(
    "[gMASK]<sop>", GLM52_EFFORT + "[gMASK]<sop>{{ '<|system|>effort=' + effective_reasoning_effort }}", 1
)
assert GLM52_TEMPLATE.count("effective_reasoning_effort") == 2

#: GLM-5.3's differences from GLM-4.7's template, as its model card describes them: effort
#: ``low`` / ``high`` / ``max`` (``max`` unless told), written where a test can see it as
#: GLM-5.2's stand-in line is; earlier turns' thinking kept unless ``clear_thinking`` is
#: true; always thinking (the generation prompt opens ``<think>`` whatever
#: ``enable_thinking`` says). A stand-in: the published file could not be read here.
GLM53_EFFORT = (
    "{%- set effective_reasoning_effort = reasoning_effort if reasoning_effort is defined and "
    "reasoning_effort in ['low', 'high'] else 'max' -%}"
)
GLM53_TEMPLATE = (
    GLM47_TEMPLATE.replace(
        "[gMASK]<sop>", GLM53_EFFORT + "[gMASK]<sop>{{ '<|system|>effort=' + effective_reasoning_effort }}", 1
    )
    .replace(
        "(clear_thinking is defined and not clear_thinking)",
        "(clear_thinking is not defined or not clear_thinking)",
    )
    .replace("{{ '/nothink' if (enable_thinking is defined and not enable_thinking) else '' }}", "")
    .replace(
        "{{ '</think>' if (enable_thinking is defined and not enable_thinking) else '<think>' }}", "<think>"
    )
)
assert "clear_thinking is not defined" in GLM53_TEMPLATE and "enable_thinking" not in GLM53_TEMPLATE


def _tokenizer(folder: Path, template: str):
    tokenizer, ids, stops = write_glm_tokenizer(folder, CORPUS, template, GLM_SPECIAL, TOOL_TAGS)
    return -(-len(tokenizer) // 64) * 64, ids, stops


def write_glm5(
    folder: Path,
    name: str = "zai-org/GLM-5",
    template: str = GLM47_TEMPLATE,
    index_topk: int = 4,
    index_head_dim: int = 16,
) -> Path:
    """Write a tiny ``GlmMoeDsaForCausalLM`` folder into ``folder`` (2 layers, indexer top-4).

    ``index_head_dim``: the indexer's key width; llama.cpp's indexer rotates its keys with a
    Hadamard matrix at least 64 wide, so a folder meant for a GGUF needs a multiple of 64."""
    import torch
    from transformers import GlmMoeDsaConfig, GlmMoeDsaForCausalLM

    vocab, ids, stops = _tokenizer(folder, template)
    torch.manual_seed(0)
    config = GlmMoeDsaConfig(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
        num_hidden_layers=2, first_k_dense_replace=1, n_routed_experts=4, num_experts_per_tok=2,
        n_shared_experts=1, num_attention_heads=4, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32,
        qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16, head_dim=8, index_topk=index_topk,
        index_head_dim=index_head_dim, index_n_heads=8, max_position_embeddings=2048,
        pad_token_id=ids["<|endoftext|>"], bos_token_id=None, eos_token_id=stops,
    )  # fmt: skip
    return save_model(GlmMoeDsaForCausalLM(config).eval(), folder, name)


def glm5_flash_config(
    vocab: int,
    ids: dict,
    stops: list[int],
    layers: int = 4,
    index_head_dim: int = 16,
    hc_mult: int = 2,
    index_topk: int = 8,
):
    """A tiny ``Glm5NextConfig``: ``layers`` decoder layers, every fourth indexed MLA
    (the rest KDA linear attention), indexer top-``index_topk`` pools of 2 keys, indexer keys
    ``index_head_dim`` wide (see :func:`write_glm5`), ``hc_mult`` hyper-connection streams
    (the published model has 4, the only count llama.cpp runs)."""
    from transformers import Glm5NextConfig

    text = dict(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
        num_hidden_layers=layers, n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
        num_attention_heads=4, num_key_value_heads=4, q_lora_rank=32, kv_lora_rank=32, qk_nope_head_dim=16,
        qk_rope_head_dim=0, v_head_dim=16, index_topk=index_topk, index_kpool=2, index_head_dim=index_head_dim, index_n_heads=2,
        linear_head_dim=16, linear_num_heads=4, hc_mult=hc_mult, max_position_embeddings=4096,
        pad_token_id=ids["<|endoftext|>"], bos_token_id=None, eos_token_id=stops,
    )  # fmt: skip
    vision = dict(
        depth=1, hidden_size=32, num_heads=2, out_hidden_size=64, intermediate_size=64,
        projection_intermediate_size=64, patch_size=14, spatial_merge_size=2, temporal_patch_size=2,
    )  # fmt: skip
    special = {
        "image_token_id": vocab - 1, "video_token_id": vocab - 2, "image_start_token_id": vocab - 3,
        "image_end_token_id": vocab - 4, "video_start_token_id": vocab - 5, "video_end_token_id": vocab - 6,
    }  # fmt: skip
    return Glm5NextConfig(text_config=text, vision_config=vision, **special)


def write_glm5_flash(
    folder: Path,
    name: str = "zai-org/GLM-5.3-Flash",
    template: str = GLM47_TEMPLATE,
    index_head_dim: int = 16,
    hc_mult: int = 2,
    index_topk: int = 8,
) -> Path:
    """Write a tiny ``Glm5NextForConditionalGeneration`` folder into ``folder`` (shapes as
    :func:`glm5_flash_config`)."""
    import torch
    from transformers import Glm5NextForConditionalGeneration

    vocab, ids, stops = _tokenizer(folder, template)
    torch.manual_seed(0)
    model = Glm5NextForConditionalGeneration(
        glm5_flash_config(
            vocab, ids, stops, index_head_dim=index_head_dim, hc_mult=hc_mult, index_topk=index_topk
        )
    ).eval()
    return save_model(model, folder, name)
