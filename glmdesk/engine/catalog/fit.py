"""Fit marks: will a catalog variant run on this machine, how, how fast, and why.

Every figure is glmdesk's own forecast (:func:`glmdesk.engine.forecast.forecast`, the
one Open model shows before a load): weights at the variant's bytes, the KV cache at
:data:`FIT_CONTEXT` tokens (or the trained context when shorter) and the stated
overhead, against the GPU's free memory and the RAM available. Ways to run are tried
from the fastest:

1. all on the GPU (a safetensors variant in bf16, then in bitsandbytes NF4);
2. a mixture of experts with its routed experts in system RAM (llama.cpp's
   tensor-buffer override, transformers' device map);
3. a GGUF with as many layers on the GPU as fit and the rest in RAM (llama.cpp's
   ``n_gpu_layers``; split as :func:`glmdesk.engine.forecast.plan_load` splits it);
4. on the CPU, in RAM (bf16 for transformers, the file's types for llama.cpp).

The first that fits gives the mark: ``fits`` (green: on the GPU, or in RAM on a
machine without one), ``slow`` (yellow: it runs, with experts or everything in RAM
on a machine that has a GPU) or ``too_big`` (red, also when the download does not fit
the free disk). The speed class is a class, not a measurement: ``fast`` on the GPU,
``medium`` with experts in RAM, with at least half the layers on the GPU, or a mixture
of at most 5B active parameters on the CPU, ``slow`` otherwise.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from glmdesk.engine.catalog.catalog import CatalogModel, Variant
from glmdesk.engine.forecast import GIB, Budget, Forecast, _some_layers, forecast, gib, read_budget

#: Tokens of KV cache a fit is sized for (the trained context when shorter).
FIT_CONTEXT = 32768
#: Marks, best first.
MARKS = ("fits", "slow", "too_big")
#: A mixture of experts with at most this many active parameters (billions) reads
#: few enough bytes per token to answer at a medium pace on a CPU.
CPU_MEDIUM_ACTIVE_B = 5.0


@dataclass(frozen=True)
class Machine:
    """What a machine offers, in bytes.

    Attributes:
        gpu_free: Free GPU memory (``None``: no GPU).
        ram_available: RAM available to a new allocation.
        disk_free: Free space where models are downloaded (``None``: not checked).
        name: For sentences (``24 GB GPU + 64 GB RAM``).
    """

    gpu_free: int | None
    ram_available: int
    disk_free: int | None = None
    name: str = ""

    @property
    def budget(self) -> Budget:
        """The forecast's :class:`~glmdesk.engine.forecast.Budget`."""
        return Budget(self.gpu_free, self.ram_available, self.name)


def this_machine(models_dir: Path | None = None, probe=None) -> Machine:
    """The machine now: NVML's free GPU memory (through a
    :class:`~glmdesk.engine.memory.MemoryProbe`), psutil's available RAM and the free
    disk under ``models_dir``. Never raises."""
    own = probe is None
    if own:
        try:
            from glmdesk.engine.memory import MemoryProbe

            probe = MemoryProbe()
        except Exception:
            probe = None
    try:
        budget = read_budget(probe)
    finally:
        if own and probe is not None:
            probe.close()
    disk = None
    if models_dir is not None:
        try:
            disk = shutil.disk_usage(_existing(models_dir)).free
        except OSError:
            disk = None
    return Machine(budget.gpu_free, budget.ram_available, disk, budget.gpu_name)


def _existing(path: Path) -> Path:
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


@dataclass(frozen=True)
class Fit:
    """A variant on a machine.

    Attributes:
        mark: ``fits``, ``slow`` or ``too_big`` (see the module's note).
        how: How it would run: ``GPU``, ``GPU, NF4``, ``GPU + experts in RAM``,
            ``GPU + CPU layers``, ``CPU`` (``""`` when it does not fit).
        engine: ``llamacpp`` or ``transformers``.
        speed: ``fast``, ``medium``, ``slow`` (``""`` when it does not fit).
        forecast: The forecast of the way it runs (of the GPU attempt when none fits).
        why: One line with the figures (English; the window words it from the fields).
        whole: The forecast of the fastest way (all on the GPU, or the CPU without one),
            whose weights and KV cache the why line starts with.
        context: Tokens the KV cache is sized for.
        disk_short: Whether the download is larger than the free disk.
        gpu_layers: Layers on the GPU under ``GPU + CPU layers`` (0 otherwise).
        layers: The model's layers.
    """

    mark: str
    how: str
    engine: str
    speed: str
    forecast: Forecast
    why: str
    whole: Forecast | None = None
    context: int = 0
    disk_short: bool = False
    gpu_layers: int = 0
    layers: int = 0

    @property
    def runs(self) -> bool:
        """Whether it runs here at all."""
        return self.mark != "too_big"


def variant_shape(model: CatalogModel, variant: Variant):
    """The forecast's shape of a variant: the model's counted shape; for a GGUF the
    variant's bytes as its weights, the routed experts' share in proportion."""
    shape = model.shape
    if variant.format != "gguf":
        return shape
    share = shape.expert_params / shape.params if shape.params else 0.0
    return replace(shape, gguf_bytes=variant.size_bytes, gguf_expert_bytes=int(variant.size_bytes * share))


def _attempts(model: CatalogModel, variant: Variant, gpu: bool) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``(how, engine, forecast kwargs)`` from the fastest way to the slowest."""
    if variant.format == "gguf":
        engine = "llamacpp"
        if gpu:
            yield "GPU", engine, dict(on_gpu=True)
            if model.shape.is_moe:
                yield "GPU + experts in RAM", engine, dict(on_gpu=True, experts_in_ram=True)
            yield "GPU + CPU layers", engine, dict(on_gpu=True, experts_in_ram=model.shape.is_moe)
        yield "CPU", engine, dict(on_gpu=False)
        return
    engine = "transformers"
    if gpu:
        yield "GPU", engine, dict(on_gpu=True, precision="bf16")
        yield "GPU, NF4", engine, dict(on_gpu=True, precision="bf16", quantization="4bit")
        if model.shape.is_moe:
            yield "GPU + experts in RAM", engine, dict(on_gpu=True, precision="bf16", experts_in_ram=True)
    yield "CPU", engine, dict(on_gpu=False, precision="bf16")


def _context_label(tokens: int) -> str:
    return f"{tokens // 1024}K" if tokens % 1024 == 0 else str(tokens)


def layers_on_gpu(shape, whole: Forecast, gpu_free: int) -> int:
    """How many of ``shape``'s layers llama.cpp can keep on a GPU with ``gpu_free``
    bytes free, the rest in RAM (0 when not even one; at most all but one)."""
    on_card = whole.weights - (whole.experts if whole.experts_in_ram else 0)
    room = gpu_free - whole.overhead
    if room <= 0 or on_card + whole.kv <= 0:
        return 0
    return max(0, min(shape.layers - 1, int(shape.layers * room / (on_card + whole.kv))))


def _speed(how: str, model: CatalogModel, share: float = 0.0) -> str:
    if how == "GPU + CPU layers":
        return "medium" if share >= 0.5 else "slow"
    if how.startswith("GPU +"):
        return "medium"
    if how.startswith("GPU"):
        return "fast"
    active = model.active_params_b
    return "medium" if active is not None and active <= CPU_MEDIUM_ACTIVE_B else "slow"


def fit(model: CatalogModel, variant: Variant, machine: Machine, context: int = FIT_CONTEXT) -> Fit:
    """The fit of ``variant`` on ``machine`` (see the module's note).

    Args:
        model: The variant's model.
        variant: What would be downloaded.
        machine: Its memory and disk.
        context: Tokens the KV cache is sized for (at most the trained context).

    Returns:
        The :class:`Fit`, with a one-line why such as ``weights 17.1 GiB + KV at 32K
        1.6 GiB > 16.0 GiB GPU; fits with experts in RAM (4.2 GiB on the GPU, 14.9 GiB
        in RAM)``.
    """
    tokens = min(context, model.context or context)
    shape = variant_shape(model, variant)
    gpu = machine.gpu_free is not None
    budget = machine.budget
    first: Forecast | None = None
    chosen = None
    n_layers = 0
    for how, engine, kwargs in _attempts(model, variant, gpu):
        f = forecast(shape, engine=engine, context=tokens, **kwargs)
        if how == "GPU + CPU layers":
            n_layers = layers_on_gpu(shape, f, machine.gpu_free or 0)
            if not n_layers:
                continue
            f = _some_layers(f, n_layers / shape.layers)
        if first is None:
            first = f
        if f.shortfall(budget) is None and (f.on_gpu or f.ram <= machine.ram_available):
            chosen = (how, engine, f)
            break
    assert first is not None
    # Named only where they are known: the GPU's in the branches that use a GPU, the
    # disk's when the download is too big for it.
    gpu_free, disk_free = machine.gpu_free or 0, machine.disk_free or 0
    head = f"weights {gib(first.weights)} + KV at {_context_label(tokens)} {gib(first.kv)}"
    disk_short = machine.disk_free is not None and variant.size_bytes > machine.disk_free
    if chosen is None:
        have = f"{gib(machine.ram_available)} RAM"
        if gpu:
            have = f"{gib(gpu_free)} GPU + {have}"
        why = f"{head} + overhead {gib(first.overhead)}: needs {gib(first.total)}; {have} is too little"
        engine = "llamacpp" if variant.format == "gguf" else "transformers"
        return Fit("too_big", "", engine, "", first, why, first, tokens, disk_short)
    how, engine, f = chosen
    if how == "GPU":
        why = f"{head} + overhead {gib(f.overhead)} = {gib(f.gpu)} <= {gib(gpu_free)} GPU"
        mark = "fits"
    elif how == "GPU, NF4":
        why = f"{head} > {gib(gpu_free)} GPU in bf16; fits in NF4 ({gib(f.gpu)} on the GPU)"
        mark = "fits"
    elif how == "GPU + CPU layers":
        why = (
            f"{head} > {gib(gpu_free)} GPU; {n_layers} of {shape.layers} layers on the GPU "
            f"({gib(f.gpu)} on the GPU, {gib(f.ram)} in RAM)"
        )
        mark = "slow"
    elif how.startswith("GPU +"):
        why = (
            f"{head} > {gib(gpu_free)} GPU; fits with experts in RAM "
            f"({gib(f.gpu)} on the GPU, {gib(f.ram)} in RAM)"
        )
        mark = "slow"
    elif gpu:
        why = f"{head} > {gib(gpu_free)} GPU; runs on the CPU ({gib(f.ram)} of {gib(machine.ram_available)} RAM)"
        mark = "slow"
    else:
        why = (
            f"{head} + overhead {gib(f.overhead)} = {gib(f.ram)} <= {gib(machine.ram_available)} RAM (no GPU)"
        )
        mark = "fits"
    if disk_short:
        why = f"the download ({gib(variant.size_bytes)}) > {gib(disk_free)} free on disk; " + why
        return Fit("too_big", how, engine, "", f, why, first, tokens, True, n_layers, shape.layers)
    speed = _speed(how, model, n_layers / shape.layers if shape.layers else 0.0)
    return Fit(mark, how, engine, speed, f, why, first, tokens, False, n_layers, shape.layers)


def best_first_key(model: CatalogModel, variant: Variant, result: Fit) -> tuple:
    """Sort key of "best that fits": the mark, then the larger model, then the
    quantization with more bits per weight."""
    return (MARKS.index(result.mark), -model.params_b, -variant.bits_per_weight, model.name, variant.repo)


def machine_named(gpu_gb: float | None, ram_gb: float, disk_gb: float | None = None) -> Machine:
    """A :class:`Machine` from GiB figures (``8 GB GPU + 32 GB RAM``)."""
    name = (f"{gpu_gb:g} GB GPU + " if gpu_gb is not None else "CPU only, ") + f"{ram_gb:g} GB RAM"
    return Machine(
        None if gpu_gb is None else int(gpu_gb * GIB),
        int(ram_gb * GIB),
        None if disk_gb is None else int(disk_gb * GIB),
        name,
    )
