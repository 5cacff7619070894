"""Thumbnails of attached images: in a sent message (click to view) and in the input
box's tray before sending (with a remove button each).

The images are :class:`~glmdesk.core.images.ImageAttachment` values (the file's own
bytes); Qt decodes them for display only (PNG, JPEG, GIF; WebP through Qt's image
format plugin). An image Qt cannot decode shows as a named placeholder, never an error.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QCoreApplication, QSize, Qt, Signal
from PySide6.QtGui import QGuiApplication, QPixmap
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from glmdesk.core.images import ImageAttachment, ImageSizing

#: Longest side of a thumbnail, in pixels.
THUMBNAIL_PX = 96

#: Widest a tool's image is shown, in px (wider ones are scaled down, aspect kept).
IMAGE_MAX_WIDTH_PX = 640


def image_label(png: bytes) -> QLabel | None:
    """A label showing a tool's PNG image, or ``None`` when the bytes are no PNG."""
    pixmap = QPixmap()
    if not pixmap.loadFromData(png, "PNG"):
        return None
    if pixmap.width() > IMAGE_MAX_WIDTH_PX:
        pixmap = pixmap.scaledToWidth(IMAGE_MAX_WIDTH_PX, Qt.TransformationMode.SmoothTransformation)
    label = QLabel()
    label.setObjectName("tool_image")
    label.setPixmap(pixmap)
    return label


def picture(image: ImageAttachment) -> QPixmap:
    """The image decoded by Qt (a null pixmap when Qt cannot decode it)."""
    pixmap = QPixmap()
    pixmap.loadFromData(image.data)
    return pixmap


def size_words(image: ImageAttachment, pixmap: QPixmap, sizing: ImageSizing | None = None) -> str:
    """``name, W × H px`` for a tooltip (the name alone when it cannot be decoded); with
    the model's ``sizing``, also the size the model sees and the tokens it takes."""
    name = image.name or QCoreApplication.translate("ImageThumbnail", "pasted image")
    if pixmap.isNull():
        return QCoreApplication.translate("ImageThumbnail", "{name} (cannot be shown)").format(name=name)
    words = QCoreApplication.translate("ImageThumbnail", "{name}, {width} × {height} px").format(
        name=name, width=pixmap.width(), height=pixmap.height()
    )
    if sizing is None:
        return words
    width, height = sizing.model_size(pixmap.width(), pixmap.height())
    seen = QCoreApplication.translate(
        "ImageThumbnail", "the model sees it at {width} × {height} px ({tokens} tokens)"
    ).format(width=width, height=height, tokens=sizing.tokens(pixmap.width(), pixmap.height()))
    return f"{words}\n{seen}"


class ImageViewer(QDialog):
    """The image at full size (scrolled when larger than the screen)."""

    def __init__(self, image: ImageAttachment, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("image_viewer")
        pixmap = picture(image)
        self.setWindowTitle(size_words(image, pixmap))
        self.label = QLabel()
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        if pixmap.isNull():
            self.label.setText(self.tr("This image cannot be shown."))
        else:
            self.label.setPixmap(pixmap)
        area = QScrollArea()
        area.setWidget(self.label)
        area.setWidgetResizable(True)
        layout = QVBoxLayout(self)
        layout.addWidget(area)
        screen = QGuiApplication.primaryScreen().availableGeometry()
        self.resize(
            min(pixmap.width() + 40, screen.width() * 4 // 5),
            min(pixmap.height() + 40, screen.height() * 4 // 5),
        )


class ImageThumbnail(QToolButton):
    """One image as a small button; clicking opens :class:`ImageViewer`.

    Attributes:
        image: The attachment shown.
    """

    def __init__(
        self, image: ImageAttachment, parent: QWidget | None = None, sizing: ImageSizing | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("image_thumbnail")
        self.image = image
        pixmap = picture(image)
        self.setToolTip(size_words(image, pixmap, sizing))
        self.setIconSize(QSize(THUMBNAIL_PX, THUMBNAIL_PX))
        if pixmap.isNull():
            self.setText(image.name or self.tr("image"))
        else:
            self.setIcon(
                pixmap.scaled(
                    THUMBNAIL_PX,
                    THUMBNAIL_PX,
                    Qt.AspectRatioMode.KeepAspectRatio,
                    Qt.TransformationMode.SmoothTransformation,
                )
            )
        self.setAccessibleName(self.toolTip())
        self.clicked.connect(self.open_viewer)
        self.viewer: ImageViewer | None = None

    def open_viewer(self) -> ImageViewer:
        """Show the image at full size (non-modal)."""
        self.viewer = ImageViewer(self.image, self.window())
        self.viewer.show()
        return self.viewer


class ThumbnailRow(QWidget):
    """A sent message's images, in order (attached under its text)."""

    def __init__(self, images: Sequence[ImageAttachment], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("message_images")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        self.thumbnails = [ImageThumbnail(image) for image in images]
        for thumbnail in self.thumbnails:
            layout.addWidget(thumbnail)
        layout.addStretch(1)


class AttachmentTray(QWidget):
    """Images waiting to be sent with the next message, each with a remove button;
    hidden while empty. Their tooltips say the size the model sees (:attr:`sizing`).

    Signals:
        changed(): An image was added or removed.
    """

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("attachment_tray")
        self._images: list[ImageAttachment] = []
        self.sizing: ImageSizing | None = None
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(8, 4, 8, 0)
        self._layout.addStretch(1)
        self.setVisible(False)

    def images(self) -> tuple[ImageAttachment, ...]:
        """The images, in the order they were added."""
        return tuple(self._images)

    def add(self, image: ImageAttachment) -> None:
        """Add ``image`` (the same file twice is kept once)."""
        if any(i.sha256 == image.sha256 for i in self._images):
            return
        self._images.append(image)
        cell = QWidget()
        row = QHBoxLayout(cell)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        row.addWidget(ImageThumbnail(image, sizing=self.sizing))
        remove = QToolButton()
        remove.setObjectName("remove_image")
        remove.setText("×")
        remove.setToolTip(self.tr("Remove this image"))
        remove.clicked.connect(lambda: self._remove(image, cell))
        row.addWidget(remove, 0, Qt.AlignmentFlag.AlignTop)
        self._layout.insertWidget(self._layout.count() - 1, cell)
        self.setVisible(True)
        self.changed.emit()

    def _remove(self, image: ImageAttachment, cell: QWidget) -> None:
        self._images.remove(image)
        self._layout.removeWidget(cell)
        cell.deleteLater()
        self.setVisible(bool(self._images))
        self.changed.emit()

    def clear(self) -> None:
        """Remove every image (after the message was sent)."""
        while self._layout.count() > 1:
            item = self._layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.deleteLater()
        self._images.clear()
        self.setVisible(False)
        self.changed.emit()
