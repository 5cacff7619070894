#!/usr/bin/env bash
# The GPU checks in one run, sized to about five and a half minutes on one H200.
#
# Run from the repository root on a CUDA machine whose python3 has torch (a CUDA
# build) and the project's other engine dependencies. Wheels in .whl/ (bitsandbytes,
# the pinned transformers, platformdirs, gguf), when present, are installed into
# /tmp/site first: a machine with no package index can take them that way.
#
#   1. tests/engine/chatglm/test_gpu.py and the NVML test: the app's backend places
#      tiny ChatGLM3 / GLM-4 folders on cuda:0 in bf16, LLM.int8 and NF4, streams,
#      runs each KV strategy and reuse, and the gauge reads the card.
#   2. benchmarks/gpu_decode.py: ChatGLM3-6B shape, bf16 at 1K and 8K with glmdesk's
#      attention kernels, with cuDNN's attention allowed, and transformers' StaticCache
#      under CUDA graphs, against the measured copy-bandwidth bound (issue 10).
#   3. benchmarks/gpu_decode.py --strategies: the KV strategies at 8K-128K, 128K
#      prefill in chunks, peak memory (issue 5).
#   4. NF4 / INT8 / bf16 decode at 1K, 8K and 32K (issue 10).
#
# Each part has its own time limit; logs go to $OUT (default /tmp/gpu-session).
#
# The wheels, made on a machine with an index (bitsandbytes' wheel holds a library per
# CUDA version: keep the machine's, e.g. cuda130/132 for torch +cu130, to stay small):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 -d .whl \
#       bitsandbytes==0.50.2 transformers==5.24.0 platformdirs gguf
#   zip -d .whl/bitsandbytes-*.whl 'bitsandbytes/libbitsandbytes_cuda11*' \
#       'bitsandbytes/libbitsandbytes_cuda12*' 'bitsandbytes/libbitsandbytes_rocm*' 'bitsandbytes/libbitsandbytes_xpu*'
# Measured 2026-11-30 on an H200 with these: README, "Measured on a GPU".
set -u
OUT=${OUT:-/tmp/gpu-session}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PYTHONPATH=$PWD
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
    tail -n 40 "$OUT/$name.txt"
}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -c "import torch, transformers, bitsandbytes as b; print('torch', torch.__version__, 'transformers', transformers.__version__, 'bitsandbytes', b.__version__)"
part tests 45 python3 -m pytest -q -p no:cacheprovider -o addopts=--import-mode=importlib \
    tests/engine/chatglm/test_gpu.py tests/engine/test_memory_device.py
part graphs 110 python3 benchmarks/gpu_decode.py --kinds bf16 --cudnn --cuda-graph --contexts 1024 8192 --new 32
part strategies 80 python3 benchmarks/gpu_decode.py --strategies --new 16
part decode 95 python3 benchmarks/gpu_decode.py --kinds nf4 int8 bf16 --new 32
echo "== done at $(($(date +%s) - start))s"
