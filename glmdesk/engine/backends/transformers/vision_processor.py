"""GLM-4.1V / 4.5V / 4.6V / GLM-OCR's processor without torchvision, and images as PIL pictures.

transformers' ``AutoProcessor`` for a ``glm4v`` folder also builds the video processor,
which needs torchvision (not installable beside every torch build). glmdesk answers
about images only, so it builds :class:`ImageProcessor`: transformers' own
``Glm4vProcessor`` (the same image-token expansion, ``mm_token_type_ids`` and chat
template) with the image processor's PIL backend and no video slot; GLM-4.6V's and
GLM-OCR's ``Glm46VProcessor`` differs from it only in video frames. Image sizes follow
the folder's ``preprocessor_config.json`` (``smart_resize``: sides rounded to
``patch_size x merge_size`` pixels, total pixels between ``size.shortest_edge`` and
``size.longest_edge``).
"""

from __future__ import annotations

import io
from pathlib import Path

from glmdesk.core.images import ImageAttachment, invalid_image

#: ``model_type`` values of the vision models glmdesk runs with the transformers engine.
VISION_MODEL_TYPES = frozenset({"glm4v", "glm4v_moe", "glm46v", "glm_ocr"})


def is_vision_config(config) -> bool:
    """Whether a transformers config (or a ``config.json`` dict) is a GLM vision model."""
    model_type = config.get("model_type") if isinstance(config, dict) else getattr(config, "model_type", None)
    return model_type in VISION_MODEL_TYPES


def _processor_class():
    from transformers import Glm4vProcessor
    from transformers.processing_utils import ProcessorMixin

    class ImageProcessor(Glm4vProcessor):
        """``Glm4vProcessor`` with an image processor and a tokenizer only (no video slot)."""

        def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs) -> None:
            if tokenizer is None:
                raise ValueError("the GLM vision processor needs the model's tokenizer")
            self.image_token = getattr(tokenizer, "image_token", None) or "<|image|>"
            self.video_token = getattr(tokenizer, "video_token", None) or "<|video|>"
            self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
            self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)
            self.video_start_id = tokenizer.convert_tokens_to_ids("<|begin_of_video|>")
            self.video_end_id = tokenizer.convert_tokens_to_ids("<|end_of_video|>")

    return ImageProcessor


def load_processor(folder: str | Path, tokenizer):
    """The folder's GLM vision processor (PIL image backend, no video processor).

    Args:
        folder: A Hugging Face folder (or hub id) with ``preprocessor_config.json``.
        tokenizer: The tokenizer already loaded for it; its chat template is the
            processor's unless the folder has its own ``chat_template.jinja``/``.json``.

    Returns:
        A ``Glm4vProcessor`` (``processor(text=..., images=...)`` gives ``input_ids``,
        ``pixel_values`` ``[patches, 3 x temporal x patch x patch]``, ``image_grid_thw``
        ``[images, 3]`` and ``mm_token_type_ids``).

    Raises:
        GlmdeskError: ``load_failed`` when the folder has no usable image processor.
    """
    from transformers import AutoImageProcessor

    from glmdesk.core.errors import GlmdeskError

    try:
        image_processor = AutoImageProcessor.from_pretrained(folder, backend="pil")
    except Exception as exc:  # transformers raises many types for a missing or broken config
        raise GlmdeskError(
            "load_failed",
            f"The model's image processor could not be loaded: {exc}",
            detail=str(exc),
        ) from exc
    return _processor_class()(
        image_processor=image_processor, tokenizer=tokenizer, chat_template=tokenizer.chat_template
    )


def to_picture(image: ImageAttachment):
    """The attachment decoded as an RGB PIL image (a GIF's or WebP's first frame).

    Raises:
        GlmdeskError: ``invalid_image`` when the bytes cannot be decoded.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(image.data)) as picture:
            picture.seek(0)
            return picture.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise invalid_image(image.name or "image", "the file is damaged or cannot be decoded") from exc
