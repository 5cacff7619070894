"""GLM-4.6V (``Glm46VForConditionalGeneration``, ``model_type`` ``glm46v``): images, thinking
and tools in one prompt format.

GLM-4.6V's chat template is GLM-4.6's (tools offered in a ``# Tools`` system block, calls
written in XML, ``enable_thinking`` adding ``/nothink`` and an empty ``<think></think>``)
with a user turn that writes ``<|begin_of_image|><|image|><|end_of_image|>`` for each image
part. So the text is GLM-4.5's format
(:class:`~glmdesk.engine.formats.glm45_format.Glm45Format`, its user messages' images as
image parts) and the images are :class:`~glmdesk.engine.backends.transformers.vision.VisionFormat`'s:
each ``<|image|>`` expanded to the processor's count of merged patches, the pixel values
run at prefill.

Source: the zai-org/GLM-4.6V and GLM-4.6V-Flash model cards (native tool use, thinking
switched by ``enable_thinking``, eos ``<|endoftext|>``, ``<|user|>``, ``<|observation|>``).
"""

from __future__ import annotations

from collections.abc import Sequence

from glmdesk.core.images import ImageAttachment
from glmdesk.core.messages import ChatMessage
from glmdesk.core.tools import ToolSet
from glmdesk.engine.backends.transformers.vision import VisionFormat
from glmdesk.engine.formats.glm45_format import Glm45Format
from glmdesk.engine.formats.prompt import ReplyFilter, continued


class Glm46VisionFormat(VisionFormat):
    """GLM-4.6V's chat template with images, tools and the thinking switch.

    Args:
        processor: From :func:`glmdesk.engine.backends.transformers.vision_processor.load_processor`.
        text: GLM-4.5's format over the same tokenizer (its stop ids, think markers and
            tool-call reader are this format's).
    """

    name = "glm46v-chat-template"
    tool_calls = True
    opens_forced_call = True

    def __init__(self, processor, text: Glm45Format) -> None:
        super().__init__(processor, text.stop_ids)
        text.image_parts = True
        self.text = text
        self.reasoning = text.reasoning
        self.reasoning_close_ids = text.reasoning_close_ids
        self.marker_ids = {**self.marker_ids, **text.marker_ids}

    @property
    def thinking(self) -> bool:
        """``enable_thinking`` (``False``: the model answers without reasoning)."""
        return self.text.thinking

    @thinking.setter
    def thinking(self, value: bool) -> None:
        self.text.thinking = value

    @property
    def template_kwargs(self) -> tuple[tuple[str, object], ...]:
        """Further values the template reads for one answer (the text format's)."""
        return self.text.template_kwargs

    @template_kwargs.setter
    def template_kwargs(self, value: tuple[tuple[str, object], ...]) -> None:
        self.text.template_kwargs = value

    @property
    def opens_reasoning(self) -> bool:
        """Whether the generation prompt ends inside the think block (thinking as it is now)."""
        return self.text.opens_reasoning

    def reply_filter(self) -> ReplyFilter:
        """Every delta shown as it is (GLM-4.6V writes no ``<answer>`` markers)."""
        return self.text.reply_filter()

    def continuation_filter(self) -> ReplyFilter:
        """As :meth:`reply_filter`, for the rest of an answer (Continue)."""
        return self.text.continuation_filter()

    def tool_reply_filter(self, tools: ToolSet) -> ReplyFilter:
        """GLM-4.5's XML call reader over ``tools`` (:meth:`Glm45Format.tool_reply_filter`)."""
        return self.text.tool_reply_filter(tools)

    def _markup_ids(self, messages: Sequence[ChatMessage]) -> tuple[list[int], list[ImageAttachment]]:
        """GLM-4.5's prompt ids (one image marker per image part), and the images in
        prompt order (every user message's but an answer being continued)."""
        turns = messages[:-1] if continued(messages) else messages
        images = [a for m in turns if m.role == "user" for a in m.attachments]
        return self.text.encode(messages), images
