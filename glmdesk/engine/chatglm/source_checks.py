"""Checks of an original THUDM folder before the converter reads a single weight.

A GGUF file is named as such (its header read first), a folder cloned without
git-lfs names its first pointer file, a layout the converter cannot map exactly is
refused with the reason, and the weight shards are listed from the index (a missing
shard or a damaged index named). Each refusal is a :class:`GlmdeskError` with a
sentence.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from glmdesk.core.errors import GlmdeskError
from glmdesk.engine.chatglm.detect import is_original_checkpoint
from glmdesk.engine.chatglm.glm_config import THUDM_DEFAULTS
from glmdesk.engine.files.file_checks import check_no_lfs_pointers
from glmdesk.engine.files.gguf_header import read_gguf_header


def refuse(src: Path, reason: str) -> GlmdeskError:
    """The ``unsupported_checkpoint`` error: "glmdesk cannot convert SRC: REASON"."""
    return GlmdeskError(
        "unsupported_checkpoint", f"glmdesk cannot convert {src}: {reason}", path=str(src), reason=reason
    )


def gguf_needs_no_conversion(src: Path) -> GlmdeskError:
    """A GGUF file given to the converter: its header is read first, so a file that is
    not GGUF at all gets the magic-bytes sentence (``not_gguf``) or ``lfs_pointer``."""
    header = read_gguf_header(src)
    return refuse(
        src,
        f"it is a GGUF file ({header.architecture}, {', '.join(header.quantization_types)}), not a THUDM "
        "folder; glmdesk opens a GGUF file as it is, with no conversion.",
    )


def check_folder_files(src: Path) -> None:
    """Check every file of an original folder before anything reads it.

    Raises:
        GlmdeskError: ``lfs_pointer`` naming the first git-lfs pointer (a shard,
            ``tokenizer.model``, an index) and ``git lfs pull``.
    """
    if src.is_dir():
        check_no_lfs_pointers(sorted(f for f in src.iterdir() if f.is_file() and not f.name.startswith(".")))


def check_convertible(src: Path, config: dict[str, Any], family: str) -> None:
    """Raise if the folder is a layout the converter cannot map exactly.

    Raises:
        GlmdeskError: ``unsupported_checkpoint`` for ChatGLM-6B v1, int4/int8
            pre-quantized THUDM folders, P-tuning prefix checkpoints, GLM-4V, a
            folder already in Hugging Face format, or an unusual THUDM layout.
    """
    if family == "chatglm-v1":
        raise refuse(
            src,
            "it is a first-generation ChatGLM-6B checkpoint, a different network "
            "(2D positions, GeLU, LayerNorm) that glmdesk does not run.",
        )
    if not is_original_checkpoint(family):
        raise refuse(
            src, f"it is not a THUDM ChatGLM2/3 or GLM-4 folder (detected {family}); it loads as it is."
        )
    if config.get("quantization_bit"):
        raise refuse(
            src,
            f"it is pre-quantized by THUDM to int{config['quantization_bit']}, which only THUDM's own "
            "code can run; use the full-precision checkpoint and glmdesk's 4-bit or 8-bit loading.",
        )
    if config.get("pre_seq_len"):
        raise refuse(
            src,
            "it is a P-tuning v2 prefix checkpoint (pre_seq_len is set); merge or drop the prefix "
            "encoder and use the base model's weights.",
        )
    if config.get("vision_config"):
        raise refuse(src, "it is a GLM-4V vision-language checkpoint; glmdesk runs text models only.")
    layout = {k: config.get(k, THUDM_DEFAULTS[k]) for k in THUDM_DEFAULTS}
    unusual = []
    if not layout["rmsnorm"]:
        unusual.append("LayerNorm instead of RMSNorm")
    if layout["apply_residual_connection_post_layernorm"]:
        unusual.append("post-norm residuals")
    if not layout["post_layer_norm"]:
        unusual.append("no final norm")
    if layout["add_bias_linear"]:
        unusual.append("biases on every linear layer")
    if not layout["multi_query_attention"]:
        unusual.append("no grouped-query attention")
    if not layout["original_rope"]:
        unusual.append("a non-original rotary embedding")
    if unusual:
        raise refuse(
            src,
            "its config describes a layout no released ChatGLM2/3 or GLM-4 has: " + ", ".join(unusual) + ".",
        )


def weight_files(src: Path) -> list[Path]:
    """The weight shards of a THUDM folder, safetensors preferred, in index order.

    Raises:
        GlmdeskError: ``not_a_model`` if there are none; ``corrupt_weights`` if an
            index names a missing shard or is not JSON.
    """
    for index_name, single, pattern in (
        ("model.safetensors.index.json", "model.safetensors", "*.safetensors"),
        ("pytorch_model.bin.index.json", "pytorch_model.bin", "pytorch_model*.bin"),
    ):
        index = src / index_name
        if index.exists():
            try:
                weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise GlmdeskError(
                    "corrupt_weights",
                    f"The weight index {index} could not be read ({exc}).",
                    path=str(src),
                    file=index_name,
                    detail=str(exc),
                ) from exc
            files = sorted(set(weight_map.values()))
            for f in files:
                if not (src / f).is_file():
                    raise GlmdeskError(
                        "corrupt_weights",
                        f"The weight file {f} listed in {index_name} is missing from {src}.",
                        path=str(src),
                        file=f,
                        detail="missing",
                    )
            return [src / f for f in files]
        if (src / single).is_file():
            return [src / single]
        found = sorted(p for p in src.glob(pattern) if p.is_file())
        if found:
            return found
    raise GlmdeskError(
        "not_a_model", f"The folder {src} holds no weight files (.safetensors or .bin).", path=str(src)
    )
