"""scripts/run-app checks that Qt can open a window and says what to install (issue 19, item 7)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from glmdesk.platform_check import (
    advice,
    check,
    debian_package,
    main,
    missing_libraries,
    plugin_files,
    sudo_prefix,
)

REPO = Path(__file__).resolve().parents[1]


def test_library_names_become_the_debian_packages_that_ship_them():
    assert debian_package("libxcb-icccm.so.4") == "libxcb-icccm4"
    assert debian_package("libxcb-keysyms.so.1") == "libxcb-keysyms1"
    assert debian_package("libxcb-cursor.so.0") == "libxcb-cursor0"
    assert debian_package("libxkbcommon-x11.so.0") == "libxkbcommon-x11-0"
    assert debian_package("libEGL.so.1") == "libegl1"
    assert debian_package("libdbus-1.so.3") == "libdbus-1-3"


def test_missing_libraries_give_the_exact_install_line():
    text = advice(
        134,
        "qt.qpa.plugin: could not load xcb",
        {"DISPLAY": ":0"},
        ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"],
        sudo="sudo ",
    )
    assert "sudo apt-get install -y libxcb-icccm4 libxcb-keysyms1" in text
    assert "libxcb-icccm.so.4" in text and "scripts/run-app chat" in text


def _shared_library(folder: Path, name: str, needs: list[str]) -> Path:
    """Compile an empty shared library ``name`` in ``folder`` that links ``needs`` (from ``folder``)."""
    source = folder / "empty.c"
    source.write_text("int glmdesk_probe(void) { return 1; }\n")
    out = folder / name
    command = ["cc", "-shared", "-fPIC", "-Wl,--no-as-needed", "-o", str(out), str(source)]
    command += [f"-Wl,-soname,{name}", f"-L{folder}", "-Wl,-rpath,$ORIGIN", *(f"-l:{n}" for n in needs)]
    subprocess.run(command, check=True, capture_output=True, timeout=60)
    return out


@pytest.mark.skipif(not (shutil.which("cc") and shutil.which("ldd")), reason="needs a C compiler and ldd")
def test_a_library_missing_under_two_dependencies_is_named_once(tmp_path, monkeypatch, capsys):
    # Like Qt's xcb plugin: the plugin and the Qt library it loads both need the absent library,
    # and glibc's ldd prints "not found" for it once per object that needs it.
    absent = _shared_library(tmp_path, "libglmdesk-absent.so.4", [])
    other = _shared_library(tmp_path, "libglmdesk-other.so.1", [])
    _shared_library(tmp_path, "libqt.so", [absent.name, other.name])
    plugin = _shared_library(tmp_path, "libplugin.so", ["libqt.so", absent.name, other.name])
    absent.unlink()
    other.unlink()
    ldd = subprocess.run(["ldd", str(plugin)], capture_output=True, text=True).stdout
    assert ldd.count("libglmdesk-absent.so.4 => not found") > 1  # what ldd itself prints
    files = [plugin, tmp_path / "libqt.so"]
    assert missing_libraries(files) == ["libglmdesk-absent.so.4", "libglmdesk-other.so.1"]

    monkeypatch.setattr("glmdesk.platform_check.plugin_files", lambda: files)
    monkeypatch.setenv("QT_QPA_PLATFORM", "glmdesk-no-such-platform")
    assert main() == 1
    err = capsys.readouterr().err
    assert err.count("libglmdesk-absent.so.4") == 1 and err.count("libglmdesk-other.so.1") == 1
    assert err.count("apt-get install") == 1
    assert f"    {sudo_prefix()}apt-get install -y libglmdesk-absent4 libglmdesk-other1" in err


def test_the_install_line_has_sudo_only_for_a_user_who_has_it():
    assert sudo_prefix(euid=1000, sudo="/usr/bin/sudo") == "sudo "
    assert sudo_prefix(euid=0, sudo="/usr/bin/sudo") == ""  # root installs as it is
    assert sudo_prefix(euid=1000, sudo=None) == ""  # no sudo here: it would only fail
    as_root = advice(134, "", {"DISPLAY": ":0"}, ["libxcb-icccm.so.4"], sudo=sudo_prefix(euid=0))
    assert "\n    apt-get install -y libxcb-icccm4" in as_root and "sudo" not in as_root


def test_no_display_suggests_xvfb_run_or_the_terminal():
    text = advice(134, "could not connect to display", {}, [])
    assert "xvfb-run scripts/run-app" in text and "scripts/run-app chat" in text


def test_the_probe_passes_where_qt_can_start_and_fails_without_a_display():
    assert check({**os.environ, "QT_QPA_PLATFORM": "offscreen"}) == (True, "")
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    ok, text = check(env)
    assert not ok and "xvfb-run" in text
    assert plugin_files() and missing_libraries() == []  # this machine has every library


def test_the_module_runs_as_scripts_run_app_calls_it():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run(
        [sys.executable, "-m", "glmdesk.platform_check"], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr and "xvfb-run" in out.stderr
    assert "glmdesk.platform_check" in (REPO / "scripts" / "run-app").read_text()
