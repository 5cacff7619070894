"""The model facts in words a user of LM Studio or Ollama reads at a glance.

What the weights are and what computes them, from a
:class:`~glmdesk.engine.info.ModelInfo`: "Q4_1 GGUF on llama.cpp", "4-bit weights
(int4 weight-only), fp32 compute", "bf16 weights and compute", "on the server". The
welcome, the status bar and the window's tooltips use these instead of the engine's
own keys (``fp32, int4-wo``; ``cuda:0``; ``server``).
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication


def weights_text(info) -> str:
    """What the weights are and what computes them (one short phrase).

    Args:
        info: The loaded model's ``ModelInfo`` (``engine``, ``dtype``, ``quantization``).
    """
    if info.engine == "remote":
        return QCoreApplication.translate("model_facts", "answered by the server")
    if info.engine == "llamacpp":
        kind = info.quantization if info.quantization not in ("", "none") else ""
        return QCoreApplication.translate("model_facts", "{type} GGUF on llama.cpp").format(type=kind).strip()
    wordings = {
        "int4-wo": QCoreApplication.translate(
            "model_facts", "4-bit weights (int4 weight-only), {dtype} compute"
        ),
        "int8-wo": QCoreApplication.translate(
            "model_facts", "8-bit weights (int8 weight-only), {dtype} compute"
        ),
        "4bit": QCoreApplication.translate(
            "model_facts", "4-bit weights (bitsandbytes NF4), {dtype} compute"
        ),
        "8bit": QCoreApplication.translate(
            "model_facts", "8-bit weights (bitsandbytes LLM.int8), {dtype} compute"
        ),
    }
    wording = wordings.get(info.quantization)
    if wording is None:
        return QCoreApplication.translate("model_facts", "{dtype} weights and compute").format(
            dtype=info.dtype
        )
    return wording.format(dtype=info.dtype)


def device_text(device: str) -> str:
    """``CPU`` for ``cpu``, ``GPU 0`` for ``cuda:0`` (``GPU`` for plain ``cuda``)."""
    if device == "cpu":
        return QCoreApplication.translate("model_facts", "CPU")
    if device.startswith("cuda"):
        index = device.partition(":")[2]
        return (
            QCoreApplication.translate("model_facts", "GPU {index}").format(index=index).strip()
            if index
            else QCoreApplication.translate("model_facts", "GPU")
        )
    return device


def no_break(name: str) -> str:
    """``name`` with its hyphens made non-breaking (U+2011), so that a wrapped title
    breaks between words, never inside "SmolLM2-135M-Instruct"."""
    return name.replace("-", "\u2011")
