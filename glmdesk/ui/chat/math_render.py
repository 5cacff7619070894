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
A few common LaTeX spellings it lacks are rewritten first (:data:`glmdesk.ui.chat.math_draw.ALIASES`).

Costs measured on the 2-core machine (loaded): importing mathtext 0.4-1.2 s, its first
formula 0.27 s, then 1-60 ms per formula, pure Python holding the interpreter. Drawn on a
thread of the window's process, that queued the GUI thread behind it (300 new formulas
streaming: longest GUI gap 65-175 ms), so a child process draws them
(:mod:`glmdesk.ui.chat.math_draw`, started when the first formula is asked for, at a lower
priority): the renderer's thread only writes requests and reads masks off a pipe,
waiting without the interpreter lock. If the process cannot start or dies, the thread
draws (:data:`SWITCH_S`, :data:`YOUNG_GC`, resting :data:`REST` after each formula).
Masks are kept in an LRU cache keyed by TeX, size and device pixel ratio, coloured
images by that and the colour, so a theme switch only recolours. Until its image is
ready a formula shows as its TeX, as text.
"""

from __future__ import annotations

import gc
import logging
import queue
import subprocess
import sys
import threading
import time
from collections import OrderedDict, deque
from typing import IO, Protocol

import shiboken6
from PySide6.QtCore import QObject, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QApplication

from glmdesk.ui.chat import math_draw
from glmdesk.ui.chat.math_draw import Mask, draw_mask


class FormulaView(Protocol):
    """A view that shows drawn formulas (:class:`~glmdesk.ui.chat.markdown_view.MarkdownView`)."""

    def redraw_formulas(self) -> None:
        """Show the formulas drawn since it last asked."""
        ...


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    """The formula process's end of a pipe (it starts with both).

    Raises:
        OSError: when the process has no such pipe.
    """
    if stream is None:
        raise OSError("the formula process has no pipe")
    return stream


log = logging.getLogger(__name__)

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
#: Draw in a child process (:mod:`glmdesk.ui.chat.math_draw`); ``False``, or a process that
#: cannot start, draws on the renderer's thread in this process (resting, :data:`REST`).
USE_PROCESS = True
#: Seconds the child process is given to end at quit before it is killed.
STOP_S = 2.0


def colour_image(mask: Mask, colour: QColor, dpr: float, half_x: float) -> QImage:
    """``mask`` in ``colour`` as a premultiplied ARGB image of device pixel ratio ``dpr``.

    The image is padded with transparent rows so that, placed with
    ``QTextCharFormat.AlignMiddle`` (its middle ``half_x`` logical pixels above the
    baseline: half the font's x-height, Qt's rule), the formula's baseline sits on the
    text's. Drawn by Qt (the mask as an ``Alpha8`` image, the colour filled ``SourceIn`` over it),
    so colouring needs no NumPy (importing it on the GUI thread stalled the window).
    """
    ascent, descent = mask.height - mask.depth, mask.depth
    shift = int(round(half_x * dpr)) - (ascent - descent)  # > 0: pad above, < 0: pad below
    top, bottom = max(shift, 0), max(-shift, 0)
    alpha = QImage(mask.data, mask.width, mask.height, mask.width, QImage.Format.Format_Alpha8)
    image = QImage(mask.width, mask.height + top + bottom, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.drawImage(0, top, alpha)
    painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceIn)
    painter.fillRect(image.rect(), colour)
    painter.end()
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
        self._child: subprocess.Popen | None = None  # the drawing process while it runs
        self.use_process = USE_PROCESS  # see USE_PROCESS (the benchmark compares False)
        self._told = 0.0  # when formulas_ready was last emitted (perf_counter)
        self._tell_later = QTimer(self)
        self._tell_later.setSingleShot(True)
        self._tell_later.timeout.connect(self._tell)
        self._drawn.connect(self._collect)
        self._waiting_views: dict[int, FormulaView] = {}  # views to redraw when formulas arrive
        self._redraws: deque[FormulaView] = deque()
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

    def _run(self) -> None:  # the drawing thread: it feeds the process, or draws itself
        if self.use_process:
            self._start_process()
        usable = self._draw_one(("x^2", 12.0, 1.0)).error is None
        if self._child is None:  # the import's garbage is in this process: drawing without the child
            gc.collect()  # (with the child, a full collection here would only stall the window)
        self._warm.set()
        while True:
            key = self._requests.get()
            if key is None:
                self._end_process()
                return
            self._results.append((key, self._draw_one(key) if usable else Mask(b"", 0, 0, 0, "")))
            try:
                self._drawn.emit()  # queued to the GUI thread, where this object lives
            except RuntimeError:  # the application is gone
                self._end_process()
                return

    def _draw_one(self, key: tuple) -> Mask:
        child = self._child
        return (
            self._in_process(child, key) if self.use_process and child is not None else self._in_thread(key)
        )

    def _start_process(self) -> None:
        """Start the child that draws (:func:`glmdesk.ui.chat.math_draw.serve`); when it cannot
        start, this thread draws."""
        args, env = math_draw.command()
        try:
            child = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),  # no console on Windows
            )
        except OSError as exc:
            log.warning("formulas are drawn in the window's process: %s", exc)
            return
        self._child = child

    def _in_process(self, child: subprocess.Popen, key: tuple) -> Mask:
        """``key``'s mask from the child (the pipe read waits without the interpreter
        lock); drawn here if the child is gone."""
        try:
            math_draw.write_frame(_pipe(child.stdin), key)
            return Mask(*math_draw.read_frame(_pipe(child.stdout)))
        except (EOFError, OSError, ValueError) as exc:
            log.warning("the formula process ended (%s); formulas are drawn in the window's process", exc)
            self._end_process()
        return self._in_thread(key)

    def _in_thread(self, key: tuple) -> Mask:
        """``key``'s mask drawn on this thread, then a rest as long (:data:`REST`)."""
        started = time.perf_counter()
        mask = self._draw(key)
        gc.collect(YOUNG_GC)
        time.sleep((time.perf_counter() - started) * self.rest)
        return mask

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

    def _end_process(self) -> None:
        child, self._child = self._child, None
        if child is None:
            return
        try:
            stdin = _pipe(child.stdin)
            math_draw.write_frame(stdin, None)
            stdin.close()
            child.wait(timeout=STOP_S)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            child.kill()
            child.wait()

    @Slot()
    def stop(self) -> None:
        """End the drawing thread after the formula it is drawing (application quit)."""
        if self._thread is not None:
            self._requests.put(None)
            self._thread.join(timeout=STOP_S)
            self._thread = None
        child, self._child = self._child, None
        if child is not None and child.poll() is None:  # the thread was stuck on it
            child.kill()
            child.wait()

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

    def redraw_later(self, view: FormulaView) -> None:
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
        if app is not None:
            app.aboutToQuit.connect(_SHARED.stop)
    return _SHARED


def _forget(*_args) -> None:
    global _SHARED
    _SHARED = None
