"""TeX formulas drawn by matplotlib's mathtext into coverage masks, in a process of their own.

No Qt here: :mod:`glmdesk.ui.chat.math_render` colours the masks and places them. Drawing is
pure Python holding the interpreter for 1-60 ms a formula (0.5-1 s for the import and the
first one), so the window draws them in a child process (:func:`serve`, started by
:func:`command`) that holds no interpreter lock the GUI thread waits for, at a lower
scheduling priority (:data:`NICE`); the GUI thread's process only reads the masks off a pipe.

The pipe carries :func:`write_frame` frames: a 4-byte little-endian length, then a
pickle. Requests are ``(tex, pixels, dpr)`` tuples (:func:`draw_mask`'s arguments) or
``None`` (end); each reply is the :class:`Mask`'s fields as a tuple. Pickles only pass
between glmdesk and the child it started.
"""

from __future__ import annotations

import gc
import os
import pickle
import re
import struct
import sys
import threading
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import IO, BinaryIO

#: First argument that makes the packaged app's executable run :func:`serve`
#: (``packaging/glmdesk_main.py``), as ``--glmdesk-kernel`` runs the interpreter's kernel.
DRAW_FLAG = "--glmdesk-mathtext"
#: The drawing process's niceness increment (Unix): under load the window goes first.
NICE = 10
#: The math font family (matplotlib's ``math_fontfamily``): Computer Modern, as in textbooks.
MATH_FONT = "cm"

#: LaTeX spellings mathtext lacks, rewritten to ones it has (regex, replacement).
ALIASES: tuple[tuple[str, str], ...] = (
    (r"\\(displaystyle|textstyle|limits|nolimits|notag|nonumber)(?![a-zA-Z])", ""),
    (r"\\label\{[^{}]*\}", ""),
    (r"\\tag\{([^{}]*)\}", r"\\qquad(\1)"),
    (r"\\le(?![a-zA-Z])", r"\\leq"),
    (r"\\ge(?![a-zA-Z])", r"\\geq"),
    (r"\\ne(?![a-zA-Z])", r"\\neq"),
    (r"\\[td]frac(?![a-zA-Z])", r"\\frac"),
    (r"\\stackrel(?![a-zA-Z])", r"\\overset"),
    (r"\\textbf(?![a-zA-Z])", r"\\mathbf"),
    (r"\\(emph|textit)(?![a-zA-Z])", r"\\mathit"),
    (r"\\bmod(?![a-zA-Z])", r"\\ \\mathrm{mod}\\ "),
    (r"\\pmod\{([^{}]*)\}", r"\\ (\\mathrm{mod}\\ \1)"),
    (r"\\lvert(?![a-zA-Z])|\\rvert(?![a-zA-Z])", r"|"),
    (r"\\lVert(?![a-zA-Z])|\\rVert(?![a-zA-Z])", r"\\|"),
)
_ALIASES = tuple((re.compile(pattern), repl) for pattern, repl in ALIASES)
_UNKNOWN = re.compile(r"Unknown symbol: (\\[A-Za-z]+)")
_DOLLAR = re.compile(r"(?<!\\)\$")


def for_mathtext(tex: str) -> str:
    """``tex`` with the spellings of :data:`ALIASES` rewritten, ready for mathtext."""
    for pattern, repl in _ALIASES:
        tex = pattern.sub(repl, tex)
    return " ".join(tex.split())  # mathtext reads one line


@dataclass(frozen=True)
class Mask:
    """A formula's coverage (what mathtext draws), before colour.

    Attributes:
        data: ``height`` rows of ``width`` bytes, 0 (empty) to 255 (ink).
        width, height: In device pixels.
        depth: Device pixels from the bottom row up to the formula's baseline.
        error: Why it could not be drawn (``data`` is then empty): the unknown command
            (``\\begin``) or ``""`` for any other TeX mathtext cannot read.
    """

    data: bytes
    width: int
    height: int
    depth: int
    error: str | None = None


def draw_mask(tex: str, pixels: float, dpr: float) -> Mask:
    """Draw ``tex`` with mathtext (imports matplotlib on first use; GIL-bound, 1-25 ms).

    Args:
        tex: The formula without delimiters.
        pixels: The font size, in logical pixels (an em).
        dpr: Device pixels per logical pixel.

    Returns:
        The mask, or one with ``error`` set when mathtext cannot read ``tex``.
    """
    import numpy as np
    from matplotlib.font_manager import FontProperties

    source = for_mathtext(tex)
    for command in ("\\begin", "\\\\"):  # environments, line breaks: mathtext has none
        if command in source:
            return Mask(b"", 0, 0, 0, command)
    if _DOLLAR.search(source):  # would end mathtext's formula early
        return Mask(b"", 0, 0, 0, "$")
    prop = FontProperties(size=pixels, math_fontfamily=MATH_FONT)
    try:
        parsed = _parser().parse(f"${source}$", dpi=72 * dpr, prop=prop)
    except Exception as error:  # noqa: BLE001 (pyparsing and mathtext raise several kinds)
        found = _UNKNOWN.search(str(error))
        return Mask(b"", 0, 0, 0, found.group(1) if found else "")
    image = np.ascontiguousarray(np.asarray(parsed.image, dtype=np.uint8))
    height, width = image.shape
    return Mask(image.tobytes(), width, height, int(round(parsed.depth)))


_PARSER = None
_PARSER_LOCK = threading.Lock()


def _parser():
    global _PARSER  # one parser per process: building its grammar takes ~0.3 s
    with _PARSER_LOCK:
        if _PARSER is None:
            from matplotlib.mathtext import MathTextParser

            _PARSER = MathTextParser("agg")
        return _PARSER


def write_frame(stream: IO[bytes], value) -> None:
    """Write ``value`` as one frame (length, pickle) and flush."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<I", len(data)) + data)
    stream.flush()


def read_frame(stream: IO[bytes]):
    """The next frame's value.

    Raises:
        EOFError: when the other side closed the pipe (or died) before a whole frame.
    """
    head = stream.read(4)
    if len(head) < 4:
        raise EOFError("the formula process closed its pipe")
    (size,) = struct.unpack("<I", head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the formula process closed its pipe")
    return pickle.loads(data)  # noqa: S301 (frames from our own child process only)


def command() -> tuple[list[str], dict[str, str]]:
    """The command line and environment that start :func:`serve` in a child process: the
    packaged app's executable with :data:`DRAW_FLAG`, else this interpreter with ``-c``
    (this package's folder first on ``PYTHONPATH``)."""
    env = dict(os.environ)
    if getattr(sys, "frozen", False):
        return [sys.executable, DRAW_FLAG], env
    parent = str(Path(__file__).resolve().parents[3])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (parent, env.get("PYTHONPATH", "")) if p)
    return [sys.executable, "-c", "from glmdesk.ui.chat.math_draw import serve; serve()"], env


def serve(requests: BinaryIO | None = None, replies: BinaryIO | None = None) -> int:
    """Draw formulas until the request ``None`` or the end of the pipe (the child's main).

    Args:
        requests: Where requests come from (default: standard input, binary).
        replies: Where masks go (default: standard output, binary; nothing else is
            written there).
    """
    source = requests or sys.stdin.buffer
    sink = replies or sys.stdout.buffer
    sys.stdout = sys.stderr  # a library's print must not break the frames
    if hasattr(os, "nice"):
        os.nice(NICE)
    while True:
        try:
            key = read_frame(source)
        except EOFError:
            return 0
        if key is None:
            return 0
        try:
            mask = draw_mask(*key)
        except Exception:  # noqa: BLE001 (matplotlib missing or broken: the formula stays TeX)
            mask = Mask(b"", 0, 0, 0, "")
        gc.collect(1)  # mathtext's cyclic parse trees, young, before they pile up
        try:
            write_frame(sink, astuple(mask))
        except (BrokenPipeError, OSError):
            return 0
