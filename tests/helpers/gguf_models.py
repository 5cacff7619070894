"""One GGUF writer for the tiny GLM checkpoints of the newer families (``gguf`` package).

:func:`write_gguf` turns a tiny Hugging Face folder (``tests/helpers/glm4_0414_models.py``,
``glm45_models.py``, ``glm47_flash_models.py``) into the GGUF file llama.cpp's
``convert_hf_to_gguf.py`` writes for it (F32, every tensor as is), reading the folder's
``config.json``, ``model.safetensors`` and tokenizer:

- ``Glm4ForCausalLM`` (GLM-4-0414, GLM-Z1) -> architecture ``glm4``;
- ``Glm4MoeForCausalLM`` (GLM-4.5/4.6/4.7) -> ``glm4moe``;
- ``Glm4MoeLiteForCausalLM`` (GLM-4.7-Flash) -> ``deepseek2`` (MLA written as MQA over the
  latent: one KV head, ``kv_b_proj`` split into ``attn_k_b`` (transposed) and ``attn_v_b``).

Tensor names come from ``gguf``'s own map (``get_tensor_name_map``); routed experts are
stacked into one 3-D tensor per projection, as the converter does. The vocabulary is the
converter's ``_set_vocab_glm``: byte-level BPE (``gpt2``) with pre-tokenizer ``glm4``, the
tokenizer's merges, special tokens as control tokens, bos ``[gMASK]``, eot ``<|user|>``,
eom ``<|observation|>``, and the folder's chat template as ``tokenizer.chat_template``.
Reference data only: the converter is read, not run or copied.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

#: ``architectures[0]`` -> GGUF architecture name.
ARCHITECTURES = {
    "Glm4ForCausalLM": "glm4",
    "Glm4MoeForCausalLM": "glm4moe",
    "Glm4MoeLiteForCausalLM": "deepseek2",
}
_EXPERT = re.compile(r"model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(\w+)\.weight")


def write_gguf(folder: Path, path: Path) -> Path:
    """Write the GGUF of the tiny checkpoint ``folder`` to ``path``; return ``path``.

    Raises:
        KeyError: for a folder whose architecture is not in :data:`ARCHITECTURES`.
    """
    import gguf

    config = json.loads((folder / "config.json").read_text())
    arch = ARCHITECTURES[config["architectures"][0]]
    writer = gguf.GGUFWriter(str(path), arch)
    _hyperparameters(writer, config, arch, gguf)
    _vocabulary(writer, folder, config, gguf)
    names = gguf.get_tensor_name_map(_arch(arch, gguf), config["num_hidden_layers"])
    for name, tensor in _hf_tensors(folder, config, arch):
        mapped = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if mapped is None:
            raise KeyError(f"no GGUF name for {name}")
        writer.add_tensor(mapped, np.ascontiguousarray(tensor, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _arch(name: str, gguf):
    return next(a for a, n in gguf.MODEL_ARCH_NAMES.items() if n == name)


def _hyperparameters(w, c: dict, arch: str, gguf) -> None:
    w.add_name(str(c.get("_name_or_path", "tiny")).rsplit("/", 1)[-1])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_head_count(c["num_attention_heads"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    rope = c.get("rope_parameters") or {}
    w.add_rope_freq_base(float(rope.get("rope_theta", 10000.0)))
    if arch == "deepseek2":
        _mla(w, c)
    else:
        head = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
        w.add_head_count_kv(c["num_key_value_heads"])
        w.add_key_length(head)
        w.add_value_length(head)
        w.add_rope_dimension_count(int(head * rope.get("partial_rotary_factor", 1.0)))
    if arch != "glm4":
        types = c.get("mlp_layer_types")
        dense = c.get("first_k_dense_replace", types.index("sparse") if types else 0)
        w.add_leading_dense_block_count(dense)
        w.add_expert_count(c["n_routed_experts"])
        w.add_expert_used_count(c["num_experts_per_tok"])
        w.add_expert_feed_forward_length(c["moe_intermediate_size"])
        w.add_expert_shared_count(c["n_shared_experts"])
        w.add_expert_weights_scale(float(c["routed_scaling_factor"]))
        w.add_expert_weights_norm(bool(c["norm_topk_prob"]))
        w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)  # both route with sigmoid scores


def _mla(w, c: dict) -> None:
    """DeepSeek-V2's MLA as llama.cpp's ``deepseek2`` reads it: one KV head over the latent
    (key = latent + rotary part, value = latent), the per-head sizes as the ``_mla`` keys."""
    w.add_head_count_kv(1)
    w.add_vocab_size(c["vocab_size"])
    if c.get("q_lora_rank"):
        w.add_q_lora_rank(c["q_lora_rank"])
    w.add_kv_lora_rank(c["kv_lora_rank"])
    w.add_key_length(c["kv_lora_rank"] + c["qk_rope_head_dim"])
    w.add_value_length(c["kv_lora_rank"])
    w.add_key_length_mla(c["qk_nope_head_dim"] + c["qk_rope_head_dim"])
    w.add_value_length_mla(c["v_head_dim"])
    w.add_rope_dimension_count(c["qk_rope_head_dim"])


def _hf_tensors(folder: Path, c: dict, arch: str):
    """``(Hugging Face name, array)`` in file order, experts stacked and MLA's ``kv_b`` split."""
    from safetensors.numpy import load_file

    tensors = load_file(str(folder / "model.safetensors"))
    experts: dict[tuple[int, str], dict[int, np.ndarray]] = {}
    for name, tensor in tensors.items():
        found = _EXPERT.fullmatch(name)
        if found:
            experts.setdefault((int(found[1]), found[3]), {})[int(found[2])] = tensor
        elif arch == "deepseek2" and name.endswith("kv_b_proj.weight"):
            yield from _split_kv_b(name, tensor, c)
        else:  # the router's score bias is named as a bias (``exp_probs_b.bias``)
            yield name.replace("e_score_correction_bias", "e_score_correction.bias"), tensor
    for (layer, proj), by_index in sorted(experts.items()):
        stacked = np.stack([by_index[i] for i in range(len(by_index))])  # (experts, out, in)
        yield f"model.layers.{layer}.mlp.experts.{proj}.weight", stacked


def _split_kv_b(name: str, tensor: np.ndarray, c: dict):
    """``kv_b_proj`` (heads x (nope + v), latent) -> ``k_b`` (heads, latent, nope) and
    ``v_b`` (heads, v, latent): the absorbed form llama.cpp's MLA multiplies by."""
    nope, v = c["qk_nope_head_dim"], c["v_head_dim"]
    per_head = tensor.reshape(c["num_attention_heads"], nope + v, tensor.shape[-1])
    yield name.replace("kv_b_proj", "k_b_proj"), per_head[:, :nope, :].transpose(0, 2, 1)
    yield name.replace("kv_b_proj", "v_b_proj"), per_head[:, nope:, :]


def _vocabulary(w, folder: Path, c: dict, gguf) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    by_id = {i: t for t, i in tok.get_vocab().items()}
    added = tok.added_tokens_decoder
    tokens, types = [], []
    for i in range(c["vocab_size"]):
        if i not in by_id:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
            continue
        tokens.append(by_id[i])
        if i in added:
            types.append(gguf.TokenType.CONTROL if added[i].special else gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
    merges = json.loads((folder / "tokenizer.json").read_text())["model"]["merges"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("glm4")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    ids = tok.convert_tokens_to_ids
    w.add_bos_token_id(ids("[gMASK]"))
    w.add_eos_token_id(ids("<|endoftext|>"))
    w.add_eot_token_id(ids("<|user|>"))
    w.add_eom_token_id(ids("<|observation|>"))
    w.add_unk_token_id(ids("<|endoftext|>"))
    w.add_pad_token_id(ids("<|endoftext|>"))
    w.add_add_bos_token(False)
    w.add_chat_template(tok.chat_template)
