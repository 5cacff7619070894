"""Conversion of tiny THUDM-layout checkpoints onto transformers' GlmForCausalLM."""

from __future__ import annotations

import json
import threading

import pytest
import torch
from safetensors import safe_open
from transformers import DynamicCache, GlmForCausalLM

from glmdesk.core.errors import GlmdeskError
from glmdesk.engine.chatglm import convert_checkpoint
from glmdesk.engine.formats.chatglm_tokenizer import ChatGLMTokenizer

IDS = [5, 300, 17, 42, 99, 250, 7, 64, 3, 128, 11, 400]  # plain pieces and byte pieces


def _load(folder):
    model, info = GlmForCausalLM.from_pretrained(
        folder, dtype=torch.float32, attn_implementation="sdpa", output_loading_info=True
    )
    assert info["missing_keys"] == set() or not info["missing_keys"]
    assert not info["unexpected_keys"]
    assert not info["mismatched_keys"]
    assert not info.get("error_msgs")
    return model.eval()


@pytest.mark.parametrize(
    ("family", "fmt", "ratio"),
    [
        ("chatglm3", "safetensors", None),
        ("chatglm3-32k", "bin", 50.0),
        ("chatglm2", "bin", None),
        ("chatglm2-32k", "safetensors", 16.0),
    ],
)
def test_converted_logits_equal_reference(make_checkpoint, reference_forward, tmp_path, family, fmt, ratio):
    src, config, sd = make_checkpoint(family, fmt=fmt, rope_ratio=ratio)
    dst = convert_checkpoint(src, tmp_path / "out")
    model = _load(dst)
    linear = family == "chatglm2-32k"
    ids = IDS + [len(sd["transformer.embedding.word_embeddings.weight"]) - 1]

    ref, _ = reference_forward(sd, config, ids, linear_rope=linear)
    with torch.no_grad():
        out = model(torch.tensor([ids])).logits[0]
    assert (out - ref).abs().max().item() < 1e-5
    # And against a float64 evaluation of the same reference, relative to the logit scale.
    ref64, _ = reference_forward(sd, config, ids, linear_rope=linear, dtype=torch.float64)
    assert (out.double() - ref64).abs().max().item() < 1e-5 * ref64.abs().max().item()

    # Cached one-token decode steps after a prefill of 5 tokens.
    with torch.no_grad():
        cache = DynamicCache(config=model.config)
        model(torch.tensor([ids[:5]]), cache=cache, use_cache=True)
        ref_cache = reference_forward(sd, config, ids[:5], linear_rope=linear)[1]
        for t in range(5, len(ids)):
            step = model(torch.tensor([[ids[t]]]), cache=cache, use_cache=True).logits[0, -1]
            ref_step, ref_cache = reference_forward(sd, config, [ids[t]], ref_cache, linear_rope=linear)
            assert (step - ref_step[0]).abs().max().item() < 1e-5
            # Cached step vs the full forward: two summation orders in fp32.
            assert (step - ref[t]).abs().max().item() < 5e-5


def test_fp16_tensors_are_copied_bit_exact(make_checkpoint, tmp_path):
    src, config, sd = make_checkpoint("chatglm3", fmt="bin", dtype=torch.float16, n_shards=2)
    dst = convert_checkpoint(src, tmp_path / "out")
    files = sorted(dst.glob("*.safetensors"))
    assert len(files) == 2
    index = json.loads((dst / "model.safetensors.index.json").read_text())
    tensors = {}
    for f in files:
        with safe_open(str(f), "pt") as h:
            for k in h.keys():
                assert index["weight_map"][k] == f.name
                tensors[k] = h.get_tensor(k)
    q = config["num_attention_heads"] * config["kv_channels"]
    kv = config["multi_query_group_num"] * config["kv_channels"]
    fused = sd["transformer.encoder.layers.1.self_attention.query_key_value.weight"]
    assert torch.equal(tensors["model.layers.1.self_attn.q_proj.weight"], fused[:q])
    assert torch.equal(tensors["model.layers.1.self_attn.k_proj.weight"], fused[q : q + kv])
    assert torch.equal(tensors["model.layers.1.self_attn.v_proj.weight"], fused[q + kv :])
    assert torch.equal(tensors["lm_head.weight"], sd["transformer.output_layer.weight"])
    assert all(t.dtype == torch.float16 for t in tensors.values())
    cfg = json.loads((dst / "config.json").read_text())
    assert cfg["model_type"] == "glm" and cfg["dtype"] == "float16"
    assert cfg["rms_norm_eps"] == 1e-5 and cfg["head_dim"] == config["kv_channels"]
    assert cfg["rope_parameters"] == {
        "rope_type": "default",
        "rope_theta": 10000.0,
        "partial_rotary_factor": 0.5,
    }
    gen = json.loads((dst / "generation_config.json").read_text())
    # The released model's [2, 64795, 64797], in this folder's own vocabulary.
    tok = ChatGLMTokenizer(src / "tokenizer.model")
    assert gen["eos_token_id"] == [2, tok.special_id("<|user|>"), tok.special_id("<|observation|>")]
    assert (dst / "tokenizer.model").read_bytes() == (src / "tokenizer.model").read_bytes()


def test_rope_config_per_family(make_checkpoint, tmp_path):
    src, *_ = make_checkpoint("chatglm3-32k", rope_ratio=50.0, n_shards=1)
    cfg = json.loads((convert_checkpoint(src, tmp_path / "a") / "config.json").read_text())
    assert cfg["rope_parameters"]["rope_theta"] == 500000.0
    src, *_ = make_checkpoint("chatglm2-32k", rope_ratio=16.0, n_shards=1)
    cfg = json.loads((convert_checkpoint(src, tmp_path / "b") / "config.json").read_text())
    assert cfg["rope_parameters"] == {
        "rope_type": "linear",
        "factor": 16.0,
        "rope_theta": 10000.0,
        "partial_rotary_factor": 0.5,
    }
    assert (tmp_path / "b" / "model.safetensors").is_file()  # one shard in, one out, no index


def test_progress_reaches_total_and_grows(make_checkpoint, tmp_path):
    src, *_ = make_checkpoint("chatglm3")
    calls = []
    convert_checkpoint(src, tmp_path / "out", progress=lambda d, t: calls.append((d, t)))
    assert calls and calls[-1][0] == calls[-1][1]
    assert all(a[0] <= b[0] for a, b in zip(calls, calls[1:], strict=False))


def test_cancel_leaves_nothing(make_checkpoint, tmp_path):
    src, *_ = make_checkpoint("chatglm3")
    cancel = threading.Event()
    out = tmp_path / "conv"
    out.mkdir()
    with pytest.raises(GlmdeskError) as err:
        convert_checkpoint(src, out / "model", progress=lambda d, t: cancel.set(), cancel=cancel)
    assert err.value.kind == "load_cancelled"
    assert list(out.iterdir()) == []


def test_a_killed_conversion_leaves_nothing_behind_the_next_one(make_checkpoint, tmp_path):
    import subprocess
    import sys

    src, *_ = make_checkpoint("chatglm3")
    dst = tmp_path / "conv" / "model"
    # A conversion killed outright (kill -9 at its first progress report) keeps its partial folder.
    script = (
        "import os, signal, sys\n"
        "from glmdesk.engine.chatglm import convert_checkpoint\n"
        "convert_checkpoint(sys.argv[1], sys.argv[2], progress=lambda d, t: os.kill(os.getpid(), signal.SIGKILL))\n"
    )
    killed = subprocess.run([sys.executable, "-c", script, str(src), str(dst)], timeout=300)
    assert killed.returncode == -9
    left = list(dst.parent.glob(".model.partial-*"))
    assert len(left) == 1
    # A partial folder of a process still running is not touched.
    alive = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        busy = dst.parent / f".model.partial-{alive.pid}-00000000"
        busy.mkdir()
        convert_checkpoint(src, dst)
        assert (dst / "config.json").is_file()
        assert not left[0].exists() and busy.is_dir()
    finally:
        alive.communicate(b"", timeout=60)


def test_refuses_non_empty_destination(make_checkpoint, tmp_path):
    src, *_ = make_checkpoint("chatglm3")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("keep me")
    with pytest.raises(GlmdeskError) as err:
        convert_checkpoint(src, tmp_path / "out")
    assert err.value.kind == "invalid_setting"
    assert (tmp_path / "out" / "x").read_text() == "keep me"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"config_extra": {"quantization_bit": 4}}, "int4"),
        ({"config_extra": {"quantization_bit": 8}}, "int8"),
        ({"config_extra": {"pre_seq_len": 128, "prefix_projection": False}}, "P-tuning"),
        ({"sd_extra": {"transformer.prefix_encoder.embedding.weight": torch.zeros(4, 8)}}, "P-tuning"),
        (
            {"sd_extra": {"transformer.encoder.layers.0.mlp.dense_4h_to_h.weight_scale": torch.zeros(4)}},
            "quantiz",
        ),
        ({"config_extra": {"position_encoding_2d": True, "inner_hidden_size": 16384}}, "ChatGLM-6B"),
        ({"config_extra": {"multi_query_attention": False}}, "grouped-query"),
    ],
)
def test_refuses_unsupported_layouts(make_checkpoint, tmp_path, kwargs, words):
    src, *_ = make_checkpoint("chatglm3", n_shards=1, **kwargs)
    with pytest.raises(GlmdeskError) as err:
        convert_checkpoint(src, tmp_path / "out")
    assert err.value.kind == "unsupported_checkpoint"
    assert words in err.value.message and str(src) in err.value.message
    assert err.value.message.endswith(".")
    assert not (tmp_path / "out").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


def test_missing_tensor_is_corrupt(make_checkpoint, tmp_path):
    src, *_ = make_checkpoint("chatglm3", drop=("transformer.encoder.layers.1.mlp.dense_4h_to_h.weight",))
    with pytest.raises(GlmdeskError) as err:
        convert_checkpoint(src, tmp_path / "out")
    assert err.value.kind == "corrupt_weights"
    assert "model.layers.1.mlp.down_proj.weight" in err.value.message
    assert not (tmp_path / "out").exists()


def test_damaged_shard_is_corrupt(make_checkpoint, tmp_path):
    src, *_ = make_checkpoint("chatglm3", fmt="bin", n_shards=2)
    shard = sorted(src.glob("*.bin"))[1]
    shard.write_bytes(shard.read_bytes()[:100])
    with pytest.raises(GlmdeskError) as err:
        convert_checkpoint(src, tmp_path / "out")
    assert err.value.kind == "corrupt_weights" and err.value.params["file"] == shard.name
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("keep", [100, -16])
def test_cut_safetensors_shard_is_corrupt(make_checkpoint, tmp_path, keep):
    """Header cut off or data cut short: read by the one safetensors header parser,
    worded as the converter words a damaged header."""
    src, *_ = make_checkpoint("chatglm3", fmt="safetensors", n_shards=2)
    shard = sorted(src.glob("*.safetensors"))[1]
    shard.write_bytes(shard.read_bytes()[:keep])
    with pytest.raises(GlmdeskError) as err:
        convert_checkpoint(src, tmp_path / "out")
    assert err.value.kind == "corrupt_weights" and err.value.params["file"] == shard.name
    assert "its safetensors header is damaged" in err.value.message
    assert not (tmp_path / "out").exists()


def test_wrong_shape_is_corrupt(make_checkpoint, tmp_path):
    src, *_ = make_checkpoint("chatglm3", config_extra={"ffn_hidden_size": 80})
    with pytest.raises(GlmdeskError) as err:
        convert_checkpoint(src, tmp_path / "out")
    assert err.value.kind == "corrupt_weights" and "does not match config.json" in err.value.message
