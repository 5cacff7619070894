"""Mixture-of-experts folders on a GPU too small for them: a device map that keeps every
layer's attention, norms, router and shared experts on the GPU and puts routed experts
there in layer order while they fit, the rest in system RAM (the experts are most of a
MoE model's weights and each token reads only ``num_experts_per_tok`` of them).

The map is a ``device_map`` for transformers' ``from_pretrained`` (accelerate
dispatches the model by it: modules mapped to ``cpu`` keep their weights in RAM).
Module sizes come from accelerate's ``compute_module_sizes`` on the model built on the
meta device (``init_empty_weights``: no memory); when the non-expert part alone does
not fit, accelerate's own ``infer_auto_device_map`` with ``max_memory`` decides.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


def is_moe_config(config) -> bool:
    """Whether a transformers config has routed experts."""
    text = config.get_text_config(decoder=True) if hasattr(config, "get_text_config") else config
    return any(getattr(text, name, 0) for name in ("n_routed_experts", "num_experts", "num_local_experts"))


@dataclass(frozen=True)
class DevicePlan:
    """Where each module goes, and the bytes that go to RAM.

    Attributes:
        device_map: ``{module name: GPU index or "cpu"}`` for ``from_pretrained``.
        gpu_bytes: Weights on the GPU, in bytes.
        cpu_bytes: Weights in system RAM, in bytes.
    """

    device_map: dict[str, int | str | torch.device]
    gpu_bytes: int
    cpu_bytes: int


def _units(model: torch.nn.Module) -> list[tuple[str, bool]]:
    """``(module name, is routed experts)`` covering every parameter once: an
    ``experts`` module whole, else the largest modules with no experts inside."""
    names = [name for name, _ in model.named_modules()]
    holds_experts = {n for n in names if any(m.endswith(".experts") and m.startswith(n) for m in names)}
    holds_experts.add("")

    def walk(prefix: str, module: torch.nn.Module) -> list[tuple[str, bool]]:
        out = []
        for child_name, child in module.named_children():
            name = f"{prefix}{child_name}"
            if name.endswith(".experts") or child_name == "experts":
                out.append((name, True))
            elif name in holds_experts:
                out += walk(f"{name}.", child)
            else:
                out.append((name, False))
        own = [n for n, _ in module.named_parameters(recurse=False)] + [
            n for n, _ in module.named_buffers(recurse=False)
        ]
        out += [(f"{prefix}{n}", False) for n in own]
        return out

    return walk("", model)


def expert_first_plan(
    model: torch.nn.Module, gpu_budget: int, dtype: torch.dtype, scale: float = 1.0, gpu: int = 0
) -> DevicePlan:
    """Plan the placement of ``model`` (on the meta device) with ``gpu_budget`` bytes for
    weights on GPU ``gpu``: routed experts go to RAM first (see the module's note).

    Args:
        model: The model built with ``accelerate.init_empty_weights``.
        gpu_budget: Bytes the weights may take on the GPU.
        dtype: The dtype the weights load in (their sizes).
        scale: Bytes per byte of ``dtype`` after quantization (NF4: about 0.26 of bf16),
            applied to every module.
        gpu: The GPU's index.
    """
    from accelerate.utils import compute_module_sizes

    # accelerate annotates dtype as "str | torch.device" but reads a torch.dtype (its own callers pass one).
    sizes = compute_module_sizes(model, dtype=dtype)  # pyright: ignore[reportArgumentType]
    units = _units(model)
    size = {name: int(sizes.get(name, 0) * scale) for name, _ in units}
    core = sum(size[n] for n, expert in units if not expert)
    if core > gpu_budget:
        return _accelerate_plan(model, gpu_budget, dtype, size, gpu)
    device_map: dict[str, int | str | torch.device] = {}
    left = gpu_budget - core
    for name, expert in units:
        if not expert:
            device_map[name] = gpu
        elif size[name] <= left:
            device_map[name] = gpu
            left -= size[name]
        else:
            device_map[name] = "cpu"
    cpu = sum(size[n] for n, where in device_map.items() if where == "cpu")
    return DevicePlan(device_map, sum(size.values()) - cpu, cpu)


def _accelerate_plan(model, gpu_budget: int, dtype, size: dict[str, int], gpu: int) -> DevicePlan:
    """accelerate's own map when even the non-expert modules overflow the GPU."""
    from accelerate.utils import compute_module_sizes, infer_auto_device_map

    no_split = list(getattr(model, "_no_split_modules", None) or [])
    device_map = infer_auto_device_map(
        model,
        max_memory={gpu: max(0, gpu_budget), "cpu": 1 << 50},
        no_split_module_classes=no_split,
        dtype=dtype,
    )
    sizes = compute_module_sizes(model, dtype=dtype)
    scale = sum(size.values()) / max(1, sizes.get("", 1))
    cpu = int(sum(sizes.get(n, 0) for n, where in device_map.items() if where == "cpu") * scale)
    return DevicePlan(dict(device_map), sum(size.values()) - cpu, cpu)


def meta_model(config, auto_class) -> torch.nn.Module:
    """The model of ``config`` on the meta device (no memory), for planning."""
    from accelerate import init_empty_weights

    with init_empty_weights():
        return auto_class.from_config(config)
