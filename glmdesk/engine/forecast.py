"""The "Will it fit" forecast: the memory a load will take, before loading, against
the GPU's free memory and the RAM available. Plain Python (no torch, no Qt).

Weights: each kind of parameter (:class:`~glmdesk.engine.forecast_shape.ModelShape`)
at the bytes the chosen precision and quantization give it:

- fp32 4 bytes, bf16/fp16 2 (``auto``: bf16 on a GPU, fp32 on the CPU, as
  :func:`glmdesk.engine.backends.transformers.placement.choose_device_and_dtype` chooses);
- bitsandbytes LLM.int8 (Dettmers et al. 2022): linear weights 1 byte plus a float32
  scale per output row (taken as 1 byte); NF4 with double quantization (QLoRA,
  Dettmers et al. 2023, §3): 4 bits + 0.127 bits of block constants = 0.516 bytes;
  both leave embeddings, norms and the output head at the compute precision;
- glmdesk's weight-only schemes (:mod:`glmdesk.engine.backends.transformers.weight_only`): int8 1 byte,
  int4 0.5 byte + a bf16 scale and zero per group of 32 = 0.625 bytes; the output
  head in int8 under both, a tied head as an int8 copy beside the float embedding;
- routed experts stay at the compute precision under every transformers
  quantization: transformers 5.x holds a MoE layer's experts as 3D parameters
  (``Glm4MoeExperts.gate_up_proj``), and both bitsandbytes'
  (``replace_with_bnb_linear``: ``type(module) is nn.Linear``) and glmdesk's
  weight-only replacement quantize ``nn.Linear`` modules only;
- a GGUF file: its tensors' bytes as the header gives them (llama.cpp runs them as
  they are).

KV cache for ``context`` tokens, per token:

- GQA: ``2 x layers x kv_heads x head_dim x bytes`` (DESIGN.md; transformers'
  ``DynamicCache``, llama.cpp's f16 cache);
- MLA (GLM-4.7-Flash: ``Glm4MoeLiteForCausalLM``, its GGUF's ``deepseek2``): the
  compressed latent and the rotary key, ``layers x (kv_lora_rank + qk_rope_head_dim) x
  bytes`` (DeepSeek-V2, Liu et al. 2024, §2.1.2); both transformers 5.24 and llama.cpp
  cache that latent (measured in ``tests/engine/decode/test_forecast.py``).

Overhead (stated, not measured per model): 5% of the weights on the device that
computes (allocator slack, activations, llama.cpp's compute buffer; with the experts in
RAM, of the GPU's share) plus, on a GPU, 512 MiB for the CUDA context and cuBLAS
workspace.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from glmdesk.engine.forecast_shape import ModelShape

MIB = 1 << 20
GIB = 1 << 30
#: The CUDA context and cuBLAS workspace, in bytes (on the GPU only).
GPU_CONTEXT_BYTES = 512 * MIB
#: Allocator slack, activations and compute buffers, as a fraction of the weights.
OVERHEAD_FRACTION = 0.05
#: The most one prefill chunk's sparse-attention scores take, in bytes: the cache picks
#: smaller prefill chunks to stay under it (``engine/cache/base.py``; a 1024-token chunk
#: over a 128K context took 44 GiB with GLM-5's shapes on an H200).
PREFILL_SCORE_BYTES = 4 * GIB
#: The prefill chunk the forecast assumes, in tokens (``CacheSettings.prefill_chunk``).
PREFILL_CHUNK = 2048

_PRECISION_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
#: Bytes per quantized linear weight, per quantization (see the module's note).
QUANT_BYTES = {"8bit": 1.0, "4bit": 0.516, "int8-wo": 1.0, "int4-wo": 0.625}


def precision_bytes(precision: str, on_gpu: bool) -> int:
    """Bytes per element of the compute precision (``auto`` as placement chooses it)."""
    if precision == "auto" or (precision == "fp16" and not on_gpu):
        return 2 if on_gpu else 4
    return _PRECISION_BYTES[precision]


def weights_bytes(shape: ModelShape, quantization: str, precision: str, on_gpu: bool) -> tuple[int, int]:
    """``(all weights, routed experts' share)``, in bytes, for a precision and quantization.

    A GGUF shape gives its own bytes whatever is asked (llama.cpp runs the file's
    types; the transformers engine's dequantized copy is sized by its parameters).
    """
    if shape.gguf_bytes:
        return shape.gguf_bytes, shape.gguf_expert_bytes
    element = precision_bytes(precision, on_gpu)
    linear = QUANT_BYTES.get(quantization, element)
    head = 1.0 if quantization in ("int8-wo", "int4-wo") else element
    quantized = shape.linear_params - shape.expert_params  # experts are not nn.Linear
    experts = shape.expert_params * element
    total = quantized * linear + experts + shape.head_params * head + shape.other_params * element
    if quantization in ("int8-wo", "int4-wo"):
        total += shape.tied_head_params  # the int8 copy of a tied head
    return int(total), int(experts)


def kv_bytes_per_token(shape: ModelShape, engine: str, element: float) -> float:
    """KV bytes one token adds to a full cache (see the module's note), in bytes: only
    the layers that grow count (GLM-5.3-Flash's linear-attention layers do not), with a
    sparse-attention indexer key per such layer where the model has one (GLM-5)."""
    layers = shape.growing_layers
    indexer = layers * shape.index_head_dim * element
    if shape.kv_lora_rank:
        return layers * (shape.kv_lora_rank + shape.qk_rope_head_dim) * element + indexer
    return 2 * layers * shape.kv_heads * shape.head_dim * element + indexer


@dataclass(frozen=True)
class Budget:
    """Memory a load may use, in bytes.

    Attributes:
        gpu_free: Free memory on the GPU (NVML), or ``None`` without a GPU.
        ram_available: RAM available to a new allocation (psutil ``available``).
        gpu_name: The card's name (``NVIDIA H200``), for sentences.
    """

    gpu_free: int | None
    ram_available: int
    gpu_name: str = ""


def read_budget(probe=None) -> Budget:
    """The budget now: the GPU's free memory from a
    :class:`~glmdesk.engine.memory.MemoryProbe` (``total - used``; ``None`` when the
    probe reads the CPU) and psutil's available RAM. Never raises."""
    gpu_free, name = None, ""
    if probe is not None:
        reading = probe.read()
        if reading.source == "gpu":
            gpu_free = int((reading.total_mib - reading.used_mib) * MIB)
            name = reading.device
    try:
        import psutil

        ram = int(psutil.virtual_memory().available)
    except Exception:
        ram = 0
    return Budget(gpu_free, ram, name)


@dataclass(frozen=True)
class Forecast:
    """The memory a load will take, and where, in bytes.

    Attributes:
        weights: All weights.
        experts: The routed experts' share of ``weights``.
        kv: The KV cache for ``context`` tokens.
        overhead: The stated overhead (see the module's note).
        work: The attention's working memory over ``context`` tokens beyond the cache
            (:func:`attention_work_bytes`), on the device that computes.
        context: The context the KV cache is sized for, in tokens.
        on_gpu: Whether the load goes to the GPU.
        experts_in_ram: Whether the experts stay in system RAM (llama.cpp's
            tensor-buffer override, or accelerate's device map putting them on the CPU).
        gpu: Bytes on the GPU (0 on the CPU).
        ram: Bytes in system RAM.
    """

    weights: int
    experts: int
    kv: int
    overhead: int
    context: int
    on_gpu: bool
    experts_in_ram: bool
    gpu: int
    ram: int
    work: int = 0

    @property
    def total(self) -> int:
        """Weights, KV cache, overhead and the attention's working memory, in bytes."""
        return self.weights + self.kv + self.overhead + self.work

    def shortfall(self, budget: Budget) -> tuple[str, int, int] | None:
        """``(where, needed bytes, available bytes)`` for the first memory that is too
        small (``gpu`` or ``ram``), or ``None`` when the load fits."""
        if self.on_gpu and budget.gpu_free is not None and self.gpu > budget.gpu_free:
            return "gpu", self.gpu, budget.gpu_free
        if budget.ram_available and self.ram > budget.ram_available:
            return "ram", self.ram, budget.ram_available
        return None


def forecast(
    shape: ModelShape,
    *,
    engine: str,
    quantization: str = "none",
    precision: str = "auto",
    on_gpu: bool = False,
    context: int = 4096,
    kv_element_bytes: float | None = None,
    experts_in_ram: bool = False,
) -> Forecast:
    """Forecast a load (see the module's note for every formula).

    Args:
        shape: What the model is made of.
        engine: ``transformers`` or ``llamacpp`` (llama.cpp caches f16 by default).
        quantization: A :data:`~glmdesk.core.settings.QUANTIZATIONS` name.
        precision: ``auto``, ``fp32``, ``bf16`` or ``fp16``.
        on_gpu: Whether the weights go to the GPU.
        context: Tokens the KV cache is sized for.
        kv_element_bytes: Bytes per cached element (default: llama.cpp's f16, else
            the compute precision).
        experts_in_ram: Keep the routed experts in system RAM (a MoE model on a GPU).

    Returns:
        The :class:`Forecast`.
    """
    weights, experts = weights_bytes(shape, quantization, precision, on_gpu)
    if kv_element_bytes is None:
        kv_element_bytes = 2 if engine == "llamacpp" else precision_bytes(precision, on_gpu)
    kv = int(kv_bytes_per_token(shape, engine, kv_element_bytes) * max(0, context)) + shape.fixed_state_bytes
    offload = on_gpu and experts_in_ram and experts > 0
    computed = weights - experts if offload else weights  # the device that computes keeps the slack
    overhead = int(OVERHEAD_FRACTION * computed) + (GPU_CONTEXT_BYTES if on_gpu else 0)
    work = attention_work_bytes(shape, engine, context, precision_bytes(precision, on_gpu))
    if not on_gpu:
        gpu, ram = 0, weights + kv + overhead + work
    elif offload:
        gpu, ram = weights - experts + kv + overhead + work, experts
    else:
        gpu, ram = weights + kv + overhead + work, 0
    moe = experts if shape.is_moe else 0
    return Forecast(weights, moe, kv, overhead, context, on_gpu, offload, gpu, ram, work)


def attention_work_bytes(shape: ModelShape, engine: str, context: int, element: int) -> int:
    """What the transformers engine's attention takes beyond the KV cache over ``context``
    tokens, in bytes: multi-head latent attention (GLM-4.7-Flash, GLM-5, GLM-5.3-Flash)
    decompresses the cached latent into keys and values for every head over the whole
    context, one layer at a time (``context x heads x mla_head_dims x element``), and a
    sparse-attention indexer scores every key for every query of a prefill chunk (at most
    :data:`PREFILL_SCORE_BYTES`). 0 for grouped-query attention (its kernels bound it; in
    the overhead) and on llama.cpp (its compute buffer). An upper bound: on an H200 in
    bf16, GLM-5's shapes took 5.5 GiB over a 32K prompt against 6.0 GiB from this sum
    (``benchmarks/glm5_memory.py``)."""
    if engine != "transformers" or not shape.mla_head_dims:
        return 0
    work = context * shape.attention_heads * shape.mla_head_dims * element
    if shape.index_heads:
        pair = shape.index_heads * 4 * 2 + shape.attention_heads * element
        work += int(min(PREFILL_SCORE_BYTES, PREFILL_CHUNK * context * pair))
    return work


def gib(n: int) -> str:
    """Bytes as GiB with one decimal (``'12.3 GiB'``); below 1 GiB in MiB."""
    return f"{n / GIB:.1f} GiB" if n >= GIB else f"{n / MIB:.0f} MiB"


def model_shape(settings, engine: str) -> ModelShape | None:
    """The shape of the model ``settings`` names, from its files' headers only (nothing
    converted or downloaded); ``None`` for a hub id, a missing path or a folder without
    a decoder's ``config.json`` (an original ChatGLM folder)."""
    from glmdesk.core.errors import GlmdeskError
    from glmdesk.engine.files import sources
    from glmdesk.engine.files.gguf_header import read_gguf_header
    from glmdesk.engine.forecast_shape import shape_from_folder, shape_from_gguf

    try:
        source = sources.resolve_source(settings.model)
        if source.kind in ("embedded", "gguf"):
            if engine == "llamacpp":
                return shape_from_gguf(read_gguf_header(source.location))
            folder = sources.converted_gguf_folder_if_ready(source.location)
            if folder is not None:
                return shape_from_folder(folder)
            return shape_from_gguf(read_gguf_header(source.location), own_bytes=False)
        if source.kind == "folder":
            from pathlib import Path

            return shape_from_folder(Path(source.location))
    except (GlmdeskError, OSError, ValueError, KeyError, TypeError):
        return None
    return None


def plan_load(settings, engine: str, on_gpu: bool, budget: Budget, shape: ModelShape | None = None):
    """The forecast of loading ``settings`` with ``engine`` (``None`` when the model
    cannot be sized, :func:`model_shape`).

    The context: llama.cpp's ``n_ctx`` (0: the model's, at most
    :data:`~glmdesk.core.settings.LLAMA_DEFAULT_N_CTX`), which it allocates at load;
    for transformers, whose cache grows with the conversation, the model's context at
    most that many tokens. Experts in RAM: llama.cpp's option; for transformers, when
    the whole model does not fit the GPU's free memory (its loader then maps the
    experts to the CPU, :func:`glmdesk.engine.backends.transformers.placement.moe_offload_plan`).
    """
    from glmdesk.core.settings import LLAMA_DEFAULT_N_CTX

    shape = shape or model_shape(settings, engine)
    if shape is None:
        return None
    trained = shape.context_length or 2048
    context = min(trained, LLAMA_DEFAULT_N_CTX)
    if engine == "llamacpp" and settings.llamacpp.n_ctx:
        context = settings.llamacpp.n_ctx
    quantization = "none" if engine == "llamacpp" else settings.quantization
    layers = settings.llamacpp.n_gpu_layers if engine == "llamacpp" else -1
    on_gpu = on_gpu and layers != 0
    common = functools.partial(
        forecast, shape, engine=engine, quantization=quantization, precision=settings.precision, on_gpu=on_gpu
    )
    in_ram = engine == "llamacpp" and settings.llamacpp.experts_in_ram
    result = common(context=context, experts_in_ram=in_ram)
    if engine != "llamacpp" and on_gpu and shape.is_moe and result.shortfall(budget):
        result = common(context=context, experts_in_ram=True)
    if on_gpu and 0 < layers < shape.layers:
        result = _some_layers(result, layers / shape.layers)
    return result


def _some_layers(f: Forecast, share: float) -> Forecast:
    """llama.cpp with ``n_gpu_layers`` below the layer count: that share of the layers'
    weights (less experts kept in RAM) and KV cache on the GPU, the rest in RAM."""
    from dataclasses import replace

    on_card = f.weights - (f.experts if f.experts_in_ram else 0)
    gpu = int(on_card * share + f.kv * share) + f.overhead
    return replace(f, gpu=gpu, ram=f.weights + f.kv + f.overhead - gpu)
