"""OpenAI content parts of a chat message: text, and images as ``data:`` URLs.

A user message's ``content`` may be a list of parts: ``{"type": "text", "text": ...}``
and ``{"type": "image_url", "image_url": {"url": "data:image/png;base64,..."}}`` (OpenAI's
vision format; vLLM and SGLang take the same). Images reach a vision model as
:class:`~glmdesk.core.images.ImageAttachment` values, placed before the message's text
(GLM-4V's chat template puts a turn's images first). ``http(s)`` image URLs are refused:
``glmdesk serve`` never fetches anything on a client's behalf.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.images import ImageAttachment
from glmdesk.server.errors import APIError


def _url(part: Any) -> str:
    """The URL of an ``image_url`` part (``{"url": ...}``, or a bare string as some clients send)."""
    value = part.image_url
    if isinstance(value, dict):
        value = value.get("url")
    return value if isinstance(value, str) else ""


def user_parts(
    index: int, role: str, parts: Sequence[Any], vision: bool
) -> tuple[str, tuple[ImageAttachment, ...]]:
    """The text and images of message ``index``'s content parts.

    Args:
        index: The message's position in the request (named in sentences).
        role: Its role (only user messages carry images).
        parts: Its content parts (objects with ``type``, ``text``, ``image_url``).
        vision: Whether the served model reads images.

    Returns:
        ``(text, images)``: the text parts joined, the images in order.

    Raises:
        APIError: 400, with ``param`` ``messages[i].content``, for an unknown part type, an
            image for a text model or on a non-user message, an ``http(s)`` or other
            non-``data:`` URL, or a ``data:`` URL that is not a PNG, JPEG, WebP or GIF image.
    """
    param = f"messages[{index}].content"
    texts: list[str] = []
    images: list[ImageAttachment] = []
    for k, part in enumerate(parts):
        if part.type == "text" and part.text is not None:
            texts.append(part.text)
            continue
        if part.type != "image_url":
            raise APIError(
                400,
                f"messages[{index}] has a {part.type!r} part; this server takes text and image_url parts.",
                param,
            )
        if not vision:
            raise APIError(400, f"messages[{index}] has an image, but this model reads text only.", param)
        if role != "user":
            raise APIError(
                400, f"messages[{index}] is a {role} message; only user messages carry images.", param
            )
        url = _url(part)
        if url.lower().startswith(("http://", "https://")):
            raise APIError(
                400,
                f"messages[{index}] names an image by its web address; glmdesk serve does not download "
                "images on a client's behalf. Send the image itself as a data: URL "
                "(data:image/png;base64,...).",
                f"{param}[{k}].image_url",
                "image_url_not_fetched",
            )
        try:
            images.append(ImageAttachment.from_data_url(url))
        except GlmdeskError as exc:
            raise APIError(400, f"messages[{index}]: {exc.info.message}", f"{param}[{k}].image_url") from None
    return "".join(texts), tuple(images)
