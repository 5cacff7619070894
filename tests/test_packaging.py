"""Packaging: icons, the .desktop entry and its installer, resource lookup, wheel
contents, the PyInstaller spec, and the ``--self-test`` flow."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from glmdesk import desktop_entry, resources
from glmdesk.resources import resource_path

ROOT = Path(__file__).resolve().parent.parent
ICONS = ROOT / "resources" / "icons"
DESKTOP = ROOT / "resources" / "glmdesk.desktop"


# --- image headers ------------------------------------------------------------------


def png_size(data: bytes) -> tuple[int, int, int]:
    """``(width, height, colour type)`` from a PNG's IHDR chunk."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    assert data[12:16] == b"IHDR"
    width, height, _depth, colour = struct.unpack(">IIBB", data[16:26])
    return width, height, colour


def ico_entries(data: bytes) -> list[tuple[int, bytes]]:
    """``[(size in px, image bytes)]`` from an .ico file."""
    reserved, kind, count = struct.unpack("<HHH", data[:6])
    assert (reserved, kind) == (0, 1), "not an icon file"
    out = []
    for i in range(count):
        w, h, _colours, _res, _planes, _bpp, length, offset = struct.unpack(
            "<BBBBHHII", data[6 + 16 * i : 22 + 16 * i]
        )
        assert w == h
        assert offset + length <= len(data)
        out.append((w or 256, data[offset : offset + length]))
    return out


def icns_elements(data: bytes) -> dict[bytes, bytes]:
    """``{type: payload}`` from an .icns file."""
    assert data[:4] == b"icns"
    assert struct.unpack(">I", data[4:8])[0] == len(data)
    out, pos = {}, 8
    while pos < len(data):
        kind, length = data[pos : pos + 4], struct.unpack(">I", data[pos + 4 : pos + 8])[0]
        assert length >= 8 and pos + length <= len(data)
        out[kind] = data[pos + 8 : pos + length]
        pos += length
    return out


# --- icons ----------------------------------------------------------------------------


@pytest.mark.parametrize("size", desktop_entry.ICON_SIZES)
def test_png_icons_have_their_size(size):
    assert png_size((ICONS / f"glmdesk-{size}.png").read_bytes()) == (size, size, 6)  # 6: RGBA


def test_ico_holds_the_windows_sizes():
    entries = dict(ico_entries((ICONS / "glmdesk.ico").read_bytes()))
    assert {16, 32, 48, 256} <= set(entries)
    assert png_size(entries[256])[:2] == (256, 256)
    for size, image in entries.items():
        if size < 256:  # 32-bit BITMAPINFOHEADER, height doubled for the AND mask
            header, width, height, _planes, bpp = struct.unpack("<IiiHH", image[:16])
            assert (header, width, height, bpp) == (40, size, 2 * size, 32)


def test_ico_and_icns_read_back_with_qt():
    from PySide6.QtGui import QImageReader

    reader = QImageReader(str(ICONS / "glmdesk.ico"))
    assert reader.imageCount() == len(ico_entries((ICONS / "glmdesk.ico").read_bytes()))
    assert not reader.read().isNull()
    if b"icns" in [bytes(f) for f in QImageReader.supportedImageFormats()]:
        icns = QImageReader(str(ICONS / "glmdesk.icns"))
        assert not icns.read().isNull(), icns.errorString()


def test_icns_holds_the_macos_sizes():
    expected = {
        b"icp4": 16,
        b"icp5": 32,
        b"ic11": 32,
        b"ic12": 64,
        b"ic07": 128,
        b"ic13": 256,
        b"ic08": 256,
        b"ic14": 512,
        b"ic09": 512,
        b"ic10": 1024,
    }
    elements = icns_elements((ICONS / "glmdesk.icns").read_bytes())
    assert set(expected) <= set(elements)
    for kind, size in expected.items():
        assert png_size(elements[kind])[:2] == (size, size), kind


def test_icon_script_renders_the_set(tmp_path, qapp):
    """(``qapp``: the test run's QApplication, so the script does not make a bare one.)"""
    sys.path.insert(0, str(ROOT / "packaging"))
    try:
        import make_icons
    finally:
        sys.path.remove(str(ROOT / "packaging"))
    assert make_icons.main(["--out", str(tmp_path)]) == 0
    for size in make_icons.PNG_SIZES:
        assert png_size((tmp_path / f"glmdesk-{size}.png").read_bytes())[:2] == (size, size)
    assert {s for s, _ in ico_entries((tmp_path / "glmdesk.ico").read_bytes())} == set(make_icons.ICO_SIZES)


# --- .desktop entry ---------------------------------------------------------------------


def validate(path: Path) -> None:
    tool = shutil.which("desktop-file-validate")
    if tool is None:
        pytest.skip(
            "desktop-file-validate is absent (Debian: apt-get install desktop-file-utils; "
            "scripts/run-tests installs it when run as root)"
        )
    result = subprocess.run([tool, str(path)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "error" not in (result.stdout + result.stderr).lower(), result.stdout + result.stderr


def read_entry(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "[Desktop Entry]"
    return dict(line.split("=", 1) for line in lines[1:] if "=" in line)


def parse_exec(value: str) -> list[str]:
    """Split an ``Exec`` value back into argv (Desktop Entry spec rules)."""
    value = value.replace("\\\\", "\\")  # string-level escape
    args, current, quoted, i, started = [], "", False, 0, False
    while i < len(value):
        c = value[i]
        if quoted and c == "\\" and i + 1 < len(value) and value[i + 1] in '"`$\\':
            current += value[i + 1]
            i += 2
            continue
        if c == '"':
            quoted, started = not quoted, True
        elif c == " " and not quoted:
            if started:
                args.append(current)
            current, started = "", False
        else:
            current, started = current + c, True
        i += 1
    if started:
        args.append(current)
    return [a.replace("%%", "%") for a in args]


def test_template_desktop_file_validates():
    validate(DESKTOP)
    entry = read_entry(DESKTOP)
    assert entry["Icon"] == "glmdesk" and entry["Type"] == "Application"


@pytest.mark.parametrize(
    "argv",
    [
        ["/opt/glmdesk/glmdesk"],
        ["/home/a b/venv/bin/python", "-m", "glmdesk"],
        ['/we"ird/$HOME/`x`/back\\slash/100%/glmdesk'],
    ],
)
def test_exec_value_round_trips(argv):
    assert parse_exec(desktop_entry.exec_value(argv)) == argv


@pytest.fixture
def xdg(tmp_path, monkeypatch):
    home = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def test_install_and_uninstall_desktop_entry(xdg, capsys):
    assert desktop_entry.main(install=True) == 0
    assert desktop_entry.main(install=True) == 0  # idempotent
    entry_file = xdg / "applications" / "glmdesk.desktop"
    validate(entry_file)
    entry = read_entry(entry_file)
    program = Path(parse_exec(entry["Exec"])[0])
    assert program.is_absolute() and program.is_file() and os.access(program, os.X_OK)
    assert Path(entry["TryExec"]) == program
    icons = [
        xdg / "icons" / "hicolor" / f"{n}x{n}" / "apps" / "glmdesk.png" for n in desktop_entry.ICON_SIZES
    ]
    icons.append(xdg / "icons" / "hicolor" / "scalable" / "apps" / "glmdesk.svg")
    for icon in icons:
        assert icon.is_file(), icon
    assert png_size((xdg / "icons/hicolor/48x48/apps/glmdesk.png").read_bytes())[:2] == (48, 48)
    assert "wrote" in capsys.readouterr().out

    assert desktop_entry.main(install=False) == 0
    assert not entry_file.exists()
    assert not any(icon.exists() for icon in icons)
    assert desktop_entry.main(install=False) == 0  # nothing left: still fine
    assert "nothing to remove" in capsys.readouterr().out


def test_frozen_exec_points_at_the_executable(xdg, monkeypatch, tmp_path):
    exe = tmp_path / "dist dir" / "glmdesk"
    exe.parent.mkdir()
    exe.write_text("")
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(exe))
    argv, workdir = desktop_entry.launch_command()
    assert argv == [str(exe.resolve())] and workdir is None


# --- resources ------------------------------------------------------------------------


def test_resource_path_finds_the_files():
    assert resource_path("icons", "glmdesk.svg").is_file()
    assert resource_path("icons", "glmdesk-256.png").is_file()
    assert resource_path("glmdesk.desktop").is_file()
    assert resource_path() == ROOT / "resources"  # source checkout / editable install


def test_resource_path_frozen_and_missing(tmp_path, monkeypatch):
    bundle = tmp_path / "_internal"
    (bundle / "resources" / "icons").mkdir(parents=True)
    (bundle / "resources" / "icons" / "glmdesk.svg").write_text("<svg/>")
    monkeypatch.setattr(sys, "_MEIPASS", str(bundle), raising=False)
    resources._root.cache_clear()
    try:
        assert resource_path("translations") == bundle / "resources" / "translations"
        monkeypatch.setattr(resources, "_candidates", lambda: [tmp_path / "nowhere"])
        resources._root.cache_clear()
        with pytest.raises(FileNotFoundError, match="nowhere"):
            resource_path("icons")
    finally:
        resources._root.cache_clear()


def test_frozen_app_finds_the_bundled_model(tmp_path, monkeypatch):
    from glmdesk.engine.files import sources

    gguf = tmp_path / sources.EMBEDDED_PACKAGE / sources.EMBEDDED_FILE
    gguf.parent.mkdir()
    gguf.write_bytes(b"GGUF")
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert sources.embedded_gguf_path() == gguf


# --- wheel and spec -------------------------------------------------------------------


def test_wheel_carries_the_resources(tmp_path):
    """Build a wheel from a copy of the tree and run resource_path from it."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "LICENSE"):
        if (ROOT / name).is_file():
            shutil.copy(ROOT / name, src / name)
    if not (src / "README.md").exists():
        (src / "README.md").write_text("glmdesk\n")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "glmdesk", src / "glmdesk", ignore=ignore)
    shutil.copytree(ROOT / "resources", src / "resources", ignore=ignore)
    code = "from setuptools import build_meta as b; print(b.build_wheel(r'%s'))" % (tmp_path / "wheel")
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=src, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    wheel = tmp_path / "wheel" / result.stdout.strip().splitlines()[-1]
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "glmdesk/_resources/glmdesk.desktop",
        "glmdesk/_resources/icons/glmdesk.svg",
        "glmdesk/_resources/icons/glmdesk.ico",
        "glmdesk/_resources/icons/glmdesk-512.png",
        "glmdesk/resources.py",
        "glmdesk/engine/files/sources.py",
        "glmdesk/py.typed",
    ):
        assert needed in names
    packages = {  # every package is found, a new one included (setup.py)
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "glmdesk").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert packages - names == set()
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = "from glmdesk.resources import resource_path as r; print(r('icons', 'glmdesk.svg'))"
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-S", "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == site / "glmdesk" / "_resources" / "icons" / "glmdesk.svg"


def test_spec_and_launcher_compile():
    for name in ("glmdesk.spec", "glmdesk_main.py", "make_icons.py"):
        compile((ROOT / "packaging" / name).read_text(), name, "exec")


def test_spec_bundles_what_the_interpreters_plots_need():
    """matplotlib (and PIL, which writes its PNGs) are not excluded, and the backend the
    kernel names in MPLBACKEND is one PyInstaller's matplotlib hook collects."""
    import ast

    tree = ast.parse((ROOT / "packaging" / "glmdesk.spec").read_text())
    values = {
        node.targets[0].id: node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    excludes = {e.value for e in values["excludes"].elts}
    assert not {"matplotlib", "matplotlib_inline", "PIL", "numpy"} & excludes
    backends = ast.literal_eval(values["MATPLOTLIB_BACKENDS"])
    from glmdesk.engine.tools.interpreter import CodeInterpreter

    assert CodeInterpreter(ROOT / "unused")._env()["MPLBACKEND"] in backends
    analysis = next(
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "Analysis"
    )
    config = next(k.value for k in analysis.keywords if k.arg == "hooksconfig")
    assert ast.unparse(config) == "{'matplotlib': {'backends': MATPLOTLIB_BACKENDS}}"


# --- self-test --------------------------------------------------------------------------


def test_self_test_answers_paris(glmdesk_home):
    env = {**os.environ, "GLMDESK_HOME": str(glmdesk_home), "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run(
        [sys.executable, "-m", "glmdesk", "--self-test"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Paris" in result.stdout
    assert "time to first token" in result.stdout and "tokens/s" in result.stdout
