"""llama.cpp on the benchmark shape: a Q8_0 and a Q4_K_M GGUF of a random ChatGLM3-6B.

Issue 29's llama.cpp rows, beside ``benchmarks/gpu_decode.py --table``:

1. **Write** a GGUF of the shape (architecture ``chatglm``, the layout llama.cpp's
   converter gives ChatGLM3: fused ``attn_qkv`` with bias, fused ``ffn_up`` = gate and
   up, 2 KV heads, half the head rotated) with random weights and a byte-level
   vocabulary padded to the shape's 65,024 tokens, with the ``gguf`` package: F16
   tensors, or Q8_0 blocks written by ``gguf.quants`` (``--q8-python``: numpy, slow for
   6B weights; kept for the check that gguf's own Q8_0 loads).
2. **Quantize** with llama.cpp itself: ``llama_model_quantize`` from llama-cpp-python's
   C API (the library the wheel ships; no ``llama-quantize`` binary is needed), F16 to
   Q8_0 (ftype 7) and to Q4_K_M (ftype 15; the K-quant mix chooses Q6_K for some
   tensors, llama.cpp's ``llama_model_quantize_impl``).
3. **Decode**: all layers offloaded (``n_gpu_layers=-1``, flash attention on), a random
   prompt evaluated in 2,048-token batches to each context, then ``--new`` greedy tokens
   one by one (``eval`` + argmax of the last logits): tokens/s, and the copy bound from
   the file's size.

Run: ``python benchmarks/gpu_llamacpp.py [--contexts 1024 8192 32768] [--dir /tmp/gguf]``;
``--smoke`` writes a tiny shape and runs it on the CPU build (figures mean nothing).
"""

from __future__ import annotations

import argparse
import ctypes
import time
from pathlib import Path

import numpy as np

CHATGLM3_6B = {"n_vocab": 65024, "n_embd": 4096, "n_ff": 13696, "n_layer": 28, "n_head": 32, "n_kv": 2}
TINY = {"n_vocab": 1024, "n_embd": 256, "n_ff": 512, "n_layer": 2, "n_head": 4, "n_kv": 2}
SPECIALS = ["<|endoftext|>", "[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>", "<|user|>"]
SPECIALS += ["<|assistant|>", "<|observation|>"]


def byte_symbols() -> list[str]:
    """GPT-2's byte-to-unicode table (the byte-level BPE alphabet), as 256 symbols."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    extra = iter(range(256, 512))
    return [chr(b) if b in keep else chr(next(extra)) for b in range(256)]


class Weights:
    """Random-looking weights made fast: one random block of 2**22 values, tiled and
    offset per tensor (decode speed does not depend on the values)."""

    def __init__(self, seed: int = 0) -> None:
        self.block = (np.random.default_rng(seed).standard_normal(2**22) * 0.02).astype(np.float32)
        self.count = 0

    def __call__(self, *shape: int) -> np.ndarray:
        n = int(np.prod(shape))
        self.count += 1
        reps = -(-n // self.block.size)
        return np.roll(np.tile(self.block, reps)[:n], self.count).reshape(shape)


def write_gguf(path: Path, shape: dict, q8_python: bool = False, context: int = 131072) -> Path:
    """Write the shape's GGUF to ``path``: F16 tensors (norms and biases F32), or Q8_0
    blocks quantized by ``gguf.quants`` when ``q8_python``. Returns ``path``."""
    import gguf

    n_vocab, n_embd, n_ff, n_layer = shape["n_vocab"], shape["n_embd"], shape["n_ff"], shape["n_layer"]
    n_head, n_kv = shape["n_head"], shape["n_kv"]
    head = n_embd // n_head
    merges = ["Ġ t", "h e"]
    base = byte_symbols() + [m.replace(" ", "") for m in merges]
    pad = [f"<pad{i}>" for i in range(n_vocab - len(base) - len(SPECIALS))]
    tokens = base + pad + SPECIALS
    types = [gguf.TokenType.NORMAL] * (len(base) + len(pad)) + [gguf.TokenType.CONTROL] * len(SPECIALS)
    w = gguf.GGUFWriter(str(path), "chatglm")
    w.add_name("random-chatglm3-shape")
    w.add_context_length(context)
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(n_ff)
    w.add_block_count(n_layer)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(head // 2)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("chatglm-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_eos_token_id(tokens.index("<|endoftext|>"))
    w.add_pad_token_id(tokens.index("<|endoftext|>"))
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if q8_python else gguf.LlamaFileType.MOSTLY_F16)
    rand = Weights()

    def matrix(name: str, rows: int, cols: int) -> None:
        data = rand(rows, cols)
        if q8_python:
            kind = gguf.GGMLQuantizationType.Q8_0
            w.add_tensor(name, gguf.quants.quantize(data, kind), raw_dtype=kind)
        else:
            w.add_tensor(name, data.astype(np.float16))

    def vector(name: str, n: int, value: float | None = None) -> None:
        w.add_tensor(name, np.full(n, value, dtype=np.float32) if value is not None else rand(n))

    matrix("token_embd.weight", n_vocab, n_embd)
    vector("output_norm.weight", n_embd, 1.0)
    matrix("output.weight", n_vocab, n_embd)
    qkv = n_embd + 2 * n_kv * head
    for i in range(n_layer):
        vector(f"blk.{i}.attn_norm.weight", n_embd, 1.0)
        matrix(f"blk.{i}.attn_qkv.weight", qkv, n_embd)
        vector(f"blk.{i}.attn_qkv.bias", qkv)
        matrix(f"blk.{i}.attn_output.weight", n_embd, n_embd)
        vector(f"blk.{i}.ffn_norm.weight", n_embd, 1.0)
        matrix(f"blk.{i}.ffn_up.weight", 2 * n_ff, n_embd)
        matrix(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def llama_quantize(src: Path, dst: Path, ftype: int, threads: int = 0) -> Path:
    """``llama_model_quantize(src -> dst)`` with llama.cpp's ftype (7 Q8_0, 15 Q4_K_M).

    Raises:
        RuntimeError: when llama.cpp returns an error code.
    """
    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = threads
    code = llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params))
    if code != 0:
        raise RuntimeError(f"llama_model_quantize({src.name} -> {dst.name}, ftype {ftype}) returned {code}")
    return dst


def decode_rows(path: Path, contexts: list[int], new: int, gpu: bool) -> list[tuple[int, float]]:
    """``(context, tokens/s)`` for one growing sequence in ``path`` (see the docstring)."""
    import llama_cpp

    n_ctx = max(contexts) + new * len(contexts) + 16
    llm = llama_cpp.Llama(
        model_path=str(path),
        n_ctx=n_ctx,
        n_batch=2048,
        n_ubatch=512,
        n_gpu_layers=-1 if gpu else 0,
        flash_attn=gpu,
        verbose=False,
        seed=0,
    )
    rng = np.random.default_rng(0)
    rows, done = [], 0
    vocab = llm.n_vocab() - len(SPECIALS)
    for context in contexts:
        llm.eval(rng.integers(0, vocab, context - done).tolist())
        token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        for _ in range(3):  # warm-up at this length
            llm.eval([token])
            token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        started = time.perf_counter()
        for _ in range(new):
            llm.eval([token])
            token = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        rows.append((context, new / (time.perf_counter() - started)))
        done = context + new + 3
    llm.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--contexts", type=int, nargs="+", default=[1024, 8192, 32768])
    parser.add_argument("--new", type=int, default=32)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/glmdesk-gguf"))
    parser.add_argument("--q8-python", action="store_true", help="write Q8_0 with gguf.quants, not llama.cpp")
    parser.add_argument(
        "--bandwidth", type=float, default=0.0, help="copy GB/s (default: measured with torch)"
    )
    parser.add_argument("--smoke", action="store_true", help="a tiny shape on the CPU")
    args = parser.parse_args()
    import llama_cpp

    gpu = bool(llama_cpp.llama_supports_gpu_offload())
    shape = TINY if args.smoke else CHATGLM3_6B
    if args.smoke:
        args.contexts, args.new = [64, 256], min(args.new, 8)
    elif not gpu:
        print("skipped: this llama-cpp-python has no GPU offload (scripts/build-llamacpp-cuda builds one)")
        return
    args.dir.mkdir(parents=True, exist_ok=True)
    name = "tiny" if args.smoke else "chatglm3-6b"
    files = {}
    started = time.perf_counter()
    f16 = write_gguf(args.dir / f"{name}-f16.gguf", shape)
    print(
        f"wrote {f16.name} ({f16.stat().st_size / 2**20:.0f} MiB) with gguf in {time.perf_counter() - started:.1f} s"
    )
    if args.q8_python or args.smoke:
        started = time.perf_counter()
        files["Q8_0 (gguf.quants)"] = write_gguf(args.dir / f"{name}-q8_0-gguf.gguf", shape, q8_python=True)
        print(f"wrote Q8_0 with gguf.quants in {time.perf_counter() - started:.1f} s")
    for label, ftype, suffix in (("Q8_0 (llama.cpp)", 7, "q8_0"), ("Q4_K_M (llama.cpp)", 15, "q4_k_m")):
        started = time.perf_counter()
        files[label] = llama_quantize(f16, args.dir / f"{name}-{suffix}.gguf", ftype)
        print(f"quantized {label} with llama_model_quantize in {time.perf_counter() - started:.1f} s")
    f16.unlink()
    if not args.bandwidth and gpu:
        import torch

        from benchmarks.gpu_decode import copy_bandwidth

        args.bandwidth = (
            copy_bandwidth(torch.device("cuda"), 1024) / 1e9 if torch.cuda.is_available() else 0.0
        )
    print(f"llama-cpp-python {llama_cpp.__version__}, GPU offload {gpu}")
    print("| GGUF | file MiB | context | tokens/s | bound tokens/s | of bound |")
    print("|---|---:|---:|---:|---:|---:|")
    kv = 2 * shape["n_layer"] * shape["n_kv"] * (shape["n_embd"] // shape["n_head"]) * 2  # f16 K and V
    for label, path in files.items():
        size = path.stat().st_size
        for context, rate in decode_rows(path, args.contexts, args.new, gpu):
            bound = args.bandwidth * 1e9 / (size + kv * context) if args.bandwidth else float("nan")
            print(
                f"| {label} | {size / 2**20:.0f} | {context} | {rate:.1f} | {bound:.1f} | {rate / bound:.0%} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
