"""A backend for tests of the UI's own behaviour: scripted chunks, no model.

It implements :class:`glmdesk.engine.backends.Backend` in plain Python: each answer
streams the next scripted text one piece at a time; a test can hold the stream
between pieces (``gate``) and hold a load (``load_gate``) to make races happen on
purpose. It answers in milliseconds, so the session's rules (request ids, Stop,
stale chunks ignored, newest load wins) are tested without torch.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

from glmdesk.core.errors import GlmdeskError
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import TextPart
from glmdesk.core.settings import CacheSettings, LoadSettings, ParamsBox
from glmdesk.engine.backends import Backend, Capabilities
from glmdesk.engine.chunk import CacheStats, GenerationChunk
from glmdesk.engine.info import LoadProgress, ModelInfo


class FakeBackend(Backend):
    """Streams scripted answers.

    Args:
        name: The model name it reports.
        pieces: The text pieces of every answer.
        gate: When given, each piece after the first waits until the event is set.
        load_gate: When given, :meth:`load` waits until it is set (or cancel).
        fail_load: When given, :meth:`load` raises ``GlmdeskError(fail_load, ...)``.
    """

    name = "fake"

    def __init__(
        self,
        name: str = "fake-model",
        pieces: Sequence[str] = ("Hello", ", ", "world", "."),
        gate: threading.Event | None = None,
        load_gate: threading.Event | None = None,
        fail_load: str | None = None,
    ) -> None:
        self._info = ModelInfo(
            name=name,
            family="generic-hf",
            source_kind="folder",
            location=f"/models/{name}",
            device="cpu",
            dtype="fp32",
            quantization="none",
            footprint_mib=1.0,
            context_length=2048,
            kv_bytes_per_token=1024,
            prompt_format="fake",
            engine="fake",
        )
        self.pieces = tuple(pieces)
        self.gate = gate
        self.load_gate = load_gate
        self.fail_load = fail_load
        self.loaded = False
        self.closed = False
        self.requests: list[tuple[ChatMessage, ...]] = []
        self.conversations: list = []

    def load(self, settings: LoadSettings, progress=None, cancel: threading.Event | None = None) -> ModelInfo:
        if progress is not None:
            progress(LoadProgress("loading"))
        if self.load_gate is not None:
            while not self.load_gate.wait(0.01):
                if cancel is not None and cancel.is_set():
                    raise GlmdeskError("load_cancelled", "Loading was cancelled.")
        if self.fail_load:
            raise GlmdeskError(self.fail_load, f"{self._info.name} failed to load.", path=self._info.location)
        self.loaded = True
        return self._info

    @property
    def info(self) -> ModelInfo:
        return self._info

    def stream(
        self,
        messages: Sequence[ChatMessage],
        params: ParamsBox,
        cache: CacheSettings | None = None,
        stop: threading.Event | None = None,
        conversation=None,
    ) -> Iterator[GenerationChunk]:
        self.requests.append(tuple(messages))
        self.conversations.append(conversation)
        stop = stop or threading.Event()
        n = 0
        for i, piece in enumerate(self.pieces):
            if i and self.gate is not None:
                while not self.gate.wait(0.01):
                    if stop.is_set():
                        break
            if stop.is_set():
                yield GenerationChunk(n_generated=n, finish_reason="cancelled", cache=CacheStats())
                return
            n += 1
            limit = params.get().max_new_tokens
            finish = "length" if n >= limit else ("stop" if i == len(self.pieces) - 1 else None)
            yield GenerationChunk(
                parts=(TextPart(piece),), n_generated=n, prompt_tokens=5, finish_reason=finish
            )
            if finish:
                return

    def capabilities(self) -> Capabilities:
        return Capabilities(engine="fake", kv_strategies={"full": None}, context_length=2048)

    def close(self) -> None:
        self.closed = True


#: One custom function for the Tools section (a weather lookup), as a user types it.
WEATHER = '[{"name": "get_weather", "parameters": {"type": "object"}}]'


class CallingBackend(FakeBackend):
    """Streams scripted chunks; with ``steps``, each chunk waits for one release."""

    def __init__(self, chunks: Sequence[GenerationChunk], steps: threading.Semaphore | None = None) -> None:
        super().__init__()
        self.chunks, self.steps = list(chunks), steps

    def stream(self, messages, params, cache=None, stop=None, conversation=None) -> Iterator[GenerationChunk]:
        self.requests.append(tuple(messages))
        for chunk in self.chunks:
            if self.steps is not None:
                while not self.steps.acquire(timeout=0.01):
                    if stop is not None and stop.is_set():
                        yield GenerationChunk(finish_reason="cancelled")
                        return
            yield chunk

    def capabilities(self) -> Capabilities:
        return Capabilities(engine="fake", kv_strategies={"full": None}, context_length=2048, tool_calls=True)


def call_chunk(*calls) -> GenerationChunk:
    """The final chunk of a reply that ends with ``calls`` (parsed, as the GLM-4.5 parser
    gives them: one done part per call)."""
    from glmdesk.core.parts import ToolCallPart

    parts = tuple(ToolCallPart(c.name, c.arguments_json(), done=True) for c in calls)
    return GenerationChunk(
        finish_reason="tool_calls",
        tool_call=calls[0],
        tool_calls=tuple(calls),
        parts=parts,
        n_generated=len(calls),
        prompt_tokens=5,
    )


class ScriptedBackend(FakeBackend):
    """A GLM-4.5 model with a tool format that plays one scripted reply per request
    (the last reply again when the script runs out) and keeps every request's
    messages (what the engine received)."""

    def __init__(self, *replies: Sequence[GenerationChunk], context_length: int = 2048) -> None:
        super().__init__(name="GLM-4.5-scripted")
        self._info = ModelInfo(
            **{**self._info.__dict__, "family": "glm4-moe", "context_length": context_length}
        )
        self.replies = [list(r) for r in replies]
        self.context_length = context_length

    def stream(self, messages, params, cache=None, stop=None, conversation=None) -> Iterator[GenerationChunk]:
        self.requests.append(tuple(messages))
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        yield from reply

    def capabilities(self) -> Capabilities:
        return Capabilities(
            engine="fake", kv_strategies={"full": None}, context_length=self.context_length, tool_calls=True
        )


def text_reply(text: str) -> list[GenerationChunk]:
    """A reply of ``text`` that ends with ``stop``."""
    return [GenerationChunk(parts=(TextPart(text),), n_generated=1, prompt_tokens=5, finish_reason="stop")]
