"""Streaming conversion of THUDM ChatGLM2/3 and GLM-4 checkpoints to ``GlmForCausalLM``.

transformers' built-in ``GlmForCausalLM`` (model_type ``glm``) is the same network
as THUDM's ``ChatGLMForConditionalGeneration`` (RMSNorm, SwiGLU, grouped-query
attention, rotary embedding on the first half of each head with interleaved
pairs). Only names differ, and the fused ``query_key_value`` projection is split
along dim 0 into ``q_proj`` / ``k_proj`` / ``v_proj`` with sizes
``[heads * head_dim, groups * head_dim, groups * head_dim]``.

The conversion reads one input shard at a time and writes each output tensor as
soon as it is read, in a safetensors file whose header is computed from the
tensor shapes beforehand. Peak memory is about one input shard's pages (the
input is memory-mapped) plus one tensor, never the model. The output goes to a
temporary sibling folder renamed into place at the end, so a cancelled or
crashed conversion never leaves a half folder behind.

Rotary table precision (ChatGLM2): THUDM's ``RotaryEmbedding.forward_impl``
computes ``cos``/``sin`` in fp32 and then rounds the table to the checkpoint's
``torch_dtype`` (fp16), even when the model runs in fp32. transformers'
``GlmRotaryEmbedding`` computes the table in fp32 and casts it to the
activations' dtype. We keep transformers' behaviour deliberately: in fp16/bf16 it
rounds the table exactly as THUDM does (the same fp32 angles cast to the same
half type), and in fp32 it is the exact table rather than an fp16-rounded one, so
fp32 runs on the CPU are more accurate than THUDM's, never less, and long
prompts do not accumulate the half-precision error. Nothing is stored for it:
``transformer.rotary_pos_emb.inv_freq`` is dropped.

Before any weight is read, :mod:`.source_checks` checks the folder's files (GGUF,
git-lfs pointers, layouts that cannot be mapped, the shard list) and
:mod:`.glm_config` maps its config; this module maps tensor names and runs the
shard loop.

Sources: THUDM/chatglm2-6b, chatglm3-6b and glm-4-9b-chat ``modeling_chatglm.py``
(``SelfAttention``, ``RotaryEmbedding``, ``apply_rotary_pos_emb``) and
``configuration_chatglm.py``; transformers ``models/glm/modeling_glm.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from glmdesk.core.errors import GlmdeskError
from glmdesk.engine.chatglm.detect import MARKER_FILE, converted_family, detect_family, read_config
from glmdesk.engine.chatglm.glm_config import Dims, glm_config, tokenizer_stop_ids
from glmdesk.engine.chatglm.safetensors_io import ST_SIZES, ShardReader, open_shard, write_safetensors
from glmdesk.engine.chatglm.source_checks import (
    check_convertible,
    check_folder_files,
    gguf_needs_no_conversion,
    refuse,
    weight_files,
)

#: Bumped when the output of the conversion changes; part of the cache key.
CONVERTER_VERSION = 1
#: Files copied next to the converted weights when present.
TOKENIZER_FILES = ("tokenizer.model", "tokenizer.json")

Progress = Callable[[int, int], None]


# -- key mapping ---------------------------------------------------------------------

_LAYER = re.compile(r"^transformer\.encoder\.layers\.(\d+)\.(.+)$")
_RENAMES = {
    "input_layernorm.weight": "input_layernorm.weight",
    "post_attention_layernorm.weight": "post_attention_layernorm.weight",
    "self_attention.dense.weight": "self_attn.o_proj.weight",
    "mlp.dense_h_to_4h.weight": "mlp.gate_up_proj.weight",
    "mlp.dense_4h_to_h.weight": "mlp.down_proj.weight",
}
_TOP = {
    "transformer.embedding.word_embeddings.weight": "model.embed_tokens.weight",
    "transformer.encoder.final_layernorm.weight": "model.norm.weight",
    "transformer.output_layer.weight": "lm_head.weight",
}
_DROPPED = ("transformer.rotary_pos_emb.inv_freq",)

#: (target name, slice start, slice length along dim 0, or None for the whole tensor)
Target = tuple[str, int | None, int | None]


def map_key(name: str, dims: Dims, src: Path) -> list[Target]:
    """Targets of one THUDM tensor.

    Returns:
        ``[]`` for dropped tensors, else ``(new_name, start, length)`` triples;
        ``start``/``length`` slice dim 0 (``None``: the whole tensor).

    Raises:
        GlmdeskError: ``unsupported_checkpoint`` for a prefix encoder, quantization
            scales or any tensor name THUDM's ChatGLM2/3/GLM-4 never had.
    """
    if name in _DROPPED:
        return []
    if name in _TOP:
        return [(_TOP[name], None, None)]
    if name.startswith("transformer.prefix_encoder."):
        raise refuse(src, "it is a P-tuning v2 prefix checkpoint (it holds prefix_encoder weights).")
    match = _LAYER.match(name)
    if match:
        n, rest = int(match.group(1)), match.group(2)
        base = f"model.layers.{n}."
        if rest in _RENAMES:
            return [(base + _RENAMES[rest], None, None)]
        if rest in ("self_attention.query_key_value.weight", "self_attention.query_key_value.bias"):
            kind = rest.rsplit(".", 1)[1]
            q, kv = dims.heads * dims.head_dim, dims.groups * dims.head_dim
            return [
                (f"{base}self_attn.q_proj.{kind}", 0, q),
                (f"{base}self_attn.k_proj.{kind}", q, kv),
                (f"{base}self_attn.v_proj.{kind}", q + kv, kv),
            ]
        if rest.endswith("weight_scale"):
            raise refuse(src, "it holds THUDM quantization scales (a pre-quantized int4/int8 checkpoint).")
    raise refuse(src, f"it holds a tensor glmdesk does not know how to map: {name}.")


# -- conversion -------------------------------------------------------------------------


def _check_cancel(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise GlmdeskError("load_cancelled", "The conversion was cancelled.")


def _planned(reader: ShardReader, dims: Dims, src: Path, expected: dict[str, tuple[int, ...]]):
    """Plan one shard's output entries: (name, dtype, shape, source key, start, length)."""
    plan = []
    for key in reader.keys():
        shape = tuple(reader.shape(key))
        targets = map_key(key, dims, src)
        split_rows = sum(length or 0 for _t, _s, length in targets)
        for target, start, length in targets:
            out_shape = shape if start is None else (length, *shape[1:])
            want = expected.get(target)
            if want is None or out_shape != want or (start is not None and split_rows != shape[0]):
                raise GlmdeskError(
                    "corrupt_weights",
                    f"The tensor {key} in {reader.path.name} has shape {list(shape)}, which does not "
                    f"match config.json (expected {list(want) if want else 'no such tensor'} for {target}).",
                    path=str(src),
                    file=reader.path.name,
                    detail=f"shape {list(shape)} for {key}",
                )
            plan.append((target, reader.dtype(key), out_shape, key, start, length))
    return plan


def _tensors(reader: ShardReader, plan) -> Iterator[torch.Tensor]:
    last_key, last = None, None
    for _target, _dtype, _shape, key, start, length in plan:
        if key != last_key or last is None:  # last is only None before the first key
            last_key, last = key, None  # drop the previous tensor before reading
            last = reader.tensor(key)
        yield last if start is None else last.narrow(0, start, length)
    del last


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists but belongs to someone else (EPERM), or unknown on this OS
        return True
    return True


def remove_stale_partials(dst: Path) -> int:
    """Delete ``.NAME.partial-PID-*`` folders next to ``dst`` whose process is gone.

    A conversion removes its own partial folder when it fails or is cancelled; one
    killed outright (power loss, ``kill -9``) leaves it behind, up to the size of
    the model. The next conversion to the same place calls this first.

    Returns:
        How many folders were removed.
    """
    removed = 0
    for partial in dst.parent.glob(f".{dst.name}.partial-*"):
        try:
            pid = int(partial.name.rsplit(".partial-", 1)[1].split("-", 1)[0])
        except (IndexError, ValueError):
            continue
        if pid != os.getpid() and not _process_alive(pid) and partial.is_dir():
            shutil.rmtree(partial, ignore_errors=True)
            removed += 1
    return removed


def convert_checkpoint(
    src: str | Path,
    dst: str | Path,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> Path:
    """Convert a THUDM ChatGLM2/3 or GLM-4 folder into a ``GlmForCausalLM`` folder.

    Writes ``config.json`` (model_type ``glm``), ``model.safetensors`` or
    ``model-0000i-of-0000n.safetensors`` shards with
    ``model.safetensors.index.json``, ``generation_config.json`` (eos list), the
    tokenizer files found (``tokenizer.model``, ``tokenizer.json``) and
    :data:`~glmdesk.engine.chatglm.detect.MARKER_FILE` (with the source's family). One
    output shard per input shard; tensors keep their dtype. The folder opens as it is
    (:func:`~glmdesk.engine.chatglm.prepare.prepare_checkpoint`), with its family's
    tokenizer and prompt format.

    Args:
        src: The original folder.
        dst: The folder to create; must not exist or be empty.
        progress: Called as ``progress(done_bytes, total_bytes)`` (input bytes on
            disk) after each tensor; from the calling thread.
        cancel: Checked between tensors; when set, the partial output is removed.

    Returns:
        ``dst`` as a :class:`~pathlib.Path`.

    Raises:
        GlmdeskError: ``unsupported_checkpoint`` (see :func:`check_convertible`),
            ``corrupt_weights`` (unreadable shard, wrong shape, missing tensor),
            ``not_a_model`` / ``model_not_found`` (see :func:`detect_family`),
            ``invalid_setting`` if ``dst`` exists and is not empty,
            ``load_cancelled`` when ``cancel`` was set.
    """
    src = Path(src).expanduser().resolve()
    dst = Path(dst).expanduser().absolute()
    family, config = _checked_source(src, dst)
    dims = Dims.from_config(config)
    expected = dims.expected_shapes()
    files = weight_files(src)
    total = sum(f.stat().st_size for f in files)
    dst.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(dst)
    tmp = dst.parent / f".{dst.name}.partial-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        written = _convert_shards(src, tmp, files, dims, expected, total, progress, cancel)
        _write_metadata(src, tmp, config, family, written)
        _check_cancel(cancel)
        if dst.exists():
            dst.rmdir()  # empty (checked above)
        os.rename(tmp, dst)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if progress is not None:
        progress(total, total)
    return dst


def _checked_source(src: Path, dst: Path) -> tuple[str, dict]:
    """The source's family and ``config.json`` (``{}`` without one), once the source is
    convertible and ``dst`` is free.

    Raises:
        GlmdeskError: as :func:`convert_checkpoint`, before anything is written.
    """
    family = detect_family(src)
    if family == "gguf" and src.is_file():
        raise gguf_needs_no_conversion(src)
    if converted_family(src):
        raise refuse(src, "glmdesk converted it already; open it as it is.")
    check_folder_files(src)
    config = read_config(src) if (src / "config.json").exists() else {}
    check_convertible(src, config, family)
    if dst.exists() and (not dst.is_dir() or any(dst.iterdir())):
        raise GlmdeskError(
            "invalid_setting",
            f"The destination {dst} already exists and is not empty; choose a new folder.",
            name="dst",
            value=str(dst),
            reason="exists",
        )
    return family, config


def _convert_shards(
    src: Path,
    tmp: Path,
    files: list[Path],
    dims: Dims,
    expected: dict[str, tuple[int, ...]],
    total: int,
    progress: Progress | None,
    cancel: threading.Event | None,
) -> list[tuple[str, list[tuple[str, str, tuple[int, ...]]]]]:
    done_files = 0
    written: list[tuple[str, list[tuple[str, str, tuple[int, ...]]]]] = []
    seen: set[str] = set()
    for i, file in enumerate(files):
        _check_cancel(cancel)
        with open_shard(file, src) as reader:
            plan = _planned(reader, dims, src, expected)
            dup = seen.intersection(t for t, *_ in plan)
            if dup:
                raise GlmdeskError(
                    "corrupt_weights",
                    f"The tensor {sorted(dup)[0]} appears in more than one shard of {src}.",
                    path=str(src),
                    file=file.name,
                    detail="duplicate tensor",
                )
            seen.update(t for t, *_ in plan)
            if not plan:
                done_files += file.stat().st_size
                continue
            size = file.stat().st_size
            part = f"part-{i:05d}.safetensors"

            def on_tensor(nbytes: int, _base=done_files, _size=size) -> None:
                _check_cancel(cancel)
                if progress is not None:
                    progress(min(_base + nbytes, _base + _size), total)

            entries = [(t, d, s) for t, d, s, *_ in plan]
            write_safetensors(tmp / part, entries, _tensors(reader, plan), on_tensor)
            written.append((part, entries))
            done_files += size
    missing = sorted(set(expected) - seen)
    if missing:
        raise GlmdeskError(
            "corrupt_weights",
            f"The checkpoint in {src} lacks {len(missing)} tensor(s) its config.json calls for, "
            f"e.g. {missing[0]}; the download may be incomplete.",
            path=str(src),
            file="",
            detail=f"missing {missing[0]}",
        )
    return written


def _write_metadata(src: Path, tmp: Path, config: dict[str, Any], family: str, written) -> str:
    n = len(written)
    weight_map: dict[str, str] = {}
    total_size = 0
    dtypes: dict[str, int] = {}
    for k, (part, entries) in enumerate(written, start=1):
        name = "model.safetensors" if n == 1 else f"model-{k:05d}-of-{n:05d}.safetensors"
        os.rename(tmp / part, tmp / name)
        for target, dtype, shape in entries:
            weight_map[target] = name
            numel = 1
            for d in shape:
                numel *= d
            nbytes = numel * ST_SIZES[dtype]
            total_size += nbytes
            dtypes[dtype] = dtypes.get(dtype, 0) + nbytes
    if n > 1:
        index = {"metadata": {"total_size": total_size}, "weight_map": dict(sorted(weight_map.items()))}
        (tmp / "model.safetensors.index.json").write_text(json.dumps(index, indent=2), encoding="utf-8")
    dtype = _DTYPE_NAMES[max(dtypes, key=lambda d: dtypes[d])] if dtypes else "float32"
    cfg = glm_config(config, family, dtype, tokenizer_stop_ids(src, family))
    (tmp / "config.json").write_text(json.dumps(cfg, indent=2), encoding="utf-8")
    gen = {"eos_token_id": cfg["eos_token_id"], "pad_token_id": cfg["pad_token_id"], "do_sample": False}
    (tmp / "generation_config.json").write_text(json.dumps(gen, indent=2), encoding="utf-8")
    for name in TOKENIZER_FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, tmp / name)
    marker = {
        "converter_version": CONVERTER_VERSION,
        "family": family,
        "source": str(src),
        "source_weights": [part for part, _ in written],
    }
    (tmp / MARKER_FILE).write_text(json.dumps(marker, indent=2), encoding="utf-8")
    return dtype


_DTYPE_NAMES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16"}
