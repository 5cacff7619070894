#!/usr/bin/env bash
# Build the bundle, then check the frozen app on this machine (offscreen, no display):
#
#   1. `glmdesk --self-test` with an empty user cache (first start: converts the bundled
#      GGUF into the cache), then again (every later start): exit 0, "Paris" in the answer;
#   2. the window starts and keeps running for 20 s (offscreen);
#   3. the code interpreter's kernel: the frozen executable started as a kernel
#      (`glmdesk --glmdesk-kernel ...`, as the app starts it) runs one cell, with its
#      memory limit, through jupyter_client in the bundled app itself, then a cell that
#      plots with matplotlib: a PNG image must come back;
#   4. `--install-desktop-entry` into a temporary XDG_DATA_HOME points Exec at the frozen
#      executable and the entry validates; `--uninstall-desktop-entry` removes it.
#
# Linux only (the Windows and macOS bundles are untested). Prints the bundle size and the time from start to first token. Not part of the test
# run: the build takes several minutes.
#
#   packaging/check_bundle.sh              # build, then check
#   packaging/check_bundle.sh --no-build   # check the existing dist/glmdesk
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" != "--no-build" ]; then
    packaging/build.sh --clean
fi

APP=dist/glmdesk/glmdesk
[ -x "$APP" ] || { echo "no bundle at $APP: run packaging/build.sh" >&2; exit 2; }
export QT_QPA_PLATFORM=offscreen
unset GLMDESK_MODEL_CACHE
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export GLMDESK_HOME="$WORK/home"   # user data, cache and config of this check only
failed=0

size=$(du -sm dist/glmdesk | cut -f1)
files=$(find dist/glmdesk -type f | wc -l)
echo "== bundle: dist/glmdesk, ${size} MiB on disk, ${files} files"
{ du -sm dist/glmdesk/_internal/* 2>/dev/null | sort -rn | head -8 | sed "s/^/   /"; } || true

self_test() {  # $1: label
    local log="$WORK/selftest-$1.log" t0 t1 rc=0
    t0=$(date +%s.%N)
    "$APP" --self-test >"$log" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    echo "== self-test ($1): exit $rc, wall $(awk "BEGIN{printf \"%.1f\", $t1 - $t0}") s"
    grep -E "^self-test:" "$log" | sed 's/^/   /'
    if [ "$rc" -ne 0 ] || ! grep -q "Paris" "$log"; then
        echo "   FAILED; output:" && tail -40 "$log" | sed 's/^/   | /'
        failed=1
    fi
}
self_test "first start, converts the model"
self_test "second start, cached model"

echo "== window: start offscreen, expect it still running after 20 s"
rc=0
timeout 20 "$APP" >"$WORK/gui.log" 2>&1 || rc=$?
if [ "$rc" -eq 124 ]; then
    echo "   ok (still running at 20 s; stopped)"
else
    echo "   FAILED: exited with $rc before 20 s" && tail -30 "$WORK/gui.log" | sed 's/^/   | /'
    failed=1
fi

echo "== code interpreter: one cell and one plot in the bundled app's kernel"
rc=0
"$APP" --check-interpreter >"$WORK/kernel.log" 2>&1 || rc=$?
grep "^check-interpreter:" "$WORK/kernel.log" | sed 's/^/   /'
if [ "$rc" -ne 0 ] || ! grep -q "^check-interpreter: ok" "$WORK/kernel.log" \
    || ! grep -q "^check-interpreter: plot ok: matplotlib returned a PNG of" "$WORK/kernel.log"; then
    echo "   FAILED (exit $rc)"; tail -20 "$WORK/kernel.log" | sed 's/^/   | /'; failed=1
fi

echo "== desktop entry"
export XDG_DATA_HOME="$WORK/xdg"
"$APP" --install-desktop-entry | sed 's/^/   /'
entry="$XDG_DATA_HOME/applications/glmdesk.desktop"
exec_line=$(grep '^Exec=' "$entry")
if [ "$exec_line" != "Exec=$(realpath "$APP")" ]; then
    echo "   FAILED: $exec_line does not name $(realpath "$APP")"; failed=1
fi
if command -v desktop-file-validate >/dev/null; then
    desktop-file-validate "$entry" && echo "   desktop-file-validate: ok" || failed=1
fi
"$APP" --uninstall-desktop-entry >/dev/null
if [ -n "$(find "$XDG_DATA_HOME" -type f)" ]; then
    echo "   FAILED: files left after uninstall"; failed=1
else
    echo "   uninstall removed every file"
fi

[ "$failed" -eq 0 ] && echo "== check_bundle: PASSED" || echo "== check_bundle: FAILED"
exit "$failed"
