"""Images attached to user messages in the history (mixed into :class:`History`;
schema version 6, table ``message_images``).

Each image file is stored once, by content: ``<history folder>/images/<sha256[:2]>/<sha256>``
holds the file's exact bytes (a photo sent in ten conversations is one file); the table
says which message shows which image, in order, with its MIME type and file name. Files
are written by whoever adds the message (the window: the history writer's thread),
before the row, and atomically (a temporary file renamed into place). Reading checks
each file against its hash: a missing or damaged file leaves the image out and adds a
name to :attr:`ImageStore.missing_images`; opening the conversation never fails for it.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.history_errors import file_error
from glmdesk.core.images import ImageAttachment

#: Folder beside the database file that holds the image files.
IMAGES_DIR = "images"


def create_table(conn: sqlite3.Connection) -> None:
    """Schema step 6: the ``message_images`` table (composes with any other step)."""
    conn.execute(
        """CREATE TABLE IF NOT EXISTS message_images (
            message_id INTEGER NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
            position INTEGER NOT NULL,          -- 0, 1, ... in the message's order
            sha256 TEXT NOT NULL,               -- the file: images/<sha256[:2]>/<sha256>
            mime TEXT NOT NULL,
            name TEXT NOT NULL DEFAULT '',      -- the file name it came from
            PRIMARY KEY (message_id, position)
        )"""
    )


class ImageStore:
    """The image methods of :class:`~glmdesk.core.history.History` (needs ``path`` and
    ``_conn``).

    Attributes:
        missing_images: Names (file name, or the hash's start) of images left out by
            :meth:`attached` calls since it was last cleared (a missing or damaged
            file); the caller shows and clears them.
    """

    path: Path
    _conn: sqlite3.Connection
    missing_images: list[str]

    @property
    def images_dir(self) -> Path:
        """Where the image files live (beside the database file)."""
        return self.path.parent / IMAGES_DIR

    def image_file(self, sha256: str) -> Path:
        """The file of the image with this content hash."""
        return self.images_dir / sha256[:2] / sha256

    def _store_images(self, message_id: int, images: Sequence[ImageAttachment]) -> None:
        """Write each image's file once (skipped when it is there) and its row.

        Raises:
            HistoryError: when a file cannot be written (:func:`file_error`: a full disk is
                ``history_disk_full``, as SQLite's own); the transaction is rolled back.
        """
        for position, image in enumerate(images):
            file = self.image_file(image.sha256)
            if not (file.is_file() and file.stat().st_size == len(image.data)):
                temporary = file.with_name(f"{file.name}.{os.getpid()}.tmp")
                try:
                    file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                    temporary.write_bytes(image.data)
                    os.replace(temporary, file)
                except OSError as exc:
                    with contextlib.suppress(OSError):  # a partial file would only take space
                        temporary.unlink(missing_ok=True)
                    raise file_error(exc, self.path) from exc
            self._conn.execute(
                "INSERT INTO message_images (message_id, position, sha256, mime, name) VALUES (?, ?, ?, ?, ?)",
                (message_id, position, image.sha256, image.mime, image.name),
            )

    def attached(self, message_id: int) -> tuple[ImageAttachment, ...]:
        """The images of a message, in order; a missing or damaged file is left out and
        named in :attr:`missing_images`."""
        rows = self._conn.execute(
            "SELECT sha256, mime, name FROM message_images WHERE message_id = ? ORDER BY position",
            (message_id,),
        ).fetchall()
        out: list[ImageAttachment] = []
        for sha256, mime, name in rows:
            label = name or sha256[:12]
            try:
                data = self.image_file(sha256).read_bytes()
            except OSError:
                data = b""
            if hashlib.sha256(data).hexdigest() != sha256:  # missing, or not the file stored
                self.missing_images.append(label)
                continue
            out.append(ImageAttachment(data, mime, name))
        return tuple(out)


def attachments_json(images: Sequence[ImageAttachment]) -> list[dict[str, str]]:
    """A message's images for a JSON export: ``[{"name", "mime", "data_b64"}]`` (the
    files' bytes embedded, base64)."""
    return [
        {"name": image.name, "mime": image.mime, "data_b64": base64.b64encode(image.data).decode("ascii")}
        for image in images
    ]


def parse_attachments(where: str, value: object) -> tuple[ImageAttachment, ...]:
    """The images of an exported message (``None``: none).

    Raises:
        ValueError: with a sentence naming ``where``, for a list that is not one of
            images as :func:`attachments_json` writes them.
    """
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ValueError(f"{where} has attachments that are not a list.")
    out = []
    for k, item in enumerate(value):
        if not isinstance(item, dict) or not isinstance(item.get("data_b64"), str):
            raise ValueError(f"{where} has an attachment ({k + 1}) without its image.")
        try:
            data = base64.b64decode(item["data_b64"], validate=True)
            out.append(ImageAttachment.from_bytes(data, str(item.get("name") or "")))
        except (binascii.Error, ValueError, GlmdeskError) as exc:
            raise ValueError(f"{where} has an attachment ({k + 1}) that is not a usable image.") from exc
    return tuple(out)
