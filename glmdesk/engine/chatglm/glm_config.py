"""The converted folder's ``config.json``: THUDM's ChatGLM config mapped onto ``GlmForCausalLM``'s.

:class:`Dims` reads the network sizes (THUDM's defaults filling what a config leaves
out) and lists every tensor the converted model holds; :func:`glm_config` writes the
transformers config (rope scaling, eos list, pad id); :func:`tokenizer_stop_ids` reads
the stop ids from the folder's own tokenizer file.

Sources: THUDM/chatglm2-6b, chatglm3-6b and glm-4-9b-chat ``configuration_chatglm.py``
and ``generation_config.json``; transformers ``models/glm/configuration_glm.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from glmdesk.engine.chatglm.detect import SENTENCEPIECE_FAMILIES, declared_tokenizer, rope_ratio
from glmdesk.engine.families import get_family
from glmdesk.engine.formats.chatglm_formats import GLM4_SPECIAL_IDS, STOP_IDS_BY_FAMILY
from glmdesk.engine.formats.chatglm_tokenizer import SPECIAL_TOKENS

#: THUDM configuration_chatglm.py defaults, for fields a config leaves out.
THUDM_DEFAULTS: dict[str, Any] = {
    "num_layers": 28,
    "padded_vocab_size": 65024,
    "hidden_size": 4096,
    "ffn_hidden_size": 13696,
    "kv_channels": 128,
    "num_attention_heads": 32,
    "seq_length": 2048,
    "layernorm_epsilon": 1e-5,
    "rmsnorm": True,
    "apply_residual_connection_post_layernorm": False,
    "post_layer_norm": True,
    "add_bias_linear": False,
    "add_qkv_bias": False,
    "multi_query_attention": False,
    "multi_query_group_num": 1,
    "original_rope": True,
}


@dataclass(frozen=True)
class Dims:
    """Network sizes read from a THUDM config.

    Attributes:
        vocab: Embedding rows (``padded_vocab_size``).
        hidden: Model width.
        ffn: SwiGLU inner width (``ffn_hidden_size``).
        layers: Number of decoder layers.
        heads: Query heads.
        groups: Key/value heads (``multi_query_group_num``).
        head_dim: Per-head width (``kv_channels``).
        qkv_bias: Whether ``query_key_value`` has a bias.
    """

    vocab: int
    hidden: int
    ffn: int
    layers: int
    heads: int
    groups: int
    head_dim: int
    qkv_bias: bool

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> Dims:
        """Read the sizes, filling THUDM's defaults."""

        def get(key: str) -> Any:
            value = config.get(key)
            return THUDM_DEFAULTS[key] if value is None else value

        heads = int(get("num_attention_heads"))
        return cls(
            vocab=int(get("padded_vocab_size")),
            hidden=int(get("hidden_size")),
            ffn=int(get("ffn_hidden_size")),
            layers=int(get("num_layers")),
            heads=heads,
            groups=int(get("multi_query_group_num")) if get("multi_query_attention") else heads,
            head_dim=int(get("kv_channels")),
            qkv_bias=bool(get("add_qkv_bias") or get("add_bias_linear")),
        )

    def expected_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every tensor of the converted model: name -> shape."""
        q, kv = self.heads * self.head_dim, self.groups * self.head_dim
        shapes: dict[str, tuple[int, ...]] = {
            "model.embed_tokens.weight": (self.vocab, self.hidden),
            "model.norm.weight": (self.hidden,),
            "lm_head.weight": (self.vocab, self.hidden),
        }
        for n in range(self.layers):
            p = f"model.layers.{n}."
            shapes[p + "input_layernorm.weight"] = (self.hidden,)
            shapes[p + "post_attention_layernorm.weight"] = (self.hidden,)
            shapes[p + "self_attn.q_proj.weight"] = (q, self.hidden)
            shapes[p + "self_attn.k_proj.weight"] = (kv, self.hidden)
            shapes[p + "self_attn.v_proj.weight"] = (kv, self.hidden)
            if self.qkv_bias:
                shapes[p + "self_attn.q_proj.bias"] = (q,)
                shapes[p + "self_attn.k_proj.bias"] = (kv,)
                shapes[p + "self_attn.v_proj.bias"] = (kv,)
            shapes[p + "self_attn.o_proj.weight"] = (self.hidden, q)
            shapes[p + "mlp.gate_up_proj.weight"] = (2 * self.ffn, self.hidden)
            shapes[p + "mlp.down_proj.weight"] = (self.hidden, self.ffn)
        return shapes


def glm_config(
    config: dict[str, Any], family: str, dtype: str, stop_ids: Sequence[int] = ()
) -> dict[str, Any]:
    """The ``config.json`` of the converted ``GlmForCausalLM`` folder.

    Args:
        config: The THUDM config.
        family: Detected family (decides the rope scaling and eos list).
        dtype: Weight dtype name (``"float16"``, ``"bfloat16"``, ``"float32"``).
        stop_ids: The folder tokenizer's stop ids (:func:`tokenizer_stop_ids`);
            default: the released family's.

    Returns:
        A JSON-ready dict. ``rope_theta = 10000 * rope_ratio`` (ChatGLM3 long
        context and GLM-4); ChatGLM2-6B-32K divides positions by ``rope_ratio``
        instead, which is linear rope scaling with that factor.
    """
    dims = Dims.from_config(config)
    ratio = rope_ratio(config)
    if family == "chatglm2-32k":
        rope = {"rope_type": "linear", "factor": ratio, "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
    else:
        rope = {"rope_type": "default", "rope_theta": 10000.0 * ratio, "partial_rotary_factor": 0.5}
    eos, pad = _declared_stop_ids(config, family, dims.vocab, tuple(stop_ids))
    return {
        "architectures": ["GlmForCausalLM"],
        "model_type": "glm",
        "vocab_size": dims.vocab,
        "hidden_size": dims.hidden,
        "intermediate_size": dims.ffn,
        "num_hidden_layers": dims.layers,
        "num_attention_heads": dims.heads,
        "num_key_value_heads": dims.groups,
        "head_dim": dims.head_dim,
        "hidden_act": "silu",
        "attention_dropout": 0.0,
        "max_position_embeddings": int(config.get("seq_length") or THUDM_DEFAULTS["seq_length"]),
        "rms_norm_eps": float(config.get("layernorm_epsilon") or THUDM_DEFAULTS["layernorm_epsilon"]),
        "attention_bias": dims.qkv_bias,
        "tie_word_embeddings": False,
        "rope_parameters": rope,
        "pad_token_id": pad,
        "eos_token_id": eos,
        "bos_token_id": None,
        "use_cache": True,
        "dtype": dtype,
    }


def tokenizer_stop_ids(src: Path, family: str) -> tuple[int, ...]:
    """The family's stop ids in the vocabulary of the folder's own tokenizer file.

    The one rule (:func:`glmdesk.engine.families.base.collect_stop_ids`) on the file's vocabulary:
    ChatGLM2/3: sentencepiece's eos, and for ChatGLM3 ``<|user|>`` and
    ``<|observation|>`` (special tokens follow the sentencepiece pieces); GLM-4:
    ``<|endoftext|>``, ``<|user|>``, ``<|observation|>`` after the tiktoken ranks.
    For the released models these are :data:`STOP_IDS_BY_FAMILY`, which is also the
    answer when the file cannot be read.

    Returns:
        The ids, ascending.
    """
    file = src / "tokenizer.model"
    kind = declared_tokenizer(src) if file.is_file() else None
    try:
        if kind == "sentencepiece" and family in SENTENCEPIECE_FAMILIES:
            import sentencepiece as spm

            sp = spm.SentencePieceProcessor(model_file=str(file))
            return tuple(
                sorted(get_family(family).stop_ids((sp.eos_id(),), _after(sp.vocab_size(), SPECIAL_TOKENS)))
            )
        if kind == "tiktoken" and family == "glm4":
            with file.open("rb") as fh:
                n = sum(1 for line in fh if line.strip())
            return tuple(sorted(get_family(family).stop_ids((), _after(n, list(GLM4_SPECIAL_IDS)))))
    except (OSError, RuntimeError):
        pass
    return STOP_IDS_BY_FAMILY[family]


def _after(n: int, specials) -> Callable[[str], int | None]:
    """Lookup of special tokens numbered after a vocabulary's ``n`` ordinary pieces."""
    index = {name: n + i for i, name in enumerate(specials)}
    return index.get


def _declared_stop_ids(config: dict[str, Any], family: str, vocab: int, stops=()) -> tuple[list[int], int]:
    """``(eos ids, pad id)`` for the converted config: the tokenizer's stop ids
    (:func:`tokenizer_stop_ids`, else the family's) and the eos ids the THUDM config
    declares, each kept only when it is inside the vocabulary."""
    declared = config.get("eos_token_id")
    declared = [declared] if isinstance(declared, int) else list(declared or [])
    family_stops = stops or STOP_IDS_BY_FAMILY[family]
    eos = sorted({int(i) for i in (*family_stops, *declared) if 0 <= int(i) < vocab})
    pad = config.get("pad_token_id")
    if not isinstance(pad, int) or not 0 <= pad < vocab:
        pad = STOP_IDS_BY_FAMILY[family][0] if family == "glm4" and vocab > 151329 else 0
    return eos, pad
