"""A column of widgets centred in whatever width it is given, never wider than a
readable measure.

The chat's messages and its input sit in such a column: on a wide window the text stays
near :data:`TEXT_WIDTH` pixels wide (about 90 Latin characters at 10 pt, the measure
chat apps such as ChatGPT and Claude keep), with the space left and right empty; on a
narrow one the column takes the whole width less :data:`SIDE_MARGIN`.
"""

from __future__ import annotations

from PySide6.QtWidgets import QVBoxLayout, QWidget

#: The widest a message's text is drawn, in px.
TEXT_WIDTH = 760
#: A message's own left and right padding together, in px (see ``MessageWidget``).
MESSAGE_PADDING = 24
#: The column's widest, in px: the text and the message's padding.
COLUMN_WIDTH = TEXT_WIDTH + MESSAGE_PADDING
#: The least space kept on each side of the column, in px.
SIDE_MARGIN = 12


def side_margin(width: int, column_width: int = COLUMN_WIDTH) -> int:
    """The space on each side of a column centred in ``width`` px, in px: at least
    :data:`SIDE_MARGIN`, and enough that the column is at most ``column_width``."""
    return max(SIDE_MARGIN, (width - column_width) // 2)


class CentredColumn(QWidget):
    """A widget whose :meth:`column` layout is centred and at most ``column_width`` px
    wide: its left and right margins follow its width.

    Args:
        column_width: The column's widest, in px.
        top, bottom: The layout's top and bottom margins, in px.
        parent: The parent widget.
    """

    def __init__(
        self,
        column_width: int = COLUMN_WIDTH,
        top: int = 0,
        bottom: int = 0,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._column_width = column_width
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(SIDE_MARGIN, top, SIDE_MARGIN, bottom)

    def column(self) -> QVBoxLayout:
        """The centred layout (add the column's widgets to it)."""
        return self._layout

    def column_geometry_width(self) -> int:
        """The width the column's widgets get now, in px."""
        margins = self._layout.contentsMargins()
        return self.width() - margins.left() - margins.right()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt override)
        side = side_margin(event.size().width(), self._column_width)
        margins = self._layout.contentsMargins()
        if margins.left() != side:
            self._layout.setContentsMargins(side, margins.top(), side, margins.bottom())
        super().resizeEvent(event)
