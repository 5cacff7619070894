"""``glmdesk --check-interpreter``: the code interpreter's kernel started exactly as the
app starts it (in a bundle: the executable with :data:`~glmdesk.kernel_entry.KERNEL_FLAG`),
one cell run and one plot made through it (what ``packaging/check_bundle.sh`` runs in the
bundle).

A check of :mod:`glmdesk.engine.tools.interpreter` from above it: the kernel's own entry
(:mod:`glmdesk.kernel_entry`) stays below the interpreter and imports nothing of glmdesk.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from glmdesk.core.errors import GlmdeskError
from glmdesk.engine.tools.interpreter import CodeInterpreter, app_entry
from glmdesk.kernel_entry import KERNEL_FLAG

#: The cell :func:`check_interpreter` runs, and what it must print (the answer and the
#: kernel's address-space limit in MiB, "none" where the platform has no RLIMIT_AS).
CHECK_CELL = (
    "try:\n"
    "    import resource\n"
    "    limit = resource.getrlimit(resource.RLIMIT_AS)[0] // 2**20\n"
    "except ImportError:\n"
    "    limit = 'none'\n"
    "print(6 * 7, limit)"
)
CHECK_MEMORY_MIB = 2048
#: A cell that plots as model-written code does (matplotlib's pyplot; the kernel's inline
#: backend returns the figure as a PNG image).
PLOT_CELL = "import matplotlib.pyplot as plt\nplt.plot([0, 1, 2], [0, 1, 4])\nplt.show()"
#: The first bytes of every PNG file (PNG specification, section 5.2).
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` in pixels of a PNG file, or ``None`` when ``data`` is not one
    (the IHDR chunk follows the signature: PNG specification, section 11.2.2)."""
    if len(data) < 24 or not data.startswith(PNG_SIGNATURE) or data[12:16] != b"IHDR":
        return None
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def check_interpreter() -> int:
    """``glmdesk --check-interpreter``: start the code interpreter's kernel exactly as
    the app does (in a bundle: this executable with :data:`KERNEL_FLAG`), run
    :data:`CHECK_CELL` and :data:`PLOT_CELL` through jupyter_client, print one line
    each, stop the kernel.

    Returns:
        0 when the first cell printed ``42`` and the limit and the second returned one
        PNG image, else 1 (the reason is printed).
    """
    how = "this executable " + KERNEL_FLAG if app_entry() else "python -m ipykernel_launcher"
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="glmdesk-kernel-check-") as folder:
        it = CodeInterpreter(Path(folder) / "work", timeout_s=60.0, memory_mib=CHECK_MEMORY_MIB)
        try:
            result = it.run(CHECK_CELL)
            ran = time.monotonic()
            plot = it.run(PLOT_CELL)
        except GlmdeskError as exc:
            print(f"check-interpreter: FAILED: {exc}")
            return 1
        finally:
            it.close()
    words = result.text.split()
    ok = result.status == "ok" and words[:1] == ["42"] and words[1:] in (["none"], [str(CHECK_MEMORY_MIB)])
    print(
        f"check-interpreter: {'ok' if ok else 'FAILED'}: kernel started as {how}; "
        f"status {result.status}, output {result.text.strip()!r}, "
        f"{ran - start:.1f} s from start to the cell's output"
    )
    sizes = [png_size(image) for image in plot.images]
    size = sizes[0] if len(sizes) == 1 else None
    plotted, shown = False, f"{len(sizes)} image(s)"
    if plot.status == "ok" and size is not None:
        plotted, shown = True, f"a PNG of {size[0]}x{size[1]} pixels"
    print(
        f"check-interpreter: plot {'ok' if plotted else 'FAILED'}: matplotlib returned {shown}; "
        f"status {plot.status}, {plot.elapsed_s:.1f} s"
        + ("" if plotted else f", output {plot.text.strip()[-400:]!r}")
    )
    return 0 if ok and plotted else 1
