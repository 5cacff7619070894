"""Tiny checkpoints in THUDM's exact original ChatGLM2/3 layout, built in tmp dirs.

The sentencepiece model is trained here (byte fallback, ``<unk>`` 0, ``<s>`` 1,
``</s>`` 2, bytes from 3, like THUDM's 64789-piece model). Special tokens follow
the sentencepiece vocabulary exactly as in the real model (``[MASK]`` = n_words,
``[gMASK]`` = n_words + 1, ... ``<|observation|>`` = n_words + 8), and the
embedding table is padded past them to a multiple of 64 (65024 for the real one).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
import sentencepiece as spm
import torch
from safetensors.torch import save_file

from glmdesk.engine.chatglm import ChatGLM3Format, ChatGLMTokenizer, GLM4Format
from glmdesk.engine.formats.glm4_tokenizer import load_glm4_tokenizer

CORPUS = [
    "Hello world, this is a tiny corpus for testing the ChatGLM tokenizer.",
    "The quick brown fox jumps over the lazy dog. What is the weather today?",
    "问：你好\n\n答：你好！我是人工智能助手 ChatGLM，很高兴见到你。",
    "[Round 1]\n\n问：今天天气怎么样？\n\n答：今天天气很好。\n\n",
    "[Round 2]\n\n问：请写一首诗。\n\n答：春眠不觉晓，处处闻啼鸟。\n\n",
    "You are a helpful assistant. Answer briefly and politely, please.",
    "Numbers 12345 and symbols #$%&*() <|user|> [gMASK] sop round",
]

TINY = {"hidden": 64, "heads": 4, "groups": 2, "head_dim": 16, "ffn": 96, "layers": 2}

NAME_OR_PATH = {
    "chatglm2": "THUDM/chatglm2-6b",
    "chatglm2-32k": "THUDM/chatglm2-6b-32k",
    "chatglm3": "THUDM/chatglm3-6b",
    "chatglm3-32k": "THUDM/chatglm3-6b-32k",
}


@pytest.fixture(scope="session")
def sp_model_file(tmp_path_factory) -> Path:
    """A trained sentencepiece model (a few hundred pieces) in ChatGLM's id layout."""
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(CORPUS * 40),
        model_writer=out,
        vocab_size=420,
        model_type="unigram",
        byte_fallback=True,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=True,
        hard_vocab_limit=False,
        split_digits=True,
        minloglevel=2,
        num_threads=1,
    )
    path = tmp_path_factory.mktemp("sp") / "tokenizer.model"
    path.write_bytes(out.getvalue())
    return path


def padded_vocab(sp_file: Path) -> int:
    """Embedding rows: n_words + 9 special tokens, rounded up to a multiple of 64."""
    n = spm.SentencePieceProcessor(model_file=str(sp_file)).vocab_size() + 9
    return -(-n // 64) * 64


def thudm_config(family: str, vocab: int, rope_ratio: float | None, dtype: str) -> dict:
    """A config.json as THUDM ships it, at tiny width."""
    cfg = {
        "_name_or_path": NAME_OR_PATH[family],
        "model_type": "chatglm",
        "architectures": ["ChatGLMModel"],
        "auto_map": {
            "AutoConfig": "configuration_chatglm.ChatGLMConfig",
            "AutoModel": "modeling_chatglm.ChatGLMForConditionalGeneration",
            "AutoModelForCausalLM": "modeling_chatglm.ChatGLMForConditionalGeneration",
            "AutoModelForSeq2SeqLM": "modeling_chatglm.ChatGLMForConditionalGeneration",
        },
        "add_bias_linear": False,
        "add_qkv_bias": True,
        "apply_query_key_layer_scaling": True,
        "apply_residual_connection_post_layernorm": False,
        "attention_dropout": 0.0,
        "attention_softmax_in_fp32": True,
        "bias_dropout_fusion": True,
        "ffn_hidden_size": TINY["ffn"],
        "fp32_residual_connection": False,
        "hidden_dropout": 0.0,
        "hidden_size": TINY["hidden"],
        "kv_channels": TINY["head_dim"],
        "layernorm_epsilon": 1e-05,
        "multi_query_attention": True,
        "multi_query_group_num": TINY["groups"],
        "num_attention_heads": TINY["heads"],
        "num_layers": TINY["layers"],
        "original_rope": True,
        "padded_vocab_size": vocab,
        "post_layer_norm": True,
        "rmsnorm": True,
        "seq_length": 8192 if family == "chatglm3" else 32768,
        "use_cache": True,
        "torch_dtype": dtype,
        "transformers_version": "4.30.2",
        "tie_word_embeddings": False,
        "eos_token_id": 2,
        "pad_token_id": 0,
    }
    if rope_ratio is not None:
        cfg["rope_ratio"] = rope_ratio
    return cfg


def thudm_state_dict(vocab: int, dtype: torch.dtype, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random weights under THUDM's names (fused qkv with bias, inv_freq buffer)."""
    g = torch.Generator().manual_seed(seed)
    h, f = TINY["hidden"], TINY["ffn"]
    q, kv = TINY["heads"] * TINY["head_dim"], TINY["groups"] * TINY["head_dim"]

    def rnd(*shape, scale=0.08):
        return (torch.randn(*shape, generator=g) * scale).to(dtype)

    def norm():
        return (1.0 + torch.randn(h, generator=g) * 0.1).to(dtype)

    rot = TINY["head_dim"] // 2
    sd = {
        "transformer.embedding.word_embeddings.weight": rnd(vocab, h, scale=0.5),
        "transformer.rotary_pos_emb.inv_freq": (1.0 / (10000 ** (torch.arange(0, rot, 2).float() / rot))).to(
            dtype
        ),
    }
    for n in range(TINY["layers"]):
        p = f"transformer.encoder.layers.{n}."
        sd[p + "input_layernorm.weight"] = norm()
        sd[p + "self_attention.query_key_value.weight"] = rnd(q + 2 * kv, h, scale=0.3)
        sd[p + "self_attention.query_key_value.bias"] = rnd(q + 2 * kv, scale=0.2)
        sd[p + "self_attention.dense.weight"] = rnd(h, q, scale=0.15)
        sd[p + "post_attention_layernorm.weight"] = norm()
        sd[p + "mlp.dense_h_to_4h.weight"] = rnd(2 * f, h, scale=0.15)
        sd[p + "mlp.dense_4h_to_h.weight"] = rnd(h, f, scale=0.15)
    sd["transformer.encoder.final_layernorm.weight"] = norm()
    sd["transformer.output_layer.weight"] = rnd(vocab, h, scale=0.1)  # logits ~ +-2
    return sd


def write_shards(folder: Path, sd: dict[str, torch.Tensor], fmt: str, n_shards: int) -> None:
    """Write ``sd`` as THUDM does: numbered shards plus an index json."""
    keys = list(sd)
    per = -(-len(keys) // n_shards)
    groups = [keys[i : i + per] for i in range(0, len(keys), per)]
    weight_map = {}
    total = 0
    for i, group in enumerate(groups, start=1):
        if fmt == "bin":
            name = f"pytorch_model-{i:05d}-of-{len(groups):05d}.bin"
            torch.save({k: sd[k].clone() for k in group}, folder / name)
        else:
            name = f"model-{i:05d}-of-{len(groups):05d}.safetensors"
            save_file({k: sd[k].contiguous() for k in group}, str(folder / name), metadata={"format": "pt"})
        for k in group:
            weight_map[k] = name
            total += sd[k].numel() * sd[k].element_size()
    index = "pytorch_model.bin.index.json" if fmt == "bin" else "model.safetensors.index.json"
    (folder / index).write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))


MakeCheckpoint = Callable[..., tuple[Path, dict, dict[str, torch.Tensor]]]


@pytest.fixture
def make_checkpoint(tmp_path, sp_model_file) -> MakeCheckpoint:
    """Factory: ``make_checkpoint(family, fmt="safetensors", rope_ratio=None, ...)``.

    Returns ``(folder, config, state_dict)``; the folder holds config.json, the
    shards with their index, tokenizer.model, tokenizer_config.json and a
    ``tokenization_chatglm.py`` stand-in (text only; nothing runs it).
    """
    counter = iter(range(1000))

    def make(
        family: str = "chatglm3",
        fmt: str = "safetensors",
        rope_ratio: float | None = None,
        dtype: torch.dtype = torch.float32,
        n_shards: int = 3,
        config_extra: dict | None = None,
        sd_extra: dict[str, torch.Tensor] | None = None,
        drop: tuple[str, ...] = (),
        seed: int = 0,
    ):
        folder = tmp_path / f"{family}-{fmt}-{next(counter)}"
        folder.mkdir()
        vocab = padded_vocab(sp_model_file)
        dtype_name = str(dtype).removeprefix("torch.")
        config = thudm_config(family, vocab, rope_ratio, dtype_name)
        config.update(config_extra or {})
        (folder / "config.json").write_text(json.dumps(config, indent=2))
        sd = thudm_state_dict(vocab, dtype, seed)
        sd.update(sd_extra or {})
        for k in drop:
            sd.pop(k)
        write_shards(folder, sd, fmt, n_shards)
        (folder / "tokenizer.model").write_bytes(sp_model_file.read_bytes())
        roles = '"<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"' if "chatglm3" in family else ""
        (folder / "tokenization_chatglm.py").write_text(
            f'special_tokens = ["[MASK]", "[gMASK]", "[sMASK]", "sop", "eop", {roles}]\n'
        )
        (folder / "tokenizer_config.json").write_text(
            json.dumps(
                {
                    "tokenizer_class": "ChatGLMTokenizer",
                    "auto_map": {"AutoTokenizer": ["tokenization_chatglm.ChatGLMTokenizer", None]},
                }
            )
        )
        return folder, config, sd

    return make


@pytest.fixture(scope="session")
def reference_forward():
    """The independent reference forward of ``tests/helpers/chatglm_reference.py``."""
    from tests.helpers.chatglm_reference import reference_forward

    return reference_forward


@pytest.fixture(scope="session")
def glm4_tokenizer_folder(tmp_path_factory) -> Path:
    """A folder with a tiny GLM-4 tiktoken ``tokenizer.model`` (bytes + trained merges;
    see ``tests/helpers/tool_models.py``)."""
    from tests.helpers.tool_models import write_glm4_tokenizer

    return write_glm4_tokenizer(tmp_path_factory.mktemp("glm4tok"))


def tiny_tiktoken_ranks() -> list[bytes]:
    """A tiny tiktoken vocabulary: the 256 single bytes, then a few merges."""
    return [bytes([b]) for b in range(256)] + [b"he", b"ll", b"hell", b"hello", b"\xe4\xbd", b"\xe4\xbd\xa0"]


@pytest.fixture
def make_glm4_checkpoint(tmp_path) -> Callable[..., tuple[Path, dict]]:
    """Factory: a GLM-4-9B-chat folder in THUDM's layout with a tiny tiktoken vocabulary.

    ``tokenizer.model`` is a tiktoken rank file (``base64 rank`` lines); the ten
    special tokens follow the ranks, as in THUDM's ``ChatGLM4Tokenizer``; the
    embedding table is padded to a multiple of 64 (a small vocabulary, far below
    GLM-4's 151552). Returns ``(folder, config)``.
    """
    import base64

    def make(n_shards: int = 2, tokenizer_class: str | None = "ChatGLM4Tokenizer"):
        folder = tmp_path / "glm-4-9b-chat-tiny"
        folder.mkdir()
        ranks = tiny_tiktoken_ranks()
        (folder / "tokenizer.model").write_text(
            "".join(f"{base64.b64encode(r).decode()} {i}\n" for i, r in enumerate(ranks))
        )
        n_special = 10
        vocab = -(-(len(ranks) + n_special) // 64) * 64
        config = thudm_config("chatglm3", vocab, 500.0, "float32")
        config["_name_or_path"] = "THUDM/glm-4-9b-chat"
        config["eos_token_id"] = [len(ranks), len(ranks) + 7, len(ranks) + 9]
        config["pad_token_id"] = len(ranks)
        (folder / "config.json").write_text(json.dumps(config, indent=2))
        write_shards(folder, thudm_state_dict(vocab, torch.float32), "safetensors", n_shards)
        if tokenizer_class:
            (folder / "tokenizer_config.json").write_text(
                json.dumps(
                    {
                        "tokenizer_class": tokenizer_class,
                        "auto_map": {"AutoTokenizer": [f"tokenization_chatglm.{tokenizer_class}", None]},
                    }
                )
            )
        (folder / "tokenization_chatglm.py").write_text("import tiktoken  # stand-in: nothing runs it\n")
        return folder, config

    return make


@pytest.fixture(scope="module")
def sp(sp_model_file):
    """The fixture's sentencepiece model, loaded."""
    return spm.SentencePieceProcessor(model_file=str(sp_model_file))


@pytest.fixture(scope="module")
def g3(sp_model_file):
    """ChatGLM3's prompt format over the fixture's tokenizer."""
    return ChatGLM3Format(ChatGLMTokenizer(sp_model_file))


@pytest.fixture(scope="module")
def glm4_tok(glm4_tokenizer_folder):
    """The tiny GLM-4 tokenizer (tiktoken ranks + GLM-4's special tokens)."""
    return load_glm4_tokenizer(glm4_tokenizer_folder)


@pytest.fixture(scope="module")
def g4(glm4_tok):
    """GLM-4's prompt format over the tiny tokenizer."""
    return GLM4Format(glm4_tok.encode, glm4_tok.special_ids)


@pytest.fixture
def chatglm3_loaded(make_checkpoint, tmp_path):
    """A tiny ChatGLM3 checkpoint converted and loaded as a
    :class:`~glmdesk.engine.backends.transformers.loader.LoadedModel` (fp32, CPU), for the real decode loop."""
    from transformers import GlmForCausalLM

    from glmdesk.engine.backends.transformers.loaded_model import LoadedModel
    from glmdesk.engine.chatglm import prepare_checkpoint
    from glmdesk.engine.info import ModelInfo

    src, *_ = make_checkpoint("chatglm3", n_shards=1)
    p = prepare_checkpoint(src, tmp_path / "cache")
    model = GlmForCausalLM.from_pretrained(p.hf_folder, dtype=torch.float32).eval()
    info = ModelInfo("tiny", "chatglm3", "folder", "tiny", "cpu", "fp32", "none", 0.0, 2048, 0, "chatglm3")
    return LoadedModel(model, p.tokenizer, p.prompt_format, info)
