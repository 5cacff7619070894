"""GLM vision models (GLM-4.1V, GLM-4.5V, GLM-4.6V, GLM-OCR) on the transformers engine.

A user message's :class:`~glmdesk.core.images.ImageAttachment` values go through the
model's own processor (:mod:`glmdesk.engine.backends.transformers.vision_processor`): the chat template writes
``<|begin_of_image|><|image|><|end_of_image|>`` for each image, the single ``<|image|>``
becomes one token per merged patch (``t x h x w / merge_size**2``, the processor's own
count), and the pixel values enter the model once, at prefill, with GLM-4V's 3D rotary
positions (``get_rope_index``: text positions on all three axes, image tokens on
time/height/width). Tokens after an image continue at ``position + rope delta``, so the
decode loop (:func:`glmdesk.engine.decode.decoding.generate_tokens`) runs unchanged; image tokens
are prompt tokens, counted in the context and the KV cache like any other.

GLM-4.6V's format (thinking switch, tools) is
:class:`~glmdesk.engine.backends.transformers.vision_glm46.Glm46VisionFormat`, which writes
the text as GLM-4.5's format and expands the images here (:meth:`VisionFormat._markup_ids`
is the seam).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.images import ImageAttachment, ImageSizing
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ThinkMarkers
from glmdesk.core.settings import CacheSettings
from glmdesk.engine.backends.transformers.loaded_model import LoadedModel
from glmdesk.engine.backends.transformers.vision_processor import to_picture
from glmdesk.engine.cache.base import run_model
from glmdesk.engine.cache.full import FullCacheStrategy
from glmdesk.engine.formats.answer_markers import ANSWER_MARKERS, AnswerMarkerFilter
from glmdesk.engine.formats.prompt import (
    PromptFormat,
    ReplyFilter,
    _placeholders,
    continued,
    plain_messages,
    without_reasoning,
)

#: GLM-4.1V-Thinking's reasoning block (shown as reasoning, :mod:`glmdesk.engine.families.parser`).
THINK = ThinkMarkers("<think>", "</think>")

#: Processed images kept per model (by content hash), so fitting a prompt into the
#: context, which encodes it more than once, runs the image processor once per image.
KEPT_PICTURES = 16


@dataclass(frozen=True)
class VisionInputs:
    """What a prompt with images adds to its ids at prefill.

    Attributes:
        pixel_values: ``[patches, 3 x temporal_patch x patch x patch]``, every image's
            patches in prompt order (the processor's layout).
        grid_thw: ``[images, 3]``: each image's patch grid (time, height, width).
        mm_token_type_ids: ``[1, n_prompt]``: 1 at image tokens, 0 elsewhere.
    """

    pixel_values: torch.Tensor
    grid_thw: torch.Tensor
    mm_token_type_ids: torch.Tensor


class VisionFormat(PromptFormat):
    """GLM-4V's chat template with images, through the model's processor.

    Text is encoded as :class:`~glmdesk.engine.formats.prompt.ChatTemplateFormat` does (the
    template's markup with special tokens recognised, contents as plain text, so a
    typed ``<|image|>`` stays text); each image marker is then expanded to the
    processor's number of image tokens. For ordinary text the ids equal
    ``processor(text=template, images=...)["input_ids"]``.

    Args:
        processor: From :func:`glmdesk.engine.backends.transformers.vision_processor.load_processor`.
        stop_ids: Ids that end a reply.
    """

    name = "glm4v-chat-template"

    def __init__(self, processor, stop_ids: frozenset[int]) -> None:
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.stop_ids = frozenset(stop_ids)
        # GLM-4.1V-Thinking writes <think>...</think> first: streamed as reasoning parts.
        vocabulary = self.tokenizer.get_vocab()
        self.reasoning = THINK if THINK.open in vocabulary and THINK.close in vocabulary else None
        self.marker_ids = {
            vocabulary[m]: m for m in (THINK.open, THINK.close, *ANSWER_MARKERS) if m in vocabulary
        }
        self.image_token_id = int(processor.image_token_id)
        self._pictures: OrderedDict[str, tuple[torch.Tensor, torch.Tensor]] = OrderedDict()
        self._inputs: OrderedDict[tuple[int, ...], VisionInputs] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, messages: Sequence[ChatMessage]) -> list[int]:
        """See :meth:`PromptFormat.encode`; a prompt with images remembers its
        :class:`VisionInputs` for :meth:`vision_inputs`.

        Raises:
            GlmdeskError: ``invalid_image`` for an image that cannot be decoded.
        """
        ids, images = self._markup_ids(messages)
        if ids.count(self.image_token_id) != len(images):
            raise GlmdeskError(
                "generation_failed",
                "The model's chat template did not place every attached image in the prompt.",
                detail=f"{len(images)} images, {ids.count(self.image_token_id)} image markers",
            )
        if not images:
            return ids
        processed = [self._processed(image) for image in images]
        merge = int(self.processor.image_processor.merge_size) ** 2
        counts = iter(int(grid.prod()) // merge for _, grid in processed)
        out: list[int] = []
        for token in ids:
            out += [token] * next(counts) if token == self.image_token_id else [token]
        kinds = self.processor.create_mm_token_type_ids([out])[0]
        inputs = VisionInputs(
            torch.cat([p for p, _ in processed]),
            torch.cat([g for _, g in processed]),
            torch.tensor([kinds], dtype=torch.long),
        )
        with self._lock:
            self._inputs[tuple(out)] = inputs
            while len(self._inputs) > 4:
                self._inputs.popitem(last=False)
        return out

    def sizing(self) -> ImageSizing:
        """The image processor's resizing rule (for the window's size note)."""
        ip = self.processor.image_processor
        size = ip.size
        return ImageSizing(
            int(ip.patch_size) * int(ip.merge_size),
            int(ip.temporal_patch_size),
            int(size["shortest_edge"]),
            int(size["longest_edge"]),
        )

    def reply_filter(self) -> ReplyFilter:
        """The reply without GLM-4.1V-Thinking's ``<answer>`` markers (:class:`AnswerMarkerFilter`)."""
        return AnswerMarkerFilter()

    def continuation_filter(self) -> ReplyFilter:
        """As :meth:`reply_filter`, for the rest of an answer (Continue)."""
        return AnswerMarkerFilter()

    def vision_inputs(self, ids: Sequence[int]) -> VisionInputs | None:
        """The images of a prompt :meth:`encode` returned, or ``None`` (no images)."""
        with self._lock:
            return self._inputs.get(tuple(ids))

    def _markup_ids(self, messages: Sequence[ChatMessage]) -> tuple[list[int], list[ImageAttachment]]:
        """Prompt ids with one image marker per image, and the images in prompt order."""
        partial = messages[-1].content if continued(messages) else None
        turns = list(messages[:-1] if partial is not None else messages)
        holders = _placeholders(turns)
        rows, images = [], []
        flats = plain_messages(turns)
        if self.reasoning is not None:  # earlier answers go in without their reasoning block
            flats = [without_reasoning(m, self.reasoning) for m in flats]
        for message, flat, holder in zip(turns, flats, holders, strict=True):
            content: object = holder
            if message.attachments:
                content = [{"type": "image"} for _ in message.attachments] + [
                    {"type": "text", "text": holder}
                ]
                images += message.attachments
            rows.append({"role": flat.role, "content": content})
        rendered = self.processor.apply_chat_template(rows, tokenize=False, add_generation_prompt=True)
        contents = {h: f.content for h, f in zip(holders, flats, strict=True)}
        ids: list[int] = []
        pieces = re.split("(" + "|".join(map(re.escape, holders)) + ")", rendered) if holders else [rendered]
        for k, piece in enumerate(pieces):
            if k % 2 == 0:
                ids += self.tokenizer.encode(piece, add_special_tokens=False)
            elif contents[piece]:
                ids += self._plain(contents[piece])
        if partial:
            ids += self._plain(partial)
        return ids, images

    def _plain(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)

    def _processed(self, image: ImageAttachment) -> tuple[torch.Tensor, torch.Tensor]:
        """``(pixel_values, grid_thw [1, 3])`` of one image, from the image processor."""
        key = image.sha256
        with self._lock:
            if key in self._pictures:
                self._pictures.move_to_end(key)
                return self._pictures[key]
        out = self.processor.image_processor(images=[to_picture(image)], return_tensors="pt")
        entry = (out["pixel_values"], out["image_grid_thw"])
        with self._lock:
            self._pictures[key] = entry
            while len(self._pictures) > KEPT_PICTURES:
                self._pictures.popitem(last=False)
        return entry


class VisionCacheStrategy(FullCacheStrategy):
    """The full KV cache, with a prompt's images run at prefill.

    A prompt with images (:meth:`VisionFormat.vision_inputs`) starts a fresh cache and is
    prefilled in one forward with its pixel values and 3D positions; every later token
    runs at its index plus the prompt's rope delta (``max position + 1 - n_prompt``,
    usually negative: an image of ``h x w`` merged patches advances positions by
    ``max(h, w)``, not ``h x w``). A text-only prompt behaves as the full strategy.

    Args:
        model: A ``Glm4vForConditionalGeneration`` (or the MoE one).
        settings: Cache settings.
        fmt: The model's :class:`VisionFormat`.
    """

    def __init__(self, model, settings: CacheSettings, fmt: VisionFormat) -> None:
        super().__init__(model, settings)
        self.fmt = fmt
        self.rope_delta = 0
        self._pending: VisionInputs | None = None
        self._holds_images = False

    def reuse(self, prompt_ids: Sequence[int]) -> int:
        """As :meth:`CacheStrategy.reuse`, but a prompt with images, or a cache that holds
        some, starts afresh (their positions depend on the whole image layout)."""
        inputs = self.fmt.vision_inputs(prompt_ids)
        if inputs is None and not self._holds_images:
            return super().reuse(prompt_ids)
        self.cache = self._fresh_cache()
        self.tokens_seen, self.ids, self._exact = 0, [], True
        self.rope_delta, self._holds_images, self._pending = 0, False, inputs
        return 0

    @torch.inference_mode()
    def prefill(self, input_ids: torch.Tensor) -> torch.Tensor:
        """See :meth:`CacheStrategy.prefill`; a prompt with images runs in one forward."""
        if self._pending is None:
            return super().prefill(input_ids)
        inputs, self._pending = self._pending, None
        input_ids = input_ids.to(self.device)
        kinds = inputs.mm_token_type_ids.to(self.device)
        grid = inputs.grid_thw.to(self.device)
        positions, delta = self.model.model.get_rope_index(
            input_ids, mm_token_type_ids=kinds, image_grid_thw=grid
        )
        self._exact = False
        out = self.model(
            input_ids=input_ids,
            pixel_values=inputs.pixel_values.to(self.device),
            image_grid_thw=grid,
            mm_token_type_ids=kinds,
            position_ids=positions,
            cache=self.cache,
            use_cache=True,
            logits_to_keep=1,
        )
        self.rope_delta = int(delta.reshape(-1)[0])
        self.tokens_seen += input_ids.shape[1]
        self.ids.extend(input_ids[0].tolist())
        self._exact = self._holds_images = True
        return out.logits[0, -1].float()

    def _forward(self, input_ids: torch.Tensor, start: int) -> torch.Tensor:
        return run_model(self.model, self.cache, input_ids, start + self.rope_delta, step=self.decode_step)


class _TextOnlySource:
    """Another KV-cache strategy for a vision model: text prompts only; a prompt with
    images is refused with a sentence (its window would evict image positions)."""

    def __init__(self, inner, fmt: VisionFormat) -> None:
        self._inner = inner
        self._fmt = fmt

    def reuse(self, prompt_ids: Sequence[int]) -> int:
        if self._fmt.vision_inputs(prompt_ids) is not None:
            name = self._inner.name
            raise GlmdeskError(
                "invalid_setting",
                f"Images need the full KV cache; the {name} cache cannot hold them. Choose the full cache.",
                name="kv_cache",
                value=name,
                reason="images need the full cache",
            )
        return self._inner.reuse(prompt_ids)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


class VisionLoadedModel(LoadedModel):
    """A :class:`~glmdesk.engine.backends.transformers.loader.LoadedModel` whose prompts may carry images.

    Its ``prompt_format`` is a :class:`VisionFormat`; the full cache strategy runs
    images (:class:`VisionCacheStrategy`), the others answer text-only prompts.
    """

    prompt_format: VisionFormat

    vision = True

    def image_sizing(self) -> ImageSizing:
        """The image processor's resizing rule (for the window's size note)."""
        return self.prompt_format.sizing()

    def open_source(self, cache: CacheSettings):
        """A fresh logits source for one answer (see :class:`VisionLoadedModel`)."""
        if cache.strategy != "full":
            return _TextOnlySource(super().open_source(cache), self.prompt_format)
        strategy = VisionCacheStrategy(self.model, cache, self.prompt_format)
        strategy.decode_step = self.step
        strategy.tuner = self.tuner
        return strategy
