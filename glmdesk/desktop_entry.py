"""``glmdesk --install-desktop-entry`` / ``--uninstall-desktop-entry``: the app menu entry.

Writes ``glmdesk.desktop`` into ``$XDG_DATA_HOME/applications`` and the icon set into
``$XDG_DATA_HOME/icons/hicolor/<N>x<N>/apps`` (``$XDG_DATA_HOME`` defaults to
``~/.local/share``), as the freedesktop.org Desktop Entry and Icon Theme
specifications describe. No root is needed. ``Exec`` points at the installation
that runs the command:

- the frozen executable of a PyInstaller bundle (``sys.executable``);
- else the ``glmdesk`` script that pip installed with this distribution (found in
  its RECORD, so a venv, ``--user`` or system install each get their own);
- else ``<this python> -m glmdesk``, run from the folder holding the package (a
  source checkout that was never installed).

Both commands are idempotent: installing again overwrites, removing what is absent
is not an error.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from glmdesk.resources import resource_path

APP_ID = "glmdesk"
ICON_SIZES = (16, 22, 24, 32, 48, 64, 96, 128, 256, 512)
# Characters that make the Desktop Entry spec require an argument to be quoted.
_RESERVED = re.compile(r"[\s\"'\\><~|&;$*?#()`]")


def data_home() -> Path:
    """``$XDG_DATA_HOME`` when set to an absolute path, else ``~/.local/share``."""
    value = os.environ.get("XDG_DATA_HOME", "")
    if value and os.path.isabs(value):
        return Path(value)
    return Path.home() / ".local" / "share"


def desktop_file_path() -> Path:
    """Where the entry is written: ``<data home>/applications/glmdesk.desktop``."""
    return data_home() / "applications" / f"{APP_ID}.desktop"


def icon_paths() -> dict[Path, Path]:
    """Installed icon path -> source file in the resources, for every size and the SVG."""
    hicolor = data_home() / "icons" / "hicolor"
    out = {
        hicolor / f"{n}x{n}" / "apps" / f"{APP_ID}.png": resource_path("icons", f"glmdesk-{n}.png")
        for n in ICON_SIZES
    }
    out[hicolor / "scalable" / "apps" / f"{APP_ID}.svg"] = resource_path("icons", "glmdesk.svg")
    return out


def _installed_script() -> Path | None:
    """The ``glmdesk`` script that pip installed with this distribution, when it exists.

    Looks in the RECORD of each installed ``glmdesk`` distribution (a source tree's
    ``glmdesk.egg-info`` lists no scripts and is passed over), then in this
    interpreter's scripts folder.
    """
    for dist in importlib.metadata.distributions(name="glmdesk"):
        for entry in dist.files or ():
            if entry.name in ("glmdesk", "glmdesk.exe") and len(entry.parts) > 1:
                path = Path(os.path.normpath(str(dist.locate_file(entry))))
                if path.is_file() and os.access(path, os.X_OK):
                    return path
    path = Path(sysconfig.get_path("scripts")) / ("glmdesk.exe" if os.name == "nt" else "glmdesk")
    return path if path.is_file() and os.access(path, os.X_OK) else None


def launch_command() -> tuple[list[str], Path | None]:
    """The command that starts this installation, and a working folder when one is needed.

    Returns:
        ``(argv, working folder or None)``.
    """
    if getattr(sys, "frozen", False):
        return [str(Path(sys.executable).resolve())], None
    script = _installed_script()
    if script is not None:
        return [str(script)], None
    package_parent = Path(__file__).resolve().parent.parent
    return [sys.executable, "-m", "glmdesk"], package_parent


def exec_value(argv: list[str]) -> str:
    r"""Quote ``argv`` for an ``Exec`` key (Desktop Entry spec, "The Exec key").

    Arguments holding a reserved character are double-quoted, with ``"``, the
    backtick, ``$`` and ``\`` backslash-escaped inside; ``%`` is doubled (field
    codes); then the value is escaped as a desktop-file string (``\`` doubled again).
    """
    quoted = []
    for arg in argv:
        if _RESERVED.search(arg):
            arg = '"' + re.sub(r'(["`$\\])', r"\\\1", arg) + '"'
        quoted.append(arg.replace("%", "%%"))
    return " ".join(quoted).replace("\\", "\\\\")


def _string_value(text: str) -> str:
    r"""Escape a value of type string (``\``, newline, tab, carriage return)."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


def render_entry(argv: list[str], workdir: Path | None) -> str:
    """The template ``resources/glmdesk.desktop`` with ``Exec``/``TryExec``/``Path`` filled in."""
    lines = []
    for line in resource_path("glmdesk.desktop").read_text(encoding="utf-8").splitlines():
        key = line.split("=", 1)[0].strip()
        if key == "Exec":
            line = f"Exec={exec_value(argv)}"
        elif key == "TryExec":
            line = f"TryExec={_string_value(argv[0])}"
        elif key == "Path":
            continue
        lines.append(line)
        if key == "Exec" and workdir is not None:
            lines.append(f"Path={_string_value(str(workdir))}")
    return "\n".join(lines) + "\n"


def _write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file, then rename), mode 0644."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _refresh_icon_cache() -> None:
    """Refresh the user's ``hicolor/icon-theme.cache`` when one exists; never create one.

    A stale cache would hide the new icon from GTK desktops.
    """
    hicolor = data_home() / "icons" / "hicolor"
    tool = shutil.which("gtk-update-icon-cache")
    if tool and (hicolor / "icon-theme.cache").is_file():
        subprocess.run([tool, "-q", "-t", "-f", str(hicolor)], check=False, timeout=60)


def install_entry() -> int:
    """Write the .desktop file and the icons; print what was written."""
    argv, workdir = launch_command()
    desktop = desktop_file_path()
    _write(desktop, render_entry(argv, workdir).encode("utf-8"))
    print(f"wrote {desktop}")
    print(f"  Exec={exec_value(argv)}" + (f" (in {workdir})" if workdir else ""))
    icons = icon_paths()
    for target, source in icons.items():
        _write(target, source.read_bytes())
    print(
        f"wrote {len(icons)} icons under {data_home() / 'icons' / 'hicolor'} (sizes {ICON_SIZES[0]} to "
        f"{ICON_SIZES[-1]} px and scalable)"
    )
    _refresh_icon_cache()
    return 0


def uninstall_entry() -> int:
    """Remove the .desktop file and the icons; print what was removed."""
    removed = 0
    for path in [desktop_file_path(), *icon_paths()]:
        if path.is_file() or path.is_symlink():
            path.unlink()
            removed += 1
            print(f"removed {path}")
    if removed:
        _refresh_icon_cache()
    else:
        print(f"nothing to remove: no glmdesk menu entry under {data_home()}")
    return 0


def main(install: bool) -> int:
    """Install (``install=True``) or remove the menu entry for the current user.

    Returns:
        0 on success, 1 when a file could not be written or removed, 2 on Windows
        and macOS, whose bundles carry their own icon and launcher.
    """
    if sys.platform in ("win32", "darwin"):
        print(
            "The desktop entry is for Linux and other freedesktop.org desktops; on Windows and "
            "macOS use the app bundle built by packaging/build.sh.",
            file=sys.stderr,
        )
        return 2
    try:
        return install_entry() if install else uninstall_entry()
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
