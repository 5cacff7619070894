"""A tiny GLM-4.5 folder with one multi-token-prediction (MTP) layer (random weights).

GLM-4.5's checkpoints append their MTP ("NextN") layer after the trunk, as
``model.layers.<num_hidden_layers>.*``: ``enorm``, ``hnorm``, ``eh_proj`` (the previous
hidden state and the next token's embedding, concatenated and projected), one decoder
layer, and ``shared_head.norm``; ``num_nextn_predict_layers`` says how many
(transformers 5.24 reads it as ``num_mtp_layers``). The MTP layer here is transformers'
own ``MtpModel`` built from the tiny trunk (seeded), its keys written back under that
prefix, so ``generate(..., use_mtp=True)`` loads it from the folder.

transformers finds a checkpoint's MTP keys through the model class's
``_keys_to_ignore_on_load_unexpected`` patterns, which name the published layer numbers
(46 for GLM-4.5-Air, 92 for GLM-4.5); :func:`allow_mtp_keys` points a loaded tiny model's
patterns at its own layer number.
"""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_glm45_mtp(folder: Path) -> Path:
    """Write the tiny GLM-4.5-Air folder of :func:`tests.helpers.glm45_models.write_glm45`
    with one MTP layer (``model.layers.2.*``) into ``folder``; return ``folder``."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.modeling_layers import MtpModel

    from tests.helpers.glm45_models import write_glm45

    write_glm45(folder)
    config_file = folder / "config.json"
    config = json.loads(config_file.read_text())
    config["num_nextn_predict_layers"] = 1
    config_file.write_text(json.dumps(config))
    trunk = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
    torch.manual_seed(1)
    head = MtpModel(trunk, 1)
    with torch.no_grad():  # the constructor leaves the routed experts and router unset
        for name, weight in head.layers.named_parameters():
            weight.fill_(1.0) if "norm" in name else weight.normal_(0.0, trunk.config.initializer_range)
    save_head(folder, head, trunk.config.num_hidden_layers)
    return folder


def save_head(folder: Path, head, n: int) -> None:
    """Write ``head`` (a one-layer ``MtpModel``) into ``folder``'s ``model.safetensors`` as
    a published checkpoint's layer ``n`` (the trunk's ``num_hidden_layers``)."""
    from safetensors.torch import load_file, save_file

    weights = load_file(folder / "model.safetensors")
    for key, value in head.state_dict().items():
        if key.startswith(("embed_tokens.", "shared_head.")):  # shared with the trunk
            continue
        key = key.replace("layers.0.mtp_block.", f"model.layers.{n}.")
        key = key.replace("layers.0.post_norm.", f"model.layers.{n}.shared_head.norm.")
        key = key.replace("layers.0.", f"model.layers.{n}.")
        weights.update(_checkpoint_experts(key, value.detach()))
    # a new file, renamed over the old: a model loaded from it may still map the old one
    save_file(weights, folder / "model.safetensors.new", metadata={"format": "pt"})
    os.replace(folder / "model.safetensors.new", folder / "model.safetensors")


def _checkpoint_experts(key: str, value) -> dict:
    """``key`` -> ``value`` as a published checkpoint writes it: transformers' fused routed
    experts (``experts.gate_up_proj`` ``[experts, 2 * ffn, hidden]``, gate rows first;
    ``experts.down_proj`` ``[experts, hidden, ffn]``) as one ``experts.<i>.<proj>.weight`` each."""
    prefix, _, name = key.rpartition(".experts.")
    if not prefix or name not in ("gate_up_proj", "down_proj"):
        return {key: value.contiguous()}
    out = {}
    for i, expert in enumerate(value):
        if name == "down_proj":
            out[f"{prefix}.experts.{i}.down_proj.weight"] = expert.contiguous()
        else:
            gate, up = expert.chunk(2, dim=0)
            out[f"{prefix}.experts.{i}.gate_proj.weight"] = gate.contiguous()
            out[f"{prefix}.experts.{i}.up_proj.weight"] = up.contiguous()
    return out


def allow_mtp_keys(model) -> None:
    """Let transformers' ``MtpModel.from_pretrained`` find a tiny model's MTP keys
    (``model.layers.<num_hidden_layers>.*``) in its checkpoint (see the module docstring)."""
    n = model.config.get_text_config().num_hidden_layers
    model._keys_to_ignore_on_load_unexpected = [rf"model\.layers\.{n}\..*"]
