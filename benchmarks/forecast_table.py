"""Print the "Will it fit" forecast for the GLM models of today (the README's table).

Run: ``python benchmarks/forecast_table.py``. Nothing is downloaded: each model's
``config.json`` numbers are written here from its Hugging Face repository
(``zai-org/<name>``: ``config.json``; the model cards give the totals each count is
checked against). Computed by :mod:`glmdesk.engine.forecast` exactly as Open model
computes it before a load, on a GPU: weights in bf16, in bitsandbytes NF4 (transformers
5.x leaves MoE experts in bf16: they are 3D parameters, not ``nn.Linear``) and as a
uniform Q4_K GGUF on llama.cpp (an estimate: 4.5 bits per weight for every tensor);
plus the KV cache at 4K / 32K / 128K tokens (bf16 for transformers, f16 for llama.cpp;
GLM-4.7-Flash's MLA caches its latent); plus the stated overhead (5% of the weights and
512 MiB of CUDA context). ``n/a``: past the model's trained context. The GLM-4.5/4.6
MTP layer is not counted (transformers does not load it).
"""

from __future__ import annotations

from dataclasses import replace

from glmdesk.engine.forecast import GIB, forecast
from glmdesk.engine.forecast_shape import shape_from_config

_GLM4_0414 = {"model_type": "glm4", "attention_bias": True, "vocab_size": 151552, "head_dim": 128}
_GLM45 = {
    "model_type": "glm4_moe",
    "attention_bias": True,
    "vocab_size": 151552,
    "head_dim": 128,
    "num_attention_heads": 96,
    "num_key_value_heads": 8,
    "n_shared_experts": 1,
    "num_nextn_predict_layers": 1,
}

#: name -> (config.json fields, source, the model card's total parameters in billions).
MODELS = {
    "GLM-4-9B-0414": (
        _GLM4_0414
        | {"hidden_size": 4096, "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 2}
        | {"intermediate_size": 13696, "max_position_embeddings": 32768},
        "zai-org/GLM-4-9B-0414 config.json",
        9.4,
    ),
    "GLM-Z1-32B-0414": (
        _GLM4_0414
        | {"hidden_size": 6144, "num_hidden_layers": 61, "num_attention_heads": 48, "num_key_value_heads": 2}
        | {"intermediate_size": 23040, "max_position_embeddings": 32768},
        "zai-org/GLM-Z1-32B-0414 config.json",
        32.6,
    ),
    "GLM-4.5-Air": (
        _GLM45
        | {"hidden_size": 4096, "num_hidden_layers": 46, "intermediate_size": 10944}
        | {"moe_intermediate_size": 1408, "n_routed_experts": 128, "first_k_dense_replace": 1}
        | {"max_position_embeddings": 131072},
        "zai-org/GLM-4.5-Air config.json",
        106,
    ),
    "GLM-4.5": (
        _GLM45
        | {"hidden_size": 5120, "num_hidden_layers": 92, "intermediate_size": 12288, "use_qk_norm": True}
        | {"moe_intermediate_size": 1536, "n_routed_experts": 160, "first_k_dense_replace": 3}
        | {"max_position_embeddings": 131072},
        "zai-org/GLM-4.5 config.json",
        355,
    ),
    "GLM-4.6": (
        _GLM45
        | {"hidden_size": 5120, "num_hidden_layers": 92, "intermediate_size": 12288, "use_qk_norm": True}
        | {"moe_intermediate_size": 1536, "n_routed_experts": 160, "first_k_dense_replace": 3}
        | {"max_position_embeddings": 202752},
        "zai-org/GLM-4.6 config.json",
        355,
    ),
    "GLM-4.7-Flash": (
        {"model_type": "glm4_moe_lite", "vocab_size": 154880, "hidden_size": 2048, "num_hidden_layers": 47}
        | {"num_attention_heads": 20, "num_key_value_heads": 20, "intermediate_size": 10240}
        | {"moe_intermediate_size": 1536, "n_routed_experts": 64, "n_shared_experts": 1}
        | {"first_k_dense_replace": 1, "q_lora_rank": 768, "kv_lora_rank": 512}
        | {"qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256}
        | {"max_position_embeddings": 202752},
        "zai-org/GLM-4.7-Flash config.json",
        30,
    ),
}
CONTEXTS = (4096, 32768, 131072)


#: Bits per weight of a uniform Q4_K GGUF (ggml's ``block_q4_K``: 144 bytes per 256 weights).
Q4_K_BITS = 4.5


def _cells(shape, engine: str, quantization: str, trained: int) -> list[str]:
    """Weights, then the total at each context (``n/a`` past the trained context), in GiB."""
    first = forecast(
        shape, engine=engine, quantization=quantization, precision="bf16", on_gpu=True, context=0
    )
    cells = [f"{first.weights / GIB:.1f}"]
    for context in CONTEXTS:
        if context > trained:
            cells.append("n/a")
            continue
        f = forecast(
            shape, engine=engine, quantization=quantization, precision="bf16", on_gpu=True, context=context
        )
        cells.append(f"{f.total / GIB:.1f}")
    if engine == "llamacpp" and shape.is_moe:  # the GPU's share with the experts in RAM, at 4K
        f = forecast(shape, engine=engine, on_gpu=True, context=CONTEXTS[0], experts_in_ram=True)
        cells.append(f"{f.gpu / GIB:.1f} + {f.ram / GIB:.1f} in RAM")
    else:
        cells.append("")
    return cells


def rows() -> list[list[str]]:
    """The table's rows: model, parameters (counted, and the card's), how it is run,
    the weights and the total at each context, in GiB."""
    out = []
    for name, (config, _source, card) in MODELS.items():
        shape = shape_from_config(config, name)
        trained = shape.context_length
        q4k = replace(
            shape,
            gguf_bytes=int(shape.params * Q4_K_BITS / 8),
            gguf_expert_bytes=int(shape.expert_params * Q4_K_BITS / 8),
        )
        for label, engine, quantization, s in (
            ("bf16, transformers", "transformers", "none", shape),
            ("NF4, transformers", "transformers", "4bit", shape),
            ("Q4_K GGUF, llama.cpp", "llamacpp", "none", q4k),
        ):
            params = f"{shape.params / 1e9:.1f}B ({card}B)"
            out.append([name, params, label, *_cells(s, engine, quantization, trained)])
    return out


def main() -> None:
    head = ["model", "params (card)", "weights as", "weights GiB", "total 4K", "total 32K", "total 128K"]
    head.append("GPU 4K, experts in RAM")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for cells in rows():
        print("| " + " | ".join(cells) + " |")
    print()
    for name, (_c, source, _card) in MODELS.items():
        print(f"- {name}: {source}")


if __name__ == "__main__":
    main()
