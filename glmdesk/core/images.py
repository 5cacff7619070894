"""Images attached to a user message, as plain values (bytes, MIME type, content hash).

The engine turns them into pixels with the model's own processor; history stores each
once by its content hash; ``glmdesk serve`` and the remote backend carry them as
``data:`` URLs (RFC 2397) in OpenAI ``image_url`` content parts.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

from glmdesk.core.errors import GlmdeskError

#: MIME types glmdesk accepts (a GIF's first frame is used).
IMAGE_MIME_TYPES = ("image/png", "image/jpeg", "image/webp", "image/gif")

#: The largest image file accepted, in bytes (20 MiB).
MAX_IMAGE_BYTES = 20 * 2**20


def sniff_mime(data: bytes) -> str | None:
    """The MIME type of image file bytes from their signature, or ``None``.

    Signatures: PNG ``\\x89PNG\\r\\n\\x1a\\n``, JPEG ``FF D8 FF``, GIF ``GIF87a``/``GIF89a``,
    WebP ``RIFF....WEBP``.
    """
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def invalid_image(name: str, reason: str) -> GlmdeskError:
    """The ``invalid_image`` error: ``name`` (a file name, or ``"image"``) cannot be used because ``reason``."""
    return GlmdeskError(
        "invalid_image", f"The image {name} cannot be used: {reason}.", name=name, reason=reason
    )


@dataclass(frozen=True)
class ImageAttachment:
    """One image attached to a user message.

    Attributes:
        data: The file's bytes, exactly as read (never re-encoded).
        mime: One of :data:`IMAGE_MIME_TYPES`, from the bytes' signature.
        name: The file name it came from (may be empty: pasted, or from a data URL).

    Raises:
        GlmdeskError: ``invalid_image`` for empty or oversized data or an unsupported type.
    """

    data: bytes = field(repr=False)
    mime: str
    name: str = ""

    def __post_init__(self) -> None:
        label = self.name or "image"
        if not self.data:
            raise invalid_image(label, "the file is empty")
        if len(self.data) > MAX_IMAGE_BYTES:
            raise invalid_image(label, f"it is larger than {MAX_IMAGE_BYTES // 2**20} MiB")
        if self.mime not in IMAGE_MIME_TYPES:
            raise invalid_image(label, "only PNG, JPEG, WebP and GIF images are supported")

    @property
    def sha256(self) -> str:
        """The content hash, 64 lowercase hex digits (history stores the file under it)."""
        return hashlib.sha256(self.data).hexdigest()

    def data_url(self) -> str:
        """The image as a ``data:<mime>;base64,...`` URL."""
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "") -> ImageAttachment:
        """An attachment of file bytes, its type read from their signature.

        Raises:
            GlmdeskError: ``invalid_image`` when the bytes are not a PNG, JPEG, WebP or GIF file.
        """
        mime = sniff_mime(data)
        if mime is None:
            raise invalid_image(name or "image", "it is not a PNG, JPEG, WebP or GIF file")
        return cls(data, mime, name)

    @classmethod
    def from_file(cls, path: str | Path) -> ImageAttachment:
        """Read an image file.

        Raises:
            GlmdeskError: ``invalid_image`` when it cannot be read or is not a supported image.
        """
        p = Path(path).expanduser()
        try:
            if p.stat().st_size > MAX_IMAGE_BYTES:
                raise invalid_image(p.name, f"it is larger than {MAX_IMAGE_BYTES // 2**20} MiB")
            data = p.read_bytes()
        except OSError as exc:
            raise invalid_image(str(p), exc.strerror or exc.__class__.__name__) from exc
        return cls.from_bytes(data, p.name)

    @classmethod
    def from_data_url(cls, url: str) -> ImageAttachment:
        """Decode a ``data:image/...;base64,...`` URL (the OpenAI ``image_url`` form).

        Raises:
            GlmdeskError: ``invalid_image`` for another URL scheme, a URL that is not
                base64, or bytes that are not a supported image.
        """
        head, sep, payload = url.partition(",")
        if not head.startswith("data:") or not sep:
            raise invalid_image("image", "only data: URLs are accepted")
        if not head.endswith(";base64"):
            raise invalid_image("image", "the data: URL is not base64-encoded")
        try:
            data = base64.b64decode(payload, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise invalid_image("image", "the data: URL's base64 is damaged") from exc
        return cls.from_bytes(data)


@dataclass(frozen=True)
class ImageSizing:
    """How a vision model's processor resizes an image (GLM-4V's rule, from its
    ``preprocessor_config.json``), so the window can say the size the model sees.

    Each side is rounded to a multiple of ``factor`` pixels (patch size x merge size);
    when the image then holds more than ``max_pixels`` (counted over ``temporal`` frames,
    as the processor counts a still image) it is scaled down, below ``min_pixels`` up,
    keeping its aspect ratio. The engine's tests check this against transformers'
    ``smart_resize``.

    Attributes:
        factor: Pixels per merged patch side (GLM-4.1V: 14 x 2 = 28).
        temporal: Frames a still image counts as (GLM-4.1V: 2).
        min_pixels: ``size.shortest_edge`` (GLM-4.1V: 12,544).
        max_pixels: ``size.longest_edge`` (GLM-4.1V: 9,633,792).
    """

    factor: int
    temporal: int
    min_pixels: int
    max_pixels: int

    def model_size(self, width: int, height: int) -> tuple[int, int]:
        """``(width, height)`` in pixels of the image as the model sees it."""
        f = self.factor
        if height < f or width < f:
            scale = max(f / height, f / width)
            height, width = int(height * scale), int(width * scale)
        h, w = round(height / f) * f, round(width / f) * f
        t = self.temporal
        if t * h * w > self.max_pixels:
            beta = math.sqrt(t * height * width / self.max_pixels)
            h, w = max(f, math.floor(height / beta / f) * f), max(f, math.floor(width / beta / f) * f)
        elif t * h * w < self.min_pixels:
            beta = math.sqrt(self.min_pixels / (t * height * width))
            h, w = math.ceil(height * beta / f) * f, math.ceil(width * beta / f) * f
        return w, h

    def tokens(self, width: int, height: int) -> int:
        """Prompt tokens the image takes (one per merged patch)."""
        w, h = self.model_size(width, height)
        return (w // self.factor) * (h // self.factor)
