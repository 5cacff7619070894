#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: start vLLM with a small model, run glmdesk's
# remote-backend checks (benchmarks/remote_checks.py) and the serve-overhead
# comparison's client side against it, then stop vLLM.
#
#   benchmarks/remote_vllm.sh [MODEL] [PORT]
#
# MODEL defaults to HuggingFaceTB/SmolLM2-135M-Instruct (the embedded model's original;
# any chat model vLLM serves works, e.g. zai-org/glm-4-9b-chat-hf with TP=2 set below).
# vLLM goes into its own virtual environment (.venv-vllm), apart from glmdesk's .venv;
# the first run downloads vLLM and the model. Set TP=2 for two GPUs.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MODEL=${1:-HuggingFaceTB/SmolLM2-135M-Instruct}
PORT=${2:-8123}
TP=${TP:-1}
KEY=${GLMDESK_API_KEY:-glmdesk-check-$RANDOM$RANDOM}

scripts/run-app --help >/dev/null  # makes .venv with glmdesk installed
if [ ! -x .venv-vllm/bin/vllm ]; then
    python3 -m venv .venv-vllm
    .venv-vllm/bin/python -m pip install -q --upgrade pip
    .venv-vllm/bin/python -m pip install -q vllm
fi

LOG=$(mktemp -t vllm-XXXX.log)
.venv-vllm/bin/vllm serve "$MODEL" --host 127.0.0.1 --port "$PORT" --api-key "$KEY" \
    --tensor-parallel-size "$TP" --max-model-len 4096 --gpu-memory-utilization 0.5 >"$LOG" 2>&1 &
VLLM=$!
trap 'kill $VLLM 2>/dev/null; wait $VLLM 2>/dev/null || true' EXIT

echo "waiting for vLLM (log: $LOG)"
for _ in $(seq 1 180); do  # at most 15 minutes (first start compiles and downloads)
    if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null; then break; fi
    if ! kill -0 $VLLM 2>/dev/null; then tail -40 "$LOG"; echo "vLLM exited"; exit 1; fi
    sleep 5
done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || { tail -40 "$LOG"; echo "vLLM did not start"; exit 1; }

nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader || true
GLMDESK_API_KEY="$KEY" .venv/bin/python benchmarks/remote_checks.py --url "http://127.0.0.1:$PORT/v1" --model "$MODEL"
GLMDESK_API_KEY="$KEY" .venv/bin/python -m glmdesk chat --remote "http://127.0.0.1:$PORT" --model "$MODEL" \
    --prompt "What is the capital of France?" --temperature 0 --max-new-tokens 32
