"""Fixtures: one tiny random GLM-4.1V folder per session, loaded once, and test images."""

from __future__ import annotations

import importlib.util
import io
from pathlib import Path

import pytest

from glmdesk.core.images import ImageAttachment
from glmdesk.core.settings import LoadSettings


def _tiny_module():
    spec = importlib.util.spec_from_file_location("glm4v_tiny", Path(__file__).with_name("glm4v_tiny.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def glm4v_folder(tmp_path_factory) -> Path:
    """A tiny random ``Glm4vForConditionalGeneration`` folder with GLM-4.1V's processor settings."""
    return _tiny_module().write_glm4v_folder(tmp_path_factory.mktemp("glm4v") / "GLM-4.1V-tiny")


@pytest.fixture(scope="session")
def glm4v_loaded(glm4v_folder):
    """The tiny GLM-4.1V loaded by glmdesk's transformers loader (fp32, CPU)."""
    from glmdesk.engine.loader import load_model

    return load_model(LoadSettings(model=str(glm4v_folder), device="cpu"))


def picture_bytes(size: tuple[int, int], color: tuple[int, int, int], fmt: str = "PNG") -> bytes:
    """An image file of one colour with a darker square in a corner, as bytes."""
    from PIL import Image

    picture = Image.new("RGB", size, color)
    picture.paste(tuple(c // 3 for c in color), (0, 0, size[0] // 3, size[1] // 3))
    out = io.BytesIO()
    picture.save(out, format=fmt)
    return out.getvalue()


@pytest.fixture(scope="session")
def red_photo() -> ImageAttachment:
    """A 60x40 PNG (smaller than GLM-4.1V's 112x112 minimum: scaled up by the processor)."""
    return ImageAttachment.from_bytes(picture_bytes((60, 40), (200, 30, 30)), "red.png")


@pytest.fixture(scope="session")
def blue_photo() -> ImageAttachment:
    """A 300x500 JPEG."""
    return ImageAttachment.from_bytes(picture_bytes((300, 500), (20, 40, 220), "JPEG"), "blue.jpg")
