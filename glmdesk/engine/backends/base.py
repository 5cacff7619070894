"""The one interface everything above the engine uses to answer: :class:`Backend`.

A backend loads a model (settings, progress callback, cancel event -> :class:`ModelInfo`),
streams answers as :class:`GenerationChunk` values (never raising), says what it can
do as typed :class:`Capabilities`, and closes. Implementations live beside this
module: ``transformers`` (HF folders, converted ChatGLM, bitsandbytes), ``llamacpp``
(GGUF files on llama-cpp-python) and ``remote`` (OpenAI-compatible servers).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.images import ImageSizing
from glmdesk.core.messages import ChatMessage
from glmdesk.core.sampling_fields import field_names, live_fields
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox
from glmdesk.engine.chunk import GenerationChunk
from glmdesk.engine.info import LoadProgress, ModelInfo

#: Every sampling field of :class:`~glmdesk.core.settings.SamplingParams`
#: (:data:`~glmdesk.core.sampling_fields.SAMPLING_TABLE`'s names).
SAMPLING_FIELDS = field_names()
#: Memory probes: a CUDA device (NVML and torch), process RAM, a remote server, none.
MEMORY_PROBES = ("cuda", "cpu", "remote", "none")


@dataclass(frozen=True)
class Capabilities:
    """What a loaded backend can do, as data the UI words in its own language.

    Attributes:
        engine: ``transformers``, ``llamacpp`` or ``remote``.
        live_sampling: Sampling fields read before every token (a change applies from
            the next token).
        per_answer_sampling: Sampling fields read once when an answer starts.
        kv_strategies: ``{strategy: None or ErrorInfo}`` for every KV-cache strategy;
            an unavailable one carries the typed reason (``invalid_setting``...).
        quantizations: ``{quantization: None or ErrorInfo}`` for this backend.
        precisions: ``{precision: None or ErrorInfo}`` for this backend.
        memory_probe: One of :data:`MEMORY_PROBES`.
        device: ``cpu``, ``cuda:N`` or the server's URL.
        context_length: The context window, in tokens.
        stop_ids: Ids that end a reply (empty when the backend does not expose ids).
        tool_calls: Whether the model's prompt format has tool calls.
        continue_answers: Whether an answer cut by the length limit can be continued in
            place (:meth:`Backend.stream` with the conversation ending with that answer).
        vision: Whether images attached to user messages reach the model (a GLM vision
            model on the transformers engine; a server, which refuses them itself when its
            model has none).
        image_sizing: How the model's processor resizes images (``None``: unknown, a
            server's business), so the window can say the size the model sees.
        thinking_switch: Whether reasoning can be switched off for an answer
            (``SamplingParams.enable_thinking``: GLM-4.5/4.6/4.7's template switch; a
            server of such a model takes vLLM's ``chat_template_kwargs``).
    """

    engine: str
    live_sampling: frozenset[str] = live_fields()
    per_answer_sampling: frozenset[str] = frozenset(SAMPLING_FIELDS) - live_fields()
    kv_strategies: Mapping[str, ErrorInfo | None] = field(default_factory=dict)
    quantizations: Mapping[str, ErrorInfo | None] = field(default_factory=dict)
    precisions: Mapping[str, ErrorInfo | None] = field(default_factory=dict)
    memory_probe: str = "none"
    device: str = "cpu"
    context_length: int = 0
    stop_ids: frozenset[int] = frozenset()
    tool_calls: bool = False
    continue_answers: bool = True
    vision: bool = False
    image_sizing: ImageSizing | None = None
    thinking_switch: bool = False

    def __post_init__(self) -> None:
        if self.memory_probe not in MEMORY_PROBES:
            raise ValueError(f"unknown memory probe {self.memory_probe!r}; expected one of {MEMORY_PROBES}")


ProgressCallback = Callable[[LoadProgress], None]


class Backend(ABC):
    """One way of answering. Created unloaded; :meth:`load` once, then
    :meth:`stream` any number of times (one at a time), then :meth:`close`.

    Attributes:
        name: The engine's name (``transformers``, ``llamacpp``, ``remote``).
    """

    name = "base"

    @abstractmethod
    def load(
        self,
        settings: LoadSettings,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> ModelInfo:
        """Load the model ``settings`` names.

        Args:
            settings: What to load and how.
            progress: Called with each :class:`LoadProgress`, from this thread.
            cancel: Set it to abandon loading between stages.

        Returns:
            What was loaded.

        Raises:
            GlmdeskError: with a sentence (``model_not_found``, ``load_cancelled``...).
        """

    @property
    @abstractmethod
    def info(self) -> ModelInfo:
        """What is loaded.

        Raises:
            RuntimeError: before :meth:`load` succeeded.
        """

    @abstractmethod
    def stream(
        self,
        messages: Sequence[ChatMessage],
        params: ParamsBox,
        cache: CacheSettings | None = None,
        stop: threading.Event | None = None,
        conversation: Hashable | None = None,
    ) -> Iterator[GenerationChunk]:
        """Stream one answer (see :func:`glmdesk.engine.decode.generate.stream_answer`).

        ``conversation``: a key (the conversation's id; ``glmdesk serve`` uses
        ``"serve"``) under which the KV cache is kept for the next request with that
        key, which then prefills only the prompt tokens after the longest common
        prefix (``chunk.reused_tokens``). ``None``: no cache kept.

        Never raises: a failure ends the stream with ``finish_reason="error"``.
        """

    def forget_conversation(self, conversation: Hashable) -> None:
        """Drop the KV cache kept for ``conversation`` (deleted or cleared). Default: none kept."""
        return None

    def kept_kv_bytes(self) -> int:
        """KV bytes kept for conversations between answers, in bytes (the gauge's share). Default 0."""
        return 0

    def stream_prompt(
        self,
        prompt: str,
        params: ParamsBox,
        cache: CacheSettings | None = None,
        stop: threading.Event | None = None,
    ) -> Iterator[GenerationChunk]:
        """Stream the continuation of a raw text prompt (no chat format; an OpenAI
        ``/v1/completions`` request). Same contract as :meth:`stream`.

        This default ends at once with ``generation_failed``: a backend that can
        continue raw text overrides it.
        """
        error = ErrorInfo(
            "generation_failed",
            f"The {self.name} engine cannot continue a raw prompt.",
            {"detail": f"the {self.name} engine cannot continue a raw prompt"},
        )
        return iter([GenerationChunk(finish_reason="error", error=error)])

    def prompt_tokens(self, messages: Sequence[ChatMessage] | str) -> int | None:
        """Tokens in the prompt for ``messages`` (a chat) or a raw text prompt, in
        tokens, or ``None`` when this backend cannot count them before answering."""
        return None

    @abstractmethod
    def capabilities(self) -> Capabilities:
        """What this loaded model can do."""

    @abstractmethod
    def close(self) -> None:
        """Release the model (weights, caches, connections). Idempotent."""


def images_refused(
    messages: Sequence[ChatMessage], model: str, engine: str
) -> Iterator[GenerationChunk] | None:
    """The error stream for images sent to a model without vision, or ``None``.

    Only the newest user message counts: images on older turns (a conversation begun
    with a vision model) are left out of a text model's prompt, their text kept.

    Args:
        messages: The request's conversation.
        model: The model's name (in the sentence).
        engine: The backend's name (``llamacpp`` gets its own sentence in the window).
    """
    users = [m for m in messages if m.role == "user"]
    if not users or not users[-1].attachments:
        return None
    if engine == "llamacpp":
        sentence = (
            f"{model} is open with the llama.cpp engine, which cannot read images here: open a GLM vision "
            "model (GLM-4.1V, GLM-4.6V) with the transformers engine, or on a server."
        )
    else:
        sentence = f"{model} does not read images: open a GLM vision model (GLM-4.1V, GLM-4.6V) to ask about a picture."
    error = ErrorInfo("vision_unavailable", sentence, {"model": model, "engine": engine})
    return iter([GenerationChunk(finish_reason="error", error=error)])
