"""Conversion time and peak memory for a synthetic ChatGLM3-shaped checkpoint.

Writes a THUDM-layout checkpoint at full ChatGLM3-6B width (hidden 4096, 32 heads,
2 KV groups, ffn 13696, vocab 65024, fp16) with fewer layers, one shard for the
embedding, one per layer and one for the output layer (like THUDM's shards, the
largest about 0.5 GB), converts it in a child process and prints:

- bytes on disk, largest shard, wall time and throughput (MB/s);
- the child's peak RSS (sampled every millisecond in a thread) and its RSS right
  before converting (interpreter + torch), and the ratio of the increase to the
  largest shard;
- the throughput of a plain file copy of the same shards, for scale.

Goal (issue 4): bounded by disk speed; peak RSS at most the largest shard + 20%.

Usage: ``python benchmarks/convert.py [--layers 1] [--format safetensors|bin|both]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# ru_maxrss / VmHWM are inherited across fork+exec on Linux (the child would report the
# parent's peak after writing the checkpoint), so the child samples its RSS in a thread.
CHILD = r"""
import json, sys, threading, time
import psutil
import glmdesk.engine.chatglm as c
src, dst = sys.argv[1], sys.argv[2]
proc = psutil.Process()
peak = [0]
done = threading.Event()
def sample():
    while not done.is_set():
        peak[0] = max(peak[0], proc.memory_info().rss)
        time.sleep(0.001)
before = proc.memory_info().rss
thread = threading.Thread(target=sample, daemon=True)
thread.start()
t = time.perf_counter()
c.convert_checkpoint(src, dst)
wall = time.perf_counter() - t
done.set()
thread.join()
print(json.dumps({"wall_s": wall, "rss_before": before, "peak_rss": max(peak[0], before)}))
"""


def make_checkpoint(folder: Path, layers: int, fmt: str) -> list[Path]:
    """Write the synthetic checkpoint; return its shard files."""
    import torch
    from safetensors.torch import save_file

    h, ffn, vocab, heads, groups, hd = 4096, 13696, 65024, 32, 2, 128
    qkv = heads * hd + 2 * groups * hd
    g = torch.Generator().manual_seed(0)

    def rnd(*shape):
        return (torch.rand(*shape, generator=g, dtype=torch.float32) - 0.5).to(torch.float16)

    shards: list[dict] = [{"transformer.embedding.word_embeddings.weight": rnd(vocab, h)}]
    for n in range(layers):
        p = f"transformer.encoder.layers.{n}."
        shards.append(
            {
                p + "input_layernorm.weight": rnd(h),
                p + "self_attention.query_key_value.weight": rnd(qkv, h),
                p + "self_attention.query_key_value.bias": rnd(qkv),
                p + "self_attention.dense.weight": rnd(h, heads * hd),
                p + "post_attention_layernorm.weight": rnd(h),
                p + "mlp.dense_h_to_4h.weight": rnd(2 * ffn, h),
                p + "mlp.dense_4h_to_h.weight": rnd(h, ffn),
            }
        )
    shards.append(
        {
            "transformer.encoder.final_layernorm.weight": rnd(h),
            "transformer.output_layer.weight": rnd(vocab, h),
            "transformer.rotary_pos_emb.inv_freq": rnd(32),
        }
    )
    files, weight_map = [], {}
    for i, shard in enumerate(shards, start=1):
        if fmt == "bin":
            name = f"pytorch_model-{i:05d}-of-{len(shards):05d}.bin"
            torch.save(shard, folder / name)
        else:
            name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
            save_file(shard, str(folder / name), metadata={"format": "pt"})
        weight_map.update(dict.fromkeys(shard, name))
        files.append(folder / name)
        shard.clear()
    index = "pytorch_model.bin.index.json" if fmt == "bin" else "model.safetensors.index.json"
    (folder / index).write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    config = {
        "_name_or_path": "THUDM/chatglm3-6b",
        "model_type": "chatglm",
        "architectures": ["ChatGLMModel"],
        "add_bias_linear": False,
        "add_qkv_bias": True,
        "ffn_hidden_size": ffn,
        "hidden_size": h,
        "kv_channels": hd,
        "layernorm_epsilon": 1e-5,
        "multi_query_attention": True,
        "multi_query_group_num": groups,
        "num_attention_heads": heads,
        "num_layers": layers,
        "original_rope": True,
        "padded_vocab_size": vocab,
        "post_layer_norm": True,
        "rmsnorm": True,
        "seq_length": 8192,
        "torch_dtype": "float16",
    }
    (folder / "config.json").write_text(json.dumps(config))
    return files


def copy_speed(files: list[Path], dst: Path) -> float:
    """Plain copy throughput of ``files`` (read + write, as a conversion does), in MB/s."""
    dst.mkdir()
    t = time.perf_counter()
    n = 0
    for f in files:
        n += shutil.copyfile(f, dst / f.name).stat().st_size
    speed = n / 1e6 / (time.perf_counter() - t)
    shutil.rmtree(dst)
    return speed


def run(fmt: str, layers: int, root: Path) -> None:
    src = root / f"src-{fmt}"
    src.mkdir()
    t = time.perf_counter()
    files = make_checkpoint(src, layers, fmt)
    made = time.perf_counter() - t
    disk = sum(f.stat().st_size for f in files)
    largest = max(f.stat().st_size for f in files)
    mbps_copy = copy_speed(files, root / f"copy-{fmt}")
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(src), str(root / f"dst-{fmt}")],
        capture_output=True,
        text=True,
        check=True,
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    grow = r["peak_rss"] - r["rss_before"]
    mib = 2**20
    print(
        f"[{fmt}] {layers} layer(s) at ChatGLM3-6B width, fp16, {len(files)} shards (written in {made:.1f} s)"
    )
    print(f"  bytes on disk      {disk / mib:9.1f} MiB   largest shard {largest / mib:.1f} MiB")
    print(
        f"  conversion time    {r['wall_s']:9.2f} s     {disk / 1e6 / r['wall_s']:.0f} MB/s "
        f"(plain copy of the same files: {mbps_copy:.0f} MB/s)"
    )
    print(f"  RSS before / peak  {r['rss_before'] / mib:9.1f} / {r['peak_rss'] / mib:.1f} MiB")
    print(
        f"  peak - before      {grow / mib:9.1f} MiB = {grow / largest:.2f} x largest shard, "
        f"{grow / disk:.2f} x bytes on disk, peak/(largest+before) = "
        f"{r['peak_rss'] / (largest + r['rss_before']):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--format", choices=("safetensors", "bin", "both"), default="both")
    parser.add_argument("--dir", type=Path, default=None, help="work directory (default: a temp dir)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for fmt in ("safetensors", "bin") if args.format == "both" else (args.format,):
            run(fmt, args.layers, Path(tmp))


if __name__ == "__main__":
    main()
