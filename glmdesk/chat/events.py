"""What one answer run tells its front end, as plain frozen values.

An answer run (:func:`glmdesk.chat.answer.run_answer`) turns the engine's chunks into
these events, in reply order. The window, ``glmdesk chat`` and ``glmdesk serve`` differ
only in how they show them:

- :class:`ReasoningDelta`, :class:`TextDelta`: new characters of the reasoning (GLM-Z1's
  ``<think>`` block, markers left out) and of the answer.
- :class:`ToolCallStarted`, :class:`ToolCallGrowing`, :class:`ToolCallParsed`,
  :class:`ToolCallDropped`, :class:`ToolCallComplete`: a call while it is written (its
  index in the reply, its text so far), a call whose text parsed, a call whose text did
  not parse and was released as answer text, and, before the reply ends, each call to
  run.
- :class:`ToolResultReady`, :class:`ToolsAnswered`: what a tool returned (or why it did
  not run), then the messages that feed the results back before the answer goes on.
- :class:`StepFigures`: the figures of a step (tokens, speed, KV cache), before its deltas.
- :class:`AnswerDone`, :class:`AnswerFailed`: a reply ended. An ``AnswerDone`` with
  ``finish_reason == "tool_calls"`` is followed by the calls' results and the next reply
  when the run answers tools; only the last ``AnswerDone`` / ``AnswerFailed`` ends the run.

Source of the shape: GPT4All's ``ChatItem`` kinds (text, think, tool call, tool
response) and llama.cpp's ``common_chat_msg_diff`` (reasoning, content and tool-call
deltas that its server and CLI both read).
"""

from __future__ import annotations

from dataclasses import dataclass

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import MessagePart
from glmdesk.core.tools import ToolCall
from glmdesk.engine.chunk import CacheStats, GenerationChunk


@dataclass(frozen=True)
class AnswerFigures:
    """How a reply went, from its newest chunk (see :class:`GenerationChunk` for each field).

    Attributes:
        prompt_tokens: Tokens in the fitted prompt, in tokens.
        n_generated: Tokens generated, in tokens.
        ttft_s: Time to the first token, in s.
        answer_ttft_s: For a reply that thought first, time to its first answer part, in s.
        reasoning_tokens: Tokens spent thinking before the answer, in tokens.
        tokens_per_s: Decode speed after the first token, in tokens/s.
        cache: The KV cache after the step.
        dropped_messages: Indices of request messages left out of the prompt.
        reused_tokens: Prompt tokens whose KV was reused, in tokens.
        kept_kv_bytes: KV kept for other conversations, in bytes.
        reply_limit: Tokens this reply may use, in tokens (0 before the prompt is fitted).
    """

    prompt_tokens: int = 0
    n_generated: int = 0
    ttft_s: float = 0.0
    answer_ttft_s: float = 0.0
    reasoning_tokens: int = 0
    tokens_per_s: float = 0.0
    cache: CacheStats = CacheStats()
    dropped_messages: tuple[int, ...] = ()
    reused_tokens: int = 0
    kept_kv_bytes: int = 0
    reply_limit: int = 0

    @classmethod
    def of(cls, chunk: GenerationChunk) -> AnswerFigures:
        """The figures ``chunk`` carries."""
        return cls(
            chunk.prompt_tokens,
            chunk.n_generated,
            chunk.ttft_s,
            chunk.answer_ttft_s,
            chunk.reasoning_tokens,
            chunk.tokens_per_s,
            chunk.cache,
            chunk.dropped_messages,
            chunk.reused_tokens,
            chunk.kept_kv_bytes,
            chunk.reply_limit,
        )


@dataclass(frozen=True)
class ReasoningDelta:
    """New reasoning characters."""

    text: str


@dataclass(frozen=True)
class TextDelta:
    """New answer characters (whole characters only: the engine holds back a split one)."""

    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    """The model began writing a call.

    Attributes:
        index: The call's place among the reply's calls (0 first).
        name: The tool's name (``interpreter`` for code).
    """

    index: int
    name: str


@dataclass(frozen=True)
class ToolCallGrowing:
    """A call's text grew.

    Attributes:
        index: As in :class:`ToolCallStarted`.
        name: The tool's name.
        arguments_so_far: The whole text written so far (not a delta): GLM-4's JSON
            arguments, ChatGLM3's ``tool_call(...)``, the interpreter's fenced code.
    """

    index: int
    name: str
    arguments_so_far: str


@dataclass(frozen=True)
class ToolCallParsed:
    """A call's text parsed (it may run once the reply ends with ``tool_calls``; a
    further call may follow in the same reply).

    Attributes:
        index: As in :class:`ToolCallStarted`.
        name: The tool's name.
        arguments: The parsed arguments as JSON text.
    """

    index: int
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolCallDropped:
    """A call being written did not parse: its text was released as answer text (the
    next :class:`TextDelta`), and it will not run."""

    index: int


@dataclass(frozen=True)
class ToolCallComplete:
    """A call of the reply parsed (sent before the reply's :class:`AnswerDone`)."""

    index: int
    call: ToolCall


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned, or why it did not run.

    Attributes:
        content: The observation as the model reads it.
        images: PNG images to show and keep with it (bytes of each file).
        declined: True when the call was not run (denied; ``content`` says so).
    """

    content: str
    images: tuple[bytes, ...] = ()
    declined: bool = False


@dataclass(frozen=True)
class ToolResultReady:
    """A call of the reply was answered (run, or declined)."""

    index: int
    call: ToolCall
    result: ToolResult


@dataclass(frozen=True)
class ToolsAnswered:
    """The reply's calls and results as the conversation keeps them (each call as an
    assistant message, the first with the text shown before it and the reply's reasoning,
    then one ``observation`` per result); the answer goes on from them."""

    messages: tuple[ChatMessage, ...]


@dataclass(frozen=True)
class StepFigures:
    """The figures after a step (sent first for every chunk, before its deltas, so a
    front end reads a delta with the figures of its own step)."""

    figures: AnswerFigures


@dataclass(frozen=True)
class AnswerDone:
    """A reply ended.

    Attributes:
        finish_reason: ``stop``, ``length``, ``cancelled`` or ``tool_calls``.
        figures: The reply's figures.
        parts: The reply's accumulated parts (text, reasoning, calls), neighbours joined.
        calls: With ``tool_calls``: the reply's calls, in the order written.
        notice: Why a call-like reply was shown as text, or that the tool-call limit
            ended the answer; else ``None``.
    """

    finish_reason: str
    figures: AnswerFigures
    parts: tuple[MessagePart, ...] = ()
    calls: tuple[ToolCall, ...] = ()
    notice: ErrorInfo | None = None


@dataclass(frozen=True)
class AnswerFailed:
    """A reply ended with an error (the parts written before it are kept)."""

    error: ErrorInfo
    figures: AnswerFigures
    parts: tuple[MessagePart, ...] = ()

    @property
    def finish_reason(self) -> str:
        """``error``, as a chunk that ends with an error says."""
        return "error"


#: One event of an answer run.
ChatEvent = (
    ReasoningDelta
    | TextDelta
    | ToolCallStarted
    | ToolCallGrowing
    | ToolCallParsed
    | ToolCallDropped
    | ToolCallComplete
    | ToolResultReady
    | ToolsAnswered
    | StepFigures
    | AnswerDone
    | AnswerFailed
)
