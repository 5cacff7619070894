"""Render the app icon set from ``resources/icons/glmdesk.svg``.

Writes, next to the SVG:

- ``glmdesk-<N>.png`` for N in :data:`PNG_SIZES` (the Linux hicolor sizes, 16 to 512 px);
- ``glmdesk.ico`` (Windows: 16, 24, 32, 48, 64, 128 and 256 px; 32-bit BMP entries
  below 256 px for old readers, a PNG entry at 256 px, as Windows Vista and later expect);
- ``glmdesk.icns`` (macOS: PNG entries ``icp4`` 16 px through ``ic10`` 1024 px, i.e.
  every size of an ``.iconset`` at 1x and 2x).

Qt renders the SVG (QtSvg ships with PySide6-Essentials); the .ico and .icns
containers are written here with the standard library, so no image library is a
build dependency. Formats: Microsoft "Icons" (ICONDIR/ICONDIRENTRY, BITMAPINFOHEADER)
and Apple's icns layout as documented at https://en.wikipedia.org/wiki/Apple_Icon_Image_format.

Run from the repository root after editing the SVG, and commit the outputs::

    QT_QPA_PLATFORM=offscreen python packaging/make_icons.py
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from pathlib import Path

PNG_SIZES = (16, 22, 24, 32, 48, 64, 96, 128, 256, 512)
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)
# icns element type -> pixel size (the 1x and 2x sizes of a macOS .iconset).
ICNS_TYPES = (
    (b"icp4", 16),
    (b"icp5", 32),
    (b"ic11", 32),  # 16@2x
    (b"ic12", 64),  # 32@2x
    (b"ic07", 128),
    (b"ic13", 256),  # 128@2x
    (b"ic08", 256),
    (b"ic14", 512),  # 256@2x
    (b"ic09", 512),
    (b"ic10", 1024),  # 512@2x
)
ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"


def render(svg: Path, size: int):
    """Render ``svg`` into a ``size`` x ``size`` QImage (ARGB32, not premultiplied)."""
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg} is not a valid SVG file")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
    renderer.render(painter)
    painter.end()
    return image.convertToFormat(QImage.Format.Format_ARGB32)


def png_bytes(image) -> bytes:
    """Encode a QImage as PNG."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice

    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise SystemExit("Qt could not encode a PNG image")
    buffer.close()
    return bytes(data.data())


def _bgra_rows(image) -> list[bytes]:
    """Rows of a QImage (Format_ARGB32) as BGRA bytes, top row first."""
    size = image.width()
    raw = bytes(image.constBits())
    stride = image.bytesPerLine()
    rows = [raw[y * stride : y * stride + size * 4] for y in range(size)]
    if sys.byteorder == "big":  # ARGB32 is a native 0xAARRGGBB word: BGRA in memory on little-endian
        rows = [b"".join(row[i : i + 4][::-1] for i in range(0, len(row), 4)) for row in rows]
    return rows


def bmp_icon_entry(image) -> bytes:
    """A 32-bit ICO image: BITMAPINFOHEADER (height doubled), BGRA rows bottom-up, AND mask."""
    size = image.width()
    rows = _bgra_rows(image)
    header = struct.pack("<IiiHHIIiiII", 40, size, size * 2, 1, 32, 0, 0, 0, 0, 0, 0)
    pixels = b"".join(reversed(rows))
    mask_stride = ((size + 31) // 32) * 4  # 1 bit per pixel, rows padded to 4 bytes
    mask = bytearray()
    for row in reversed(rows):
        bits = bytearray(mask_stride)
        for x in range(size):
            if row[x * 4 + 3] == 0:  # fully transparent: masked out
                bits[x // 8] |= 0x80 >> (x % 8)
        mask += bits
    return header + pixels + bytes(mask)


def write_ico(path: Path, images: dict[int, object]) -> None:
    """Write a multi-size .ico: ICONDIR, one ICONDIRENTRY per size, then the images."""
    payloads = []
    for size in ICO_SIZES:
        image = images[size]
        payloads.append((size, png_bytes(image) if size >= 256 else bmp_icon_entry(image)))
    offset = 6 + 16 * len(payloads)
    directory = struct.pack("<HHH", 0, 1, len(payloads))
    for size, data in payloads:
        dim = 0 if size >= 256 else size  # 0 means 256
        directory += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(data), offset)
        offset += len(data)
    path.write_bytes(directory + b"".join(data for _, data in payloads))


def write_icns(path: Path, images: dict[int, object]) -> None:
    """Write an .icns: ``icns`` + total length, then (type, length, PNG) elements."""
    elements = b""
    for kind, size in ICNS_TYPES:
        data = png_bytes(images[size])
        elements += kind + struct.pack(">I", 8 + len(data)) + data
    path.write_bytes(b"icns" + struct.pack(">I", 8 + len(elements)) + elements)


def main(argv: list[str] | None = None) -> int:
    """Render the PNG set, the .ico and the .icns into ``--out`` (default: resources/icons)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--svg", type=Path, default=ICONS / "glmdesk.svg")
    parser.add_argument("--out", type=Path, default=ICONS)
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication([sys.argv[0]])  # noqa: F841 - Qt needs one
    sizes = sorted(set(PNG_SIZES) | set(ICO_SIZES) | {size for _, size in ICNS_TYPES})
    images = {size: render(args.svg, size) for size in sizes}
    args.out.mkdir(parents=True, exist_ok=True)
    for size in PNG_SIZES:
        (args.out / f"glmdesk-{size}.png").write_bytes(png_bytes(images[size]))
    write_ico(args.out / "glmdesk.ico", images)
    write_icns(args.out / "glmdesk.icns", images)
    print(f"wrote {len(PNG_SIZES)} PNGs, glmdesk.ico and glmdesk.icns to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
