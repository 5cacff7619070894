"""The shipped catalog reads, its counted shapes agree with the model cards, and its fit
marks on four machines follow the forecast's own figures."""

from __future__ import annotations

import pytest

from glmdesk.engine.catalog.catalog import load_catalog, parse_catalog
from glmdesk.engine.catalog.fit import best_first_key, fit, machine_named, variant_shape
from glmdesk.engine.forecast import _some_layers, forecast, gib

MACHINES = {
    "8+32": machine_named(8, 32),
    "16+64": machine_named(16, 64),
    "24+64": machine_named(24, 64),
    "cpu16": machine_named(None, 16),
}


def test_the_catalog_covers_the_glm_generations_and_says_its_date():
    catalog = load_catalog()
    names = [m.name for m in catalog.models]
    for name in (
        "ChatGLM2-6B",
        "ChatGLM3-6B",
        "GLM-4-9B-Chat",
        "GLM-4.5-Air",
        "GLM-4.7-Flash",
        "GLM-5.3-Flash",
    ):
        assert name in names
    assert any(m.vision for m in catalog.models) and any(m.ocr for m in catalog.models)
    assert catalog.date[:4].isdigit() and catalog.written
    assert all(m.variants for m in catalog.models)
    assert any(v.format == "gguf" for _, v in catalog.variants())
    flash = catalog.find("unsloth/GLM-4.7-Flash-GGUF", "q4_k_m")
    assert flash is not None and flash[1].files == ("GLM-4.7-Flash-Q4_K_M.gguf",)


def test_shapes_read_from_config_json_count_what_the_model_card_says():
    for model in load_catalog().models:
        if not model.shape_source.startswith("config.json") or "not counted" in model.shape_source:
            continue  # estimated, or a vision model whose card counts its encoder
        counted = model.shape.params / 1e9
        assert abs(counted - model.params_b) / model.params_b < 0.05, (model.name, counted)


def test_estimated_sizes_and_shapes_say_so():
    catalog = load_catalog()
    five_three = next(m for m in catalog.models if m.name == "GLM-5.3-Flash")
    assert five_three.estimated
    _, variant = catalog.find("unsloth/GLM-4-9B-0414-GGUF", "Q4_K_M")
    assert variant.size_source == "estimated"
    model = next(m for m in catalog.models if m.name == "GLM-4-9B-0414")
    assert variant.size_bytes == int(model.shape.params * 4.85 / 8)


def test_a_size_from_the_hub_is_kept_as_it_is():
    entry = {
        "name": "X",
        "family": "glm4-0414",
        "licence": "MIT",
        "context": 4096,
        "params_b": 0.1,
        "shape_source": "config.json",
        "config": {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100}
        | {"intermediate_size": 128},
        "repos": [
            {
                "repo": "o/x",
                "format": "gguf",
                "quants": [{"quant": "Q8_0", "size_bytes": 1234, "files": ["x.gguf"]}],
            }
        ],
    }
    catalog = parse_catalog({"format": 1, "date": "2026-12-01", "models": [entry]})
    (variant,) = catalog.models[0].variants
    assert (variant.size_bytes, variant.size_source, variant.files_source) == (1234, "hub", "hub")
    with pytest.raises(ValueError, match="format 2"):
        parse_catalog({"format": 2, "date": "", "models": []})


#: (repository, quantization) -> the mark and the way it runs on each machine.
TABLE = {
    ("unsloth/GLM-4-9B-0414-GGUF", "Q4_K_M"): {
        "8+32": ("fits", "GPU"),
        "16+64": ("fits", "GPU"),
        "24+64": ("fits", "GPU"),
        "cpu16": ("fits", "CPU"),
    },
    ("unsloth/GLM-4.7-Flash-GGUF", "Q4_K_M"): {
        "8+32": ("slow", "GPU + experts in RAM"),
        "16+64": ("slow", "GPU + experts in RAM"),
        "24+64": ("fits", "GPU"),
        "cpu16": ("too_big", ""),
    },
    ("unsloth/GLM-4.5-Air-GGUF", "Q4_K_M"): {
        "8+32": ("too_big", ""),
        "16+64": ("slow", "GPU + experts in RAM"),
        "24+64": ("slow", "GPU + experts in RAM"),
        "cpu16": ("too_big", ""),
    },
    ("unsloth/GLM-4.6-GGUF", "Q4_K_M"): {m: ("too_big", "") for m in MACHINES},
    ("zai-org/GLM-4-32B-0414", "bf16"): {
        "8+32": ("too_big", ""),
        "16+64": ("too_big", ""),
        "24+64": ("fits", "GPU, NF4"),
        "cpu16": ("too_big", ""),
    },
    ("THUDM/chatglm3-6b", "fp16"): {
        "8+32": ("fits", "GPU, NF4"),
        "16+64": ("fits", "GPU"),
        "24+64": ("fits", "GPU"),
        "cpu16": ("fits", "CPU"),
    },
    ("unsloth/GLM-4-32B-0414-GGUF", "Q4_K_M"): {
        "8+32": ("slow", "GPU + CPU layers"),
        "16+64": ("slow", "GPU + CPU layers"),
        "24+64": ("fits", "GPU"),
        "cpu16": ("too_big", ""),
    },
}


@pytest.mark.parametrize("key", list(TABLE), ids=lambda k: f"{k[0]}:{k[1]}")
def test_the_fit_table_on_four_machines(key):
    model, variant = load_catalog().find(*key)
    got = {name: (r.mark, r.how) for name, r in ((n, fit(model, variant, m)) for n, m in MACHINES.items())}
    assert got == TABLE[key]


def _attempt(model, variant, how: str, machine):
    """The forecast of one way of running, computed here from the forecast itself
    (``None``: not even one layer fits the GPU)."""
    shape = variant_shape(model, variant)
    context = min(32768, model.context)
    engine = "llamacpp" if variant.format == "gguf" else "transformers"
    extra = {} if engine == "llamacpp" else {"precision": "bf16"}
    if how == "GPU":
        return forecast(shape, engine=engine, on_gpu=True, context=context, **extra)
    if how == "GPU, NF4":
        return forecast(shape, engine=engine, on_gpu=True, context=context, quantization="4bit", **extra)
    if how == "GPU + experts in RAM":
        return forecast(shape, engine=engine, on_gpu=True, context=context, experts_in_ram=True, **extra)
    if how == "GPU + CPU layers":  # the most layers whose share fits, searched from the top
        whole = forecast(shape, engine=engine, on_gpu=True, context=context, experts_in_ram=shape.is_moe)
        for n in range(shape.layers - 1, 0, -1):
            split = _some_layers(whole, n / shape.layers)
            if split.gpu <= machine.gpu_free:
                return split
        return None
    return forecast(shape, engine=engine, on_gpu=False, context=context, **extra)


@pytest.mark.parametrize("machine", list(MACHINES))
def test_every_mark_follows_the_forecasts_own_figures(machine):
    box = MACHINES[machine]
    budget = box.budget
    for model, variant in load_catalog().variants():
        result = fit(model, variant, box)
        ways = ["CPU"]
        if box.gpu_free is not None:
            ways = ["GPU"] + (["GPU, NF4"] if variant.format != "gguf" else [])
            ways += ["GPU + experts in RAM"] if model.shape.is_moe else []
            ways += ["GPU + CPU layers"] if variant.format == "gguf" else []
            ways += ["CPU"]
        figures = {how: _attempt(model, variant, how, box) for how in ways}
        fitting = [how for how in ways if figures[how] is not None and figures[how].shortfall(budget) is None]
        label = f"{variant.repo}:{variant.quant} on {machine}"
        if not fitting:
            assert result.mark == "too_big", label
            continue
        assert result.how == fitting[0], label  # the fastest way that fits
        assert result.forecast == figures[fitting[0]], label
        on_gpu_fully = fitting[0] in ("GPU", "GPU, NF4") or box.gpu_free is None
        assert result.mark == ("fits" if on_gpu_fully else "slow"), label
        assert gib(figures[ways[0]].weights) in result.why, label


def test_the_why_line_gives_the_figures_and_the_way_out():
    catalog = load_catalog()
    model, variant = catalog.find("unsloth/GLM-4.7-Flash-GGUF", "Q8_0")
    result = fit(model, variant, MACHINES["16+64"])
    whole = forecast(variant_shape(model, variant), engine="llamacpp", on_gpu=True, context=32768)
    assert result.why.startswith(f"weights {gib(whole.weights)} + KV at 32K {gib(whole.kv)} > 16.0 GiB GPU")
    assert "fits with experts in RAM" in result.why
    assert result.speed == "medium"


def test_a_download_larger_than_the_free_disk_is_too_big():
    model, variant = load_catalog().find("unsloth/GLM-4-9B-0414-GGUF", "Q4_K_M")
    result = fit(model, variant, machine_named(24, 64, disk_gb=2))
    assert result.mark == "too_big" and "free on disk" in result.why


def test_best_that_fits_puts_the_largest_model_that_fits_first():
    catalog = load_catalog()
    box = MACHINES["24+64"]
    ranked = sorted(catalog.variants(), key=lambda mv: best_first_key(*mv, fit(*mv, box)))
    first_model, first_variant = ranked[0]
    assert fit(first_model, first_variant, box).mark == "fits"
    fitting = [(m, v) for m, v in catalog.variants() if fit(m, v, box).mark == "fits"]
    assert first_model.params_b == max(m.params_b for m, _ in fitting)
    assert fit(*ranked[-1], box).mark == "too_big"
