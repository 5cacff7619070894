#!/usr/bin/env bash
# The GPU checks and issue 29's whole table in one run, sized to at most six minutes on
# one H200 (the part limits below add up to 355 s; sized from the 2026-11-30 session's
# timings, not yet run as a whole on a GPU).
#
# Run from the repository root on a CUDA machine whose python3 has torch (a CUDA
# build) and the project's other engine dependencies. Wheels in .whl/ are installed
# into /tmp/site first: a machine with no package index takes them that way.
#
#   1. tests (40 s): tests/engine/chatglm/test_gpu.py, the NVML test, the torchao tests,
#      and the static path's tests when this checkout has them.
#   2. table-6b (110 s): ChatGLM3-6B shape, bf16 at 1K/8K/32K/128K: glmdesk eager,
#      glmdesk's static path, transformers' compiled StaticCache (ratio), every KV
#      strategy against the full cache, TTFT of 8K and 32K prompts, compile time,
#      recompiles, peak memory, share of the copy bound.
#   3. quant-6b (100 s): the same shape at 1K and 32K with torchao int8 / int4 /
#      int4-HQQ and bitsandbytes LLM.int8 / NF4 beside bf16, the ratios to bf16,
#      perplexity of each on the benchmark text (embedded model, real weights) and the
#      scheme the figures pick for "8-bit" and "4-bit" on CUDA.
#   4. table-9b (50 s): GLM-4-9B shape, bf16 and torchao int8 / int4 at 1K and 32K.
#   5. llamacpp (55 s): a Q8_0 and a Q4_K_M GGUF of the ChatGLM3-6B shape (written with
#      gguf, quantized by llama.cpp's llama_model_quantize), decoded by llama.cpp CUDA
#      at 1K and 8K (needs a CUDA build of llama-cpp-python: see below).
#
# Logs go to $OUT (default /tmp/gpu-session), one file per part.
#
# The wheels, made on a machine with an index (bitsandbytes' wheel holds a library per
# CUDA version: keep the machine's, e.g. cuda130/132 for torch +cu130, to stay small):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 -d .whl \
#       bitsandbytes==0.50.2 transformers==5.24.0 platformdirs gguf torchao==0.18.0
#   zip -d .whl/bitsandbytes-*.whl 'bitsandbytes/libbitsandbytes_cuda11*' \
#       'bitsandbytes/libbitsandbytes_cuda12*' 'bitsandbytes/libbitsandbytes_rocm*' 'bitsandbytes/libbitsandbytes_xpu*'
# HQQ's own package (pip download hqq==0.2.8.post1) is not needed: torchao's int4 takes
# HQQ's parameter choice itself (the "HQQ" rows). llama-cpp-python with CUDA has no
# PyPI wheel: build it where the CUDA toolkit matches the GPU machine's driver:
#   WHEEL_DIR=.whl scripts/build-llamacpp-cuda python3.12
set -u
OUT=${OUT:-/tmp/gpu-session}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PYTHONPATH=$PWD GLMDESK_LLAMACPP_BUILD=0
export GLMDESK_MODEL_CACHE=${GLMDESK_MODEL_CACHE:-/tmp/glmdesk-models}
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=$PWD:/tmp/site
fi
start=$(date +%s)
part() {  # part NAME SECONDS COMMAND...
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit}s, at $(($(date +%s) - start))s)"
    timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
    echo "rc=$?" >>"$OUT/$name.txt"
    grep -v -e '^llama_model_quantize_impl' -e '^\[ *[0-9]*/ *[0-9]*\]' "$OUT/$name.txt" | tail -n 60
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$OUT/machine.txt"
python3 -c "
import importlib.util as u, torch, transformers
print('torch', torch.__version__, 'transformers', transformers.__version__)
for name in ('bitsandbytes', 'torchao', 'llama_cpp', 'gguf'):
    print(name, 'found' if u.find_spec(name) else 'MISSING')
" | tee -a "$OUT/machine.txt"
tests=(tests/engine/chatglm/test_gpu.py tests/engine/test_memory_device.py tests/engine/decode/test_torchao_quant.py)
[ -f tests/engine/decode/test_static_decode.py ] && tests+=(tests/engine/decode/test_static_decode.py)
part tests 40 python3 -m pytest -q -p no:cacheprovider -o addopts=--import-mode=importlib "${tests[@]}"
part table-6b 110 python3 benchmarks/gpu_decode.py --table --shapes ChatGLM3-6B --table-kinds bf16 --kv \
    --cuda-graph --contexts 1024 8192 32768 131072 --new 32
part quant-6b 100 python3 benchmarks/gpu_decode.py --table --shapes ChatGLM3-6B --ttft 8192 --contexts 1024 32768 \
    --new 32 --table-kinds bf16 "torchao int8" "torchao int4 g64" "torchao int4 g64 HQQ" "bnb LLM.int8" "bnb NF4"
part table-9b 50 python3 benchmarks/gpu_decode.py --table --shapes GLM-4-9B --ttft --contexts 1024 32768 --new 32 \
    --table-kinds bf16 "torchao int8" "torchao int4 g64"
part llamacpp 55 python3 benchmarks/gpu_llamacpp.py --contexts 1024 8192 --new 32 --dir /tmp/glmdesk-gguf
rm -rf /tmp/glmdesk-gguf
echo "== done at $(($(date +%s) - start))s"
