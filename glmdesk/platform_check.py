"""Can Qt open a window here? Checked before the window starts (``scripts/run-app``).

On a minimal Linux without, for example, ``libxcb-icccm4`` and ``libxcb-keysyms1``,
Qt aborts the whole process (exit 134) with a message that blames ``xcb-cursor0``
(issue 19). This module starts a tiny ``QGuiApplication`` in a subprocess; when it
fails it names the missing libraries from ``ldd`` of Qt's platform plugin and prints
the exact ``apt-get install`` line; with no display at all it suggests ``xvfb-run``
or the terminal chat. No Qt is imported in this process.

Run: ``python -m glmdesk.platform_check`` (exit 0: the window can open; 1: it cannot).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

#: What the probe runs: create the application object, which loads the platform plugin.
PROBE = "from PySide6.QtGui import QGuiApplication; QGuiApplication([])"
_SONAME = re.compile(r"^\s*(\S+\.so(?:\.\d+)*)\s+=>\s+not found", re.M)


def debian_package(soname: str) -> str:
    """The Debian/Ubuntu package that ships a shared library, by the naming policy
    (https://www.debian.org/doc/debian-policy/ch-sharedlibs.html): ``libfoo.so.1`` is in
    ``libfoo1``; a name ending in a digit takes a hyphen (``libxkbcommon-x11.so.0`` is
    in ``libxkbcommon-x11-0``); package names are lower case.
    """
    match = re.match(r"^(.+?)\.so\.(\d+)", soname)
    if not match:
        return soname.split(".so")[0].lower()
    name, major = match.group(1).lower(), match.group(2)
    return f"{name}-{major}" if name[-1].isdigit() else f"{name}{major}"


def plugin_files() -> list[Path]:
    """Qt's xcb platform plugin and the Qt library it loads, from the installed PySide6."""
    import importlib.util

    spec = importlib.util.find_spec("PySide6")
    if spec is None or spec.origin is None:
        return []
    qt = Path(spec.origin).parent / "Qt"
    files = [qt / "plugins" / "platforms" / "libqxcb.so", *sorted((qt / "lib").glob("libQt6XcbQpa.so*"))[:1]]
    return [f for f in files if f.exists()]


def not_found(ldd_output: str) -> list[str]:
    """The sonames ``ldd`` printed as "not found", each once, in first-seen order.

    glibc's ``ldd`` prints a missing library once for every object in the dependency tree that
    needs it (``libqxcb.so`` and ``libQt6XcbQpa.so.6`` both need ``libxcb-icccm.so.4``), so the
    raw lines repeat names.
    """
    return list(dict.fromkeys(_SONAME.findall(ldd_output)))


def missing_libraries(files: list[Path] | None = None) -> list[str]:
    """Shared libraries ``ldd`` reports as "not found" for ``files`` (default: :func:`plugin_files`),
    each named once across all the files."""
    missing: dict[str, None] = {}
    for path in plugin_files() if files is None else files:
        try:
            out = subprocess.run(["ldd", str(path)], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            continue
        missing.update(dict.fromkeys(not_found(out)))
    return list(missing)


def sudo_prefix(euid: int | None = None, sudo: str | None = "") -> str:
    """``"sudo "`` before an install command for a user who needs it, else ``""``: root
    (effective uid 0) installs as it is, and where no ``sudo`` is on ``PATH`` (a container)
    printing it would only fail.

    Args:
        euid: The effective user id (default: this process's, ``os.geteuid``).
        sudo: The path of ``sudo`` or ``None`` for none (default: ``shutil.which("sudo")``).
    """
    if euid is None:
        euid = os.geteuid() if hasattr(os, "geteuid") else 1
    if sudo == "":
        sudo = shutil.which("sudo")
    return "" if euid == 0 or sudo is None else "sudo "


def advice(
    returncode: int, qt_message: str, env: dict[str, str], missing: list[str], sudo: str | None = None
) -> str:
    """The sentences for a failed probe.

    Args:
        returncode: The probe's exit status (134 when Qt aborted).
        qt_message: What Qt printed.
        env: The environment the app would run with.
        missing: Libraries ``ldd`` could not find.
        sudo: What goes before ``apt-get`` (default: :func:`sudo_prefix`).
    """
    sudo = sudo_prefix() if sudo is None else sudo
    lines = ["glmdesk cannot open its window: Qt's platform plugin did not load."]
    if missing:
        missing = list(dict.fromkeys(missing))
        packages = " ".join(dict.fromkeys(debian_package(name) for name in missing))
        lines += [
            f"These system libraries are missing: {', '.join(missing)}.",
            "On Debian or Ubuntu install them with:",
            f"    {sudo}apt-get install -y {packages}",
        ]
    no_display = not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY") and not env.get("QT_QPA_PLATFORM")
    if no_display:
        lines += [
            "There is no display (DISPLAY and WAYLAND_DISPLAY are not set). Run the window on a virtual",
            "display with  xvfb-run scripts/run-app  (package xvfb), or chat in the terminal:",
            "    scripts/run-app chat",
        ]
    elif not missing:
        lines += [
            f"Qt said (exit status {returncode}):",
            *("    " + line for line in qt_message.strip().splitlines()[-6:]),
            "You can still chat in the terminal:  scripts/run-app chat",
        ]
    else:
        lines.append("Meanwhile you can chat in the terminal:  scripts/run-app chat")
    return "\n".join(lines)


def check(env: dict[str, str] | None = None, timeout_s: float = 60.0) -> tuple[bool, str]:
    """Try to create a ``QGuiApplication`` in a subprocess.

    Returns:
        ``(ok, advice)``; ``advice`` is empty when ``ok``.
    """
    env = dict(os.environ if env is None else env)
    try:
        probe = subprocess.run(
            [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired:
        return False, "glmdesk cannot open its window: Qt's platform plugin did not answer within a minute."
    if probe.returncode == 0:
        return True, ""
    return False, advice(probe.returncode, probe.stderr, env, missing_libraries())


def main() -> int:
    """Print advice and return 1 when the window cannot open, else 0."""
    ok, text = check()
    if not ok:
        print(text, file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
