"""TeX formulas drawn by matplotlib's mathtext as images, cached, never stalling the window.

Why mathtext (issue 28): matplotlib is already a dependency, it draws with its own
fonts (Computer Modern here) into an alpha mask we colour with the theme's text colour
at the screen's device pixel ratio, and the images go into Qt's own ``QTextDocument``,
so the Markdown pipeline, the segmented view and the tests stay as they are. A
KaTeX web view would draw more of LaTeX but adds Qt WebEngine (~100 MB in the bundle,
a browser process per window, a slow start, asynchronous layout that pytest-qt cannot
easily wait on); a pure-Python TeX-to-SVG renderer would be a new dependency with the
same subset problem. What mathtext cannot draw is shown as its TeX source with a note
(:attr:`Mask.error` names the command; the view words the note): environments (``\\begin{aligned}``, ``cases``, matrices),
``\\\\`` line breaks, ``\\boxed``, ``\\color``, ``\\underbrace``, ``\\xrightarrow``.
A few common LaTeX spellings it lacks are rewritten first (:data:`ALIASES`).

Costs measured on the 2-core machine (loaded): importing mathtext 0.4-1.2 s, its first
formula 0.27 s, then 1-60 ms per formula (pure Python, holding the GIL). So one
background thread imports mathtext (:meth:`MathRenderer.warm_up`, started when the first
formula is asked for: importing it and its garbage collection held the interpreter up to
0.4 s, which a window that shows no formula never pays) and draws every formula, with a short thread switch
interval while it works (:data:`SWITCH_S`) and a rest after each as long as it drew
(:data:`REST`), so the GUI thread has the interpreter at least half the time; masks are kept in an LRU cache keyed by TeX,
size and device pixel ratio, coloured images by that and the colour, so a theme switch
only recolours. Until its image is ready a formula shows as its TeX, as text.
"""

from __future__ import annotations

import gc
import queue
import re
import sys
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass

import shiboken6
from PySide6.QtCore import QObject, QTimer, Signal, Slot
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication

#: While formulas are being drawn, views are told at most this often, in s (each
#: telling redraws the views waiting for them).
READY_INTERVAL_S = 0.1
#: The interpreter's thread switch interval while the drawing thread works, in s: the GUI
#: thread, whenever it wants the interpreter back (after each call into Qt that let it
#: go), waits at most this long instead of the default 5 ms.
SWITCH_S = 0.0005
#: After each formula the drawing thread collects the young generations (gen 0 and 1,
#: about a millisecond): mathtext's parse trees are cyclic garbage that otherwise lived
#: on into the oldest generation, whose full collections (150-200 ms on the busy 2-core
#: machine, holding the interpreter) came every hundred formulas and stalled the window.
YOUNG_GC = 1
#: After each formula the drawing thread rests this many times as long as it drew (s per
#: s): drawing is pure Python holding the interpreter, and the GUI thread, which needs the
#: interpreter for each of its many short Python calls while it lays out a streaming
#: answer, then queued behind it (``ui_responsiveness --sizes``, 300 formulas on the
#: 2-core machine: longest gap 65-175 ms drawing flat out, 45 ms resting as long).
REST = 1.0
#: Formula masks kept (each a few KB).
MASK_CACHE = 4096
#: Coloured images kept.
IMAGE_CACHE = 2048
#: Inline formulas are drawn this much larger than the text's em: Computer Modern's
#: x-height is about 0.43 em, the sans-serif UI fonts' about 0.53, so this matches them.
INLINE_SCALE = 1.2
#: Display formulas are drawn this much larger than the text's em.
DISPLAY_SCALE = 1.45
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


def colour_image(mask: Mask, colour: QColor, dpr: float, half_x: float) -> QImage:
    """``mask`` in ``colour`` as a premultiplied ARGB image of device pixel ratio ``dpr``.

    The image is padded with transparent rows so that, placed with
    ``QTextCharFormat.AlignMiddle`` (its middle ``half_x`` logical pixels above the
    baseline: half the font's x-height, Qt's rule), the formula's baseline sits on the
    text's.
    """
    import numpy as np

    alpha = np.frombuffer(mask.data, dtype=np.uint8).reshape(mask.height, mask.width).astype(np.uint16)
    ascent, descent = mask.height - mask.depth, mask.depth
    shift = int(round(half_x * dpr)) - (ascent - descent)  # > 0: pad above, < 0: pad below
    top, bottom = max(shift, 0), max(-shift, 0)
    pixels = np.zeros((mask.height + top + bottom, mask.width, 4), dtype=np.uint8)
    body = pixels[top : top + mask.height]
    for channel, value in enumerate((colour.blue(), colour.green(), colour.red())):  # BGRA in memory
        body[..., channel] = (alpha * value // 255).astype(np.uint8)
    body[..., 3] = alpha.astype(np.uint8)
    height, width = pixels.shape[:2]
    image = QImage(pixels.tobytes(), width, height, width * 4, QImage.Format.Format_ARGB32_Premultiplied)
    image = image.copy()  # own the pixels
    image.setDevicePixelRatio(dpr)
    return image


def formula_key(tex: str, display: bool, pixels: float, dpr: float) -> tuple[str, float, float]:
    """The cache key of a formula's mask: ``(tex, size in logical pixels, dpr)``."""
    return (tex, round(pixels * (DISPLAY_SCALE if display else INLINE_SCALE), 2), float(dpr))


class MathRenderer(QObject):
    """Draws formulas on one background thread and caches them (one per application).

    Use :func:`shared_renderer`. :meth:`image` answers from the cache or asks the
    thread for the formula; a view that waits for formulas (:meth:`redraw_later`) is
    redrawn when some arrive, one view per event-loop turn (so a dozen segments
    waiting at once never stall the window together). Only the thread calls mathtext
    (matplotlib is not thread-safe); colouring the mask and the cache stay on the GUI
    thread.

    Signals:
        formulas_ready(): Formulas asked for were drawn (or found impossible to draw).
    """

    formulas_ready = Signal()
    _drawn = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._masks: OrderedDict[tuple, Mask] = OrderedDict()
        self._images: OrderedDict[tuple, QImage] = OrderedDict()
        self._asked: set[tuple] = set()  # sent to the thread, not back yet
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._results: deque[tuple[tuple, Mask]] = deque()
        self._warm = threading.Event()
        self._thread: threading.Thread | None = None
        self.drawn = 0  # formulas drawn (tests, benchmark)
        self.rest = REST  # see REST (the benchmark compares 0)
        self._told = 0.0  # when formulas_ready was last emitted (perf_counter)
        self._tell_later = QTimer(self)
        self._tell_later.setSingleShot(True)
        self._tell_later.timeout.connect(self._tell)
        self._drawn.connect(self._collect)
        self._waiting_views: dict[int, QObject] = {}  # views to redraw when formulas arrive
        self._redraws: deque[QObject] = deque()
        self._redraw_timer = QTimer(self)
        self._redraw_timer.setInterval(0)
        self._redraw_timer.timeout.connect(self._redraw_one)

    def is_warm(self) -> bool:
        """True once matplotlib's mathtext is imported and its parser built."""
        return self._warm.is_set()

    def warm_up(self) -> None:
        """Start the drawing thread: it imports mathtext and draws one formula first."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="glmdesk-mathtext", daemon=True)
            self._thread.start()

    def pending(self) -> int:
        """Formulas asked for and not drawn yet."""
        return len(self._asked)

    def has(self, key: tuple) -> bool:
        """True when the formula of ``key`` (:func:`formula_key`) is drawn (or failed)."""
        return key in self._masks

    def _run(self) -> None:  # the drawing thread
        usable = self._draw(("x^2", 12.0, 1.0)).error is None
        gc.collect()  # the import's garbage, now while the window is idle, not in an answer
        self._warm.set()
        while True:
            key = self._requests.get()
            if key is None:
                return
            started = time.perf_counter()
            self._results.append((key, self._draw(key) if usable else Mask(b"", 0, 0, 0, "")))
            gc.collect(YOUNG_GC)
            time.sleep((time.perf_counter() - started) * self.rest)
            try:
                self._drawn.emit()  # queued to the GUI thread, where this object lives
            except RuntimeError:  # the application is gone
                return

    @staticmethod
    def _draw(key: tuple) -> Mask:
        interval = sys.getswitchinterval()
        sys.setswitchinterval(min(interval, SWITCH_S))
        try:
            return draw_mask(*key)
        except Exception:  # noqa: BLE001 (matplotlib missing or broken: every formula stays TeX)
            return Mask(b"", 0, 0, 0, "")
        finally:
            sys.setswitchinterval(interval)

    @Slot()
    def stop(self) -> None:
        """End the drawing thread after the formula it is drawing (application quit)."""
        if self._thread is not None:
            self._requests.put(None)
            self._thread.join(timeout=2.0)
            self._thread = None

    def image(self, tex: str, display: bool, pixels: float, dpr: float, colour: QColor, half_x: float):
        """The formula's image, its error (a ``str``: see :attr:`Mask.error`), or ``None``
        (being drawn: :attr:`formulas_ready` follows).

        Args:
            tex: The formula without delimiters.
            display: A display formula (drawn at :data:`DISPLAY_SCALE`, else :data:`INLINE_SCALE`).
            pixels: The text's font size in logical pixels.
            dpr: The view's device pixel ratio.
            colour: The text colour.
            half_x: Half the text font's x-height, in logical pixels (baseline alignment).
        """
        key = formula_key(tex, display, pixels, dpr)
        mask = self._masks.get(key)
        if mask is None:
            if key not in self._asked:
                self._asked.add(key)
                self._requests.put(key)
                self.warm_up()
            return None
        self._masks.move_to_end(key)
        if mask.error is not None:
            return mask.error
        image_key = (key, colour.rgba(), round(half_x, 2))
        image = self._images.get(image_key)
        if image is None:
            image = colour_image(mask, colour, dpr, half_x)
            self._images[image_key] = image
            if len(self._images) > IMAGE_CACHE:
                self._images.popitem(last=False)
        else:
            self._images.move_to_end(image_key)
        return image

    @Slot()
    def _collect(self) -> None:
        while self._results:
            key, mask = self._results.popleft()
            self._asked.discard(key)
            self._masks[key] = mask
            self.drawn += 1
            if len(self._masks) > MASK_CACHE:
                self._masks.popitem(last=False)
        wait = READY_INTERVAL_S - (time.perf_counter() - self._told)
        if self._asked and wait > 0:  # more to come: tell the views at most every 100 ms
            if not self._tell_later.isActive():
                self._tell_later.start(int(wait * 1000) + 1)
            return
        self._tell()

    def redraw_later(self, view: QObject) -> None:
        """Call ``view.redraw_formulas()`` once after the next formulas arrive."""
        self._waiting_views[id(view)] = view

    @Slot()
    def _tell(self) -> None:
        self._tell_later.stop()
        self._told = time.perf_counter()
        self._redraws.extend(self._waiting_views.values())
        self._waiting_views.clear()
        if self._redraws:
            self._redraw_timer.start()
        self.formulas_ready.emit()

    @Slot()
    def _redraw_one(self) -> None:
        while self._redraws:
            view = self._redraws.popleft()
            if shiboken6.isValid(view):  # not deleted since (a segment replaced, a chat cleared)
                view.redraw_formulas()
                break
        if not self._redraws:
            self._redraw_timer.stop()


_SHARED: MathRenderer | None = None


def shared_renderer() -> MathRenderer:
    """The application's renderer (made on first use, parented to the application)."""
    global _SHARED
    if _SHARED is None:
        app = QApplication.instance()
        _SHARED = MathRenderer(app)
        _SHARED.destroyed.connect(_forget)
        app.aboutToQuit.connect(_SHARED.stop)
    return _SHARED


def _forget(*_args) -> None:
    global _SHARED
    _SHARED = None
