"""What a model is made of, for the "Will it fit" forecast: parameters by kind and the
KV cache's layout, read from ``config.json`` (and the safetensors headers beside it)
or a GGUF header. Plain Python: no torch, no Qt (the Open model dialog asks it on the
GUI thread; a folder's headers and a GGUF header are read in milliseconds).

Parameter counts from a config follow the layers transformers builds for each class
(``Glm4ForCausalLM``, ``Glm4MoeForCausalLM``, ``Glm4MoeLiteForCausalLM``, Llama-like
decoders): embeddings ``vocab x hidden``; attention projections (GQA:
``hidden x heads x head_dim`` for queries and output, ``hidden x kv_heads x head_dim``
for keys and values, biases when ``attention_bias``; MLA: the low-rank query and
key/value projections of DeepSeek-V2, Liu et al. 2024, §2.1); a SwiGLU MLP of three
``hidden x intermediate`` matrices; for MoE layers (from ``first_k_dense_replace`` on)
``n_routed_experts`` and ``n_shared_experts`` such MLPs of ``moe_intermediate_size``
plus the router. Multi-token-prediction layers (``num_nextn_predict_layers``) are not
counted: transformers does not load them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

#: Tensor names of routed experts, in a Hugging Face checkpoint and in a GGUF file.
EXPERT_NAME = re.compile(r"\.experts\.|_exps\.")
_NOT_LINEAR = re.compile(r"embed|norm|\.bias$|e_score_correction|\.gate\.weight$|rotary|lm_head")


@dataclass(frozen=True)
class ModelShape:
    """A model's parameters by kind and its KV layout.

    Attributes:
        name: Short name (folder, file or model card name).
        params: All parameters loaded.
        linear_params: Parameters in linear-layer weights other than the output head
            (what bitsandbytes and the weight-only schemes quantize).
        head_params: Parameters of the output head (``lm_head``); 0 when tied to the
            input embedding.
        expert_params: Parameters of routed experts (included in ``linear_params``).
        layers: Decoder layers.
        kv_heads: Key/value heads (GQA); for MLA the attention heads.
        head_dim: Key and value head size (GQA), in elements.
        tied_head_params: The output head's size when it is tied to the input embedding
            (``vocab x hidden``; counted once in ``params``), else 0.
        kv_lora_rank: MLA's compressed key/value size, in elements (0: GQA).
        qk_rope_head_dim: MLA's rotary key part, in elements.
        context_length: The trained context, in tokens.
        gguf_bytes: Tensor bytes of a GGUF file (its own quantization); 0 for a folder.
        gguf_expert_bytes: Bytes of its ``ffn_*_exps`` tensors.
        kv_layers: Layers that keep keys per token (0: all of ``layers``); GLM-5.3-Flash's
            linear-attention layers keep a fixed-size state instead.
        index_head_dim: Elements each of those layers keeps per token for its
            sparse-attention indexer (GLM-5's DSA key; GLM-5.3-Flash's packed key, gate
            and flag), 0 without an indexer.
        fixed_state_bytes: Bytes of the linear-attention layers' state, whatever the
            context (their fp32 recurrent states and short-convolution windows).
        attention_heads: Query heads (MLA decompresses keys and values for each).
        mla_head_dims: MLA's key and value elements per head once decompressed
            (``qk_nope_head_dim + qk_rope_head_dim + v_head_dim``), 0 for GQA.
        index_heads: The sparse-attention indexer's heads over its pooled keys
            (``index_n_heads / index_kpool``), 0 without an indexer.
    """

    name: str
    params: int
    linear_params: int
    head_params: int
    expert_params: int
    layers: int
    kv_heads: int
    head_dim: int
    tied_head_params: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    context_length: int = 0
    gguf_bytes: int = 0
    gguf_expert_bytes: int = 0
    kv_layers: int = 0
    index_head_dim: int = 0
    fixed_state_bytes: int = 0
    attention_heads: int = 0
    mla_head_dims: int = 0
    index_heads: float = 0

    @property
    def growing_layers(self) -> int:
        """Layers whose cache grows with the context."""
        return self.kv_layers or self.layers

    @property
    def is_moe(self) -> bool:
        """Whether the model has routed experts."""
        return self.expert_params > 0 or self.gguf_expert_bytes > 0

    @property
    def other_params(self) -> int:
        """Parameters kept at the compute precision under any quantization (embeddings,
        norms, biases, routers)."""
        return self.params - self.linear_params - self.head_params


def _text_config(config: dict) -> dict:
    return config.get("text_config") or config


def _mlp(hidden: int, inner: int) -> int:
    return 3 * hidden * inner


def _attention(c: dict, hidden: int, heads: int) -> tuple[int, int]:
    """``(linear params, other params)`` of one attention block."""
    if c.get("kv_lora_rank"):
        rope, nope, v = c["qk_rope_head_dim"], c["qk_nope_head_dim"], c["v_head_dim"]
        q_rank, kv_rank = c.get("q_lora_rank") or 0, c["kv_lora_rank"]
        q = hidden * q_rank + q_rank * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
        linear = q + hidden * (kv_rank + rope) + kv_rank * heads * (nope + v) + heads * v * hidden
        return linear, q_rank + kv_rank
    head_dim = c.get("head_dim") or hidden // heads
    kv_heads = c.get("num_key_value_heads") or heads
    q, kv = heads * head_dim, kv_heads * head_dim
    bias = q + 2 * kv if c.get("attention_bias") else 0
    norms = 2 * head_dim if c.get("use_qk_norm") else 0
    return hidden * q * 2 + hidden * kv * 2, bias + norms


def shape_from_config(config: dict, name: str = "") -> ModelShape:
    """Count a decoder's parameters from its ``config.json`` (see the module's note).

    Args:
        config: The parsed ``config.json`` (a vision model's ``text_config`` is used).
        name: Its name.

    Raises:
        KeyError: when a field every decoder config has is missing.
    """
    c = _text_config(config)
    hidden, layers, heads = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"]
    vocab = c["vocab_size"]
    experts = c.get("n_routed_experts") or c.get("num_experts") or c.get("num_local_experts") or 0
    dense_layers = min(layers, c.get("first_k_dense_replace", 0)) if experts else layers
    moe_inner = c.get("moe_intermediate_size") or c["intermediate_size"]
    attn_linear, attn_other = _attention(c, hidden, heads)
    norms = (4 if c.get("model_type", "").startswith("glm4") and not experts else 2) * hidden
    expert = (layers - dense_layers) * experts * _mlp(hidden, moe_inner)
    shared = (layers - dense_layers) * (c.get("n_shared_experts") or 0) * _mlp(hidden, moe_inner)
    router = (layers - dense_layers) * (experts * hidden + experts)
    linear = layers * attn_linear + dense_layers * _mlp(hidden, c["intermediate_size"]) + expert + shared
    tied = bool(config.get("tie_word_embeddings", c.get("tie_word_embeddings", False)))
    head = 0 if tied else vocab * hidden
    other = vocab * hidden + layers * (attn_other + norms) + router + hidden
    head_dim = c.get("head_dim") or hidden // heads
    mla = c.get("kv_lora_rank") or 0
    kinds = c.get("layer_types") or []
    linear_layers = sum(kind in ("linear_attention", "conv") for kind in kinds)
    return ModelShape(
        name=name,
        params=linear + head + other,
        linear_params=linear,
        head_params=head,
        expert_params=expert,
        layers=layers,
        tied_head_params=vocab * hidden if tied else 0,
        kv_heads=heads if mla else (c.get("num_key_value_heads") or heads),
        head_dim=head_dim,
        kv_lora_rank=mla,
        qk_rope_head_dim=c.get("qk_rope_head_dim", 0) if mla else 0,
        context_length=c.get("max_position_embeddings") or c.get("seq_length") or 0,
        kv_layers=layers - linear_layers,
        index_head_dim=indexer_width(c) if "indexed_attention" in kinds else 0,
        fixed_state_bytes=linear_layers * linear_state_bytes(c),
        attention_heads=heads,
        mla_head_dims=(c["qk_nope_head_dim"] + c.get("qk_rope_head_dim", 0) + c["v_head_dim"]) if mla else 0,
        index_heads=index_heads(c),
    )


def index_heads(config: dict) -> float:
    """A sparse-attention indexer's heads per key it scores: ``index_n_heads``, over keys
    pooled by ``index_kpool`` (GLM-5.3-Flash); 0 without an indexer."""
    return (config.get("index_n_heads") or 0) / (config.get("index_kpool") or 1)


def prefill_pair_bytes(config: dict, element: int) -> int:
    """Bytes each (query, key) pair of a prefill chunk costs in transformers' DSA attention,
    0 for a model without a sparse-attention indexer (its attention kernels bound memory).

    GLM-5's ``GlmMoeDsaIndexer`` (and GLM-5.3-Flash's indexed layers) score every key for
    every query in fp32 over ``index_n_heads`` heads, keeping the scores and their ReLU
    (``2 x 4`` bytes, over keys pooled by ``index_kpool``), and apply the top-k as a mask
    to dense attention, whose scores take ``num_attention_heads x element`` bytes. Measured
    on an H200 in bf16 (``benchmarks/glm5_memory.py``): 333 bytes per pair for GLM-5's
    shapes against 384 from this sum.

    Args:
        config: A decoder's config as a dict (a vision model's ``text_config``).
        element: Bytes per element of the attention's compute precision.
    """
    heads = index_heads(config)
    if not heads:
        return 0
    return math.ceil(heads * 4 * 2) + int(config["num_attention_heads"]) * element


def indexer_width(config: dict) -> int:
    """Elements a DSA layer caches per token for its indexer: the indexer key
    (``index_head_dim``; GLM-5), or for a pooled indexer (``index_kpool``; GLM-5.3-Flash)
    the key, its pooling gate scores (as wide) and a validity flag packed together
    (transformers' ``Glm5NextTextIndexer``)."""
    width = int(config.get("index_head_dim") or 0)
    return 2 * width + 1 if width and config.get("index_kpool") else width


def linear_state_bytes(c: dict) -> int:
    """Bytes one linear-attention (KDA) layer keeps whatever the context: its fp32
    recurrent state, ``heads x head_dim x head_dim``, and the short convolution's window
    over queries, keys and values, ``3 x heads x head_dim x kernel`` in bf16
    (transformers' ``Glm5NextTextLinearAttention``)."""
    heads, dim = c.get("linear_num_heads") or 0, c.get("linear_head_dim") or 0
    kernel = c.get("linear_conv_kernel_dim") or 4
    return heads * dim * dim * 4 + 3 * heads * dim * kernel * 2


def shape_from_folder(folder: Path) -> ModelShape:
    """A Hugging Face folder's shape: the KV layout from ``config.json``, the parameters
    counted exactly from its safetensors headers (else from the config).

    Raises:
        OSError: ``config.json`` cannot be read; ``ValueError`` when it is not JSON;
        ``KeyError`` for a config without a decoder's fields.
    """
    from glmdesk.engine.files.file_checks import read_safetensors_header

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    shape = shape_from_config(config, folder.name)
    counts = {"linear": 0, "head": 0, "expert": 0, "all": 0}
    for file in sorted(folder.glob("*.safetensors")):
        for tensor, entry in read_safetensors_header(file).tensors.items():
            n = 1
            for d in entry["shape"]:
                n *= d
            skipped = _mtp_layer(tensor, shape.layers)
            if skipped:
                continue
            counts["all"] += n
            if tensor.startswith("lm_head"):
                counts["head"] += n
            elif len(entry["shape"]) >= 2 and not _NOT_LINEAR.search(tensor):
                counts["linear"] += n
                counts["expert"] += n if EXPERT_NAME.search(tensor) else 0
    if not counts["all"]:
        return shape
    from dataclasses import replace

    return replace(
        shape,
        params=counts["all"],
        linear_params=counts["linear"],
        head_params=counts["head"],
        expert_params=counts["expert"],
    )


def _mtp_layer(tensor: str, layers: int) -> bool:
    """Whether a tensor belongs to a layer past the decoder's (GLM-4.5's MTP layer)."""
    match = re.match(r"model\.layers\.(\d+)\.", tensor)
    return bool(match) and int(match.group(1)) >= layers


def shape_from_gguf(header, own_bytes: bool = True) -> ModelShape:
    """A GGUF file's shape from its header (:class:`~glmdesk.engine.files.gguf_header.GGUFHeader`):
    its tensor bytes as they are (the file's own quantization; ``own_bytes=False``: its
    parameters only, for transformers' dequantized copy) and its KV layout
    (``{arch}.attention.kv_lora_rank`` present: MLA, as llama.cpp's ``deepseek2``)."""
    layers = int(header.get("{arch}.block_count", 0) or 0)
    heads = int(header.get("{arch}.attention.head_count", 1) or 1)
    kv_heads = header.get("{arch}.attention.head_count_kv", heads)
    kv_heads = int(kv_heads if isinstance(kv_heads, int) else max(kv_heads or [heads]))
    embd = int(header.get("{arch}.embedding_length", 0) or 0)
    head_dim = int(header.get("{arch}.attention.key_length", embd // heads) or 0)
    rank = int(header.get("{arch}.attention.kv_lora_rank", 0) or 0)
    return ModelShape(
        name=Path(header.path).name,
        params=header.tensor_elements,
        linear_params=0,
        head_params=0,
        expert_params=0,
        layers=layers,
        kv_heads=kv_heads,
        head_dim=head_dim,
        kv_lora_rank=rank,
        qk_rope_head_dim=int(header.get("{arch}.rope.dimension_count", 0) or 0) if rank else 0,
        context_length=header.context_length,
        gguf_bytes=(header.tensor_bytes or header.data_bytes) if own_bytes else 0,
        gguf_expert_bytes=header.expert_bytes if own_bytes else 0,
    )
