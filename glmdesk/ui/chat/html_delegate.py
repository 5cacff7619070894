"""An item delegate that paints each item's HTML (search snippets with highlighted terms)."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSize
from PySide6.QtGui import QAbstractTextDocumentLayout, QPalette, QTextDocument
from PySide6.QtWidgets import QApplication, QListView, QStyle, QStyledItemDelegate, QStyleOptionViewItem

from glmdesk.ui.history.history_models import HTML_ROLE

_Index = QModelIndex | QPersistentModelIndex


class HtmlDelegate(QStyledItemDelegate):
    """Paints :data:`HTML_ROLE` rich text (the highlighted snippet)."""

    def _document(self, option: QStyleOptionViewItem, index: _Index) -> QTextDocument:
        doc = QTextDocument()
        doc.setDefaultFont(option.font)
        doc.setHtml(str(index.data(HTML_ROLE)))
        width = option.rect.width()
        if width <= 0 and isinstance(option.widget, QListView):
            width = option.widget.viewport().width()
        doc.setTextWidth(max(width, 100))
        return doc

    def paint(self, painter, option: QStyleOptionViewItem, index: _Index) -> None:  # noqa: ANN001
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        doc = self._document(opt, index)
        opt.text = ""
        style = opt.widget.style() if opt.widget else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        context = QAbstractTextDocumentLayout.PaintContext()
        if opt.state & QStyle.StateFlag.State_Selected:
            context.palette.setColor(
                QPalette.ColorRole.Text, opt.palette.color(QPalette.ColorRole.HighlightedText)
            )
        painter.save()
        painter.translate(opt.rect.topLeft())
        painter.setClipRect(opt.rect.translated(-opt.rect.topLeft()))
        doc.documentLayout().draw(painter, context)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: _Index) -> QSize:
        doc = self._document(option, index)
        return QSize(int(doc.idealWidth()), int(doc.size().height()))
