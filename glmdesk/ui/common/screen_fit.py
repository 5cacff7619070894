"""Keep windows and dialogs inside the screen's available geometry.

The available geometry is :meth:`QScreen.availableGeometry` (the screen less panels
and docks, in device-independent pixels) of the screen the widget is on, else of its
parent's, else the primary screen. A restored geometry saved on a bigger screen, or a
dialog whose rows add up taller than a 700 px screen, is shrunk and moved so that its
frame lies inside; a dialog that needs more room than that scrolls inside (see
:func:`scrolled`).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect, QSize
from PySide6.QtWidgets import QApplication, QDialog, QFrame, QScrollArea, QWidget

#: Room kept for the window manager's frame and title bar, in pixels.
FRAME_MARGIN = QSize(16, 40)


def available_geometry(widget: QWidget) -> QRect | None:
    """The available geometry of ``widget``'s screen (its parent's, the primary
    screen's), or ``None`` when there is no screen at all."""
    # Asked of the application by position, not of the widget: PySide6 ties the QScreen
    # returned by QWidget.screen() to the widget's wrapper, and freeing a dialog's wrapper
    # then freed the application's screen (every later window crashed in its constructor).
    screen = QApplication.screenAt(widget.window().frameGeometry().center())
    parent = widget.parentWidget()
    if screen is None and parent is not None:
        screen = QApplication.screenAt(parent.window().frameGeometry().center())
    if screen is None:
        screen = QApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else None


def fit_size(size: QSize, area: QRect) -> QSize:
    """``size`` shrunk, never grown, so that it and its frame fit ``area``."""
    return QSize(
        min(size.width(), area.width() - FRAME_MARGIN.width()),
        min(size.height(), area.height() - FRAME_MARGIN.height()),
    )


def fit_to_screen(widget: QWidget) -> None:
    """Shrink ``widget`` (a top-level window or dialog) to its screen's available
    geometry and move it so that all of it is inside; a widget that fits stays as it is."""
    area = available_geometry(widget)
    if area is None:
        return
    size = fit_size(widget.size(), area)
    if size != widget.size():
        widget.resize(size.expandedTo(widget.minimumSize().boundedTo(size)))
    frame = widget.frameGeometry()
    x = max(area.left(), min(frame.left(), area.right() + 1 - frame.width()))
    y = max(area.top(), min(frame.top(), area.bottom() + 1 - frame.height()))
    if (x, y) != (frame.left(), frame.top()):
        widget.move(x, y)


def scrolled(content: QWidget) -> QScrollArea:
    """``content`` in a frameless scroll area that scrolls only vertically and, while
    the screen has room, asks for the content's full height (so a dialog opens with
    every row shown and scrolls only when the screen is smaller)."""
    area = _FullHeightScrollArea()
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setWidgetResizable(True)
    area.setWidget(content)
    return area


class _FullHeightScrollArea(QScrollArea):
    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        content = self.widget()
        hint = content.sizeHint() if content is not None else super().sizeHint()
        bar = self.verticalScrollBar().sizeHint().width()
        return QSize(hint.width() + bar, hint.height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        content = self.widget()
        inner = content.minimumSizeHint() if content is not None else QSize()
        return QSize(inner.width() + self.verticalScrollBar().sizeHint().width(), 120)


class DialogScreenFit(QObject):
    """An application-wide event filter: every dialog, as it is shown, is fitted to its
    screen (:func:`fit_to_screen`). Install once with :func:`install_dialog_fit`."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Show and isinstance(watched, QDialog) and watched.isWindow():
            fit_to_screen(watched)
        return False


def install_dialog_fit(app: QApplication | None = None) -> None:
    """Fit every dialog of ``app`` (default: the running one) to its screen when shown;
    calling it again does nothing."""
    running = app or QApplication.instance()  # a QCoreApplication has no dialogs to fit
    if not isinstance(running, QApplication) or running.property("glmdesk_dialog_fit"):
        return
    fit = DialogScreenFit(running)
    running.installEventFilter(fit)
    running.setProperty("glmdesk_dialog_fit", True)
