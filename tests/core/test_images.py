"""Attached images as plain values: type from the bytes, content hash, data: URLs."""

from __future__ import annotations

import base64
import hashlib

import pytest

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.images import MAX_IMAGE_BYTES, ImageAttachment, sniff_mime
from glmdesk.core.messages import ChatMessage

PNG = b"\x89PNG\r\n\x1a\n" + b"rest of the file"
JPEG = b"\xff\xd8\xff\xe0" + b"jfif"
GIF = b"GIF89a" + b"frames"
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 "


@pytest.mark.parametrize(
    ("data", "mime"), [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp")]
)
def test_type_comes_from_the_bytes(data, mime):
    assert sniff_mime(data) == mime
    image = ImageAttachment.from_bytes(data, "x")
    assert image.mime == mime
    assert image.sha256 == hashlib.sha256(data).hexdigest()


def test_data_url_round_trip():
    image = ImageAttachment.from_bytes(PNG, "a.png")
    url = image.data_url()
    assert url.startswith("data:image/png;base64,")
    again = ImageAttachment.from_data_url(url)
    assert again.data == PNG and again.sha256 == image.sha256


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("https://example.com/cat.png", "only data: URLs"),
        ("data:image/png,plain", "not base64"),
        ("data:image/png;base64,@@@", "damaged"),
        ("data:image/png;base64," + base64.b64encode(b"%PDF-1.4").decode(), "not a PNG, JPEG, WebP or GIF"),
    ],
)
def test_bad_data_urls_are_sentences(url, words):
    with pytest.raises(GlmdeskError) as err:
        ImageAttachment.from_data_url(url)
    assert err.value.info.kind == "invalid_image"
    assert words in err.value.info.message


def test_files_are_read_and_checked(tmp_path):
    good = tmp_path / "photo.jpg"
    good.write_bytes(JPEG)
    assert ImageAttachment.from_file(good).name == "photo.jpg"
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(GlmdeskError, match="notes.txt cannot be used"):
        ImageAttachment.from_file(text)
    with pytest.raises(GlmdeskError, match="missing.png"):
        ImageAttachment.from_file(tmp_path / "missing.png")
    with pytest.raises(GlmdeskError, match="larger than 20 MiB"):
        ImageAttachment(b"\x89PNG" + b"\0" * MAX_IMAGE_BYTES, "image/png")


def test_only_user_messages_carry_attachments():
    image = ImageAttachment.from_bytes(PNG)
    assert ChatMessage("user", "what is it?", attachments=(image,)).attachments == (image,)
    with pytest.raises(ValueError, match="only a user message"):
        ChatMessage("assistant", "a cat", attachments=(image,))
