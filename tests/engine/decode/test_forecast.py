"""The "Will it fit" forecast against what loading really takes: the tiny GLM-4-0414 and
GLM-4.5 folders, the embedded model, a GLM-4.7-Flash-shaped MLA model and a MoE GGUF,
each loaded for real; the forecast's weights + KV cache within 10% of the footprint
the loader reports plus the KV bytes the answer's cache holds."""

from __future__ import annotations

import json

import pytest
import torch

from glmdesk.core.messages import ChatMessage
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox, SamplingParams
from glmdesk.engine.backends import create_backend
from glmdesk.engine.decode.generate import stream_chat
from glmdesk.engine.files.gguf_header import read_gguf_header
from glmdesk.engine.forecast import Budget, forecast, plan_load
from glmdesk.engine.forecast_shape import shape_from_config, shape_from_folder, shape_from_gguf
from tests.helpers.gguf_models import write_glm45_gguf
from tests.helpers.glm4_0414_models import write_glm4_0414
from tests.helpers.glm45_models import write_glm45

GREEDY = SamplingParams(temperature=0.0, max_new_tokens=12)


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("forecast")
    return {
        "glm4-0414": write_glm4_0414(root / "GLM-4-9B-0414"),
        "glm45": write_glm45(root / "GLM-4.5-Air"),
    }


def _cache_bytes(model, n: int) -> int:
    """Bytes transformers' own ``DynamicCache`` holds after ``n`` tokens of ``model``
    (glmdesk's full strategy allocates in doubling blocks, so its bytes are not per token)."""
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    with torch.no_grad():
        model(torch.arange(n)[None] % 200 + 1, cache=cache, use_cache=True)
    return sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))


def _answers(backend) -> None:
    chunks = list(backend.stream([ChatMessage("user", "Hello world")], ParamsBox(GREEDY), CacheSettings()))
    assert chunks[-1].error is None and chunks[-1].cache.kv_bytes > 0, chunks[-1].error


def _close(forecast_bytes: int, measured: int) -> bool:
    return abs(forecast_bytes - measured) <= 0.10 * measured


@pytest.mark.parametrize("name", ["glm4-0414", "glm45"])
@pytest.mark.parametrize("quantization", ["none", "int8-wo", "int4-wo"])
def test_forecast_matches_a_real_load_of_the_tiny_models(folders, name, quantization):
    folder = folders[name]
    settings = LoadSettings(model=str(folder), engine="transformers", device="cpu", quantization=quantization)
    backend = create_backend(settings)
    backend.load(settings)
    try:
        _answers(backend)
        weights, kv = int(backend.info.footprint_mib * 2**20), _cache_bytes(backend.loaded.model, 37)
    finally:
        backend.close()
    f = forecast(shape_from_folder(folder), engine="transformers", quantization=quantization, context=37)
    assert _close(f.weights, weights), (f.weights, weights)
    assert f.kv == kv  # the formula is the cache's own size
    assert _close(f.weights + f.kv, weights + kv)


def test_forecast_matches_the_embedded_model(embedded, embedded_folder):
    final = list(stream_chat(embedded, [ChatMessage("user", "Hello")], ParamsBox(GREEDY)))[-1]
    n = final.cache.tokens_held
    f = forecast(shape_from_folder(embedded_folder), engine="transformers", precision="fp32", context=n)
    weights, kv = embedded.info.footprint_mib * 2**20, _cache_bytes(embedded.model, n)
    assert _close(f.weights, weights), (f.weights, weights)
    assert f.kv == kv and _close(f.weights + f.kv, weights + kv)
    assert f.kv <= final.cache.kv_bytes  # the answer's buffers hold at least as much


@pytest.mark.parametrize("quantization", ["int8-wo", "int4-wo"])
def test_forecast_matches_the_embedded_model_weight_only(embedded_folder, quantization):
    """SmolLM2 ties its output head to the embedding: weight-only adds an int8 head."""
    settings = LoadSettings(engine="transformers", device="cpu", quantization=quantization)
    backend = create_backend(settings)
    info = backend.load(settings)
    try:
        f = forecast(shape_from_folder(embedded_folder), engine="transformers", quantization=quantization)
        assert _close(f.weights, info.footprint_mib * 2**20), (f.weights, info.footprint_mib * 2**20)
    finally:
        backend.close()


def test_config_counts_equal_the_built_models(folders):
    """The counts from config.json alone (the README's table) equal the parameters
    transformers builds, for GLM-4-0414, GLM-4.5 and a GLM-4.7-Flash-shaped MLA model."""
    from transformers import AutoConfig, AutoModelForCausalLM, Glm4MoeLiteConfig

    lite = Glm4MoeLiteConfig(
        vocab_size=256, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
        num_hidden_layers=3, first_k_dense_replace=1, n_routed_experts=4, num_experts_per_tok=2,
        n_shared_experts=1, num_attention_heads=4, num_key_value_heads=4, q_lora_rank=48,
        kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
        max_position_embeddings=512,
    )  # fmt: skip
    configs = [json.loads((f / "config.json").read_text()) for f in folders.values()] + [lite.to_dict()]
    for config in configs:
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config))
        tensors = {t.data_ptr(): t.numel() for t in model.state_dict().values()}  # tied: once
        built = sum(tensors.values())
        assert shape_from_config(config).params == built, config["model_type"]


def test_mla_kv_bytes_are_what_the_cache_holds():
    """GLM-4.7-Flash's attention (MLA): transformers caches the compressed latent and
    the rotary key, ``layers x (kv_lora_rank + qk_rope_head_dim)`` elements a token, as
    llama.cpp does (in f16)."""
    from transformers import Glm4MoeLiteConfig, Glm4MoeLiteForCausalLM

    torch.manual_seed(0)
    config = Glm4MoeLiteConfig(
        vocab_size=256, hidden_size=64, intermediate_size=96, moe_intermediate_size=32,
        num_hidden_layers=2, first_k_dense_replace=1, n_routed_experts=4, num_experts_per_tok=2,
        n_shared_experts=1, num_attention_heads=4, num_key_value_heads=4, q_lora_rank=48,
        kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
        max_position_embeddings=512,
    )  # fmt: skip
    held = _cache_bytes(Glm4MoeLiteForCausalLM(config).eval(), 10)
    f = forecast(shape_from_config(config.to_dict()), engine="transformers", precision="fp32", context=10)
    assert f.kv == held
    latent = forecast(shape_from_config(config.to_dict()), engine="llamacpp", context=10)
    assert latent.kv == 2 * (32 + 8) * 2 * 10  # llama.cpp: layers x (kv_lora_rank + qk_rope) x f16


def test_moe_gguf_forecast_matches_llamacpp(tmp_path):
    path = write_glm45_gguf(tmp_path / "tiny-moe.gguf")
    settings = LoadSettings(model=str(path), engine="llamacpp")
    backend = create_backend(settings)
    info = backend.load(settings)
    try:
        shape = shape_from_gguf(read_gguf_header(path))
        f = forecast(shape, engine="llamacpp", context=info.context_length)
        assert _close(f.weights, int(info.footprint_mib * 2**20))
        assert f.kv == info.kv_bytes_per_token * info.context_length
        assert shape.is_moe and 0 < f.experts < f.weights
    finally:
        backend.close()


def test_plan_refuses_on_numbers_and_offloads_experts_first(folders):
    settings = LoadSettings(model=str(folders["glm45"]), engine="transformers")
    roomy = plan_load(settings, "transformers", True, Budget(80 << 30, 64 << 30))
    assert not roomy.experts_in_ram and roomy.shortfall(Budget(80 << 30, 64 << 30)) is None
    # A GPU smaller than the whole model: the experts are planned in RAM.
    small = Budget(roomy.gpu - 1, 64 << 30)
    moved = plan_load(settings, "transformers", True, small)
    assert moved.experts_in_ram and moved.ram == moved.experts > 0
    # The GPU keeps the rest, with the overhead of what it computes (5% of its share).
    assert abs(moved.gpu - (roomy.gpu - 1.05 * moved.experts)) <= 2
    tiny = Budget(1 << 20, 64 << 30)
    where, need, have = plan_load(settings, "transformers", True, tiny).shortfall(tiny)
    assert (where, have) == ("gpu", 1 << 20) and need > have
    cpu = plan_load(settings, "transformers", False, Budget(None, 1 << 20))
    assert cpu.shortfall(Budget(None, 1 << 20))[0] == "ram"


def test_llamacpp_gpu_layers_split_the_forecast(tmp_path):
    """llama.cpp's context is what it allocates (n_ctx); GPU layers below the count put
    that share on the card; 0 layers is a CPU load."""
    path = write_glm45_gguf(tmp_path / "tiny-moe.gguf")
    budget = Budget(80 << 30, 64 << 30)

    def plan(**options):
        return plan_load(
            LoadSettings(model=str(path), engine="llamacpp", **options), "llamacpp", True, budget
        )

    whole, half, none = plan(n_ctx=4096), plan(n_ctx=4096, n_gpu_layers=1), plan(n_gpu_layers=0)
    own = json.loads((path.with_name(path.stem + "-hf") / "config.json").read_text())[
        "max_position_embeddings"
    ]
    assert whole.context == 4096 and whole.ram == 0 and none.context == own  # the file's own context
    assert half.gpu < whole.gpu and half.gpu + half.ram == whole.gpu
    assert not none.on_gpu and none.gpu == 0
