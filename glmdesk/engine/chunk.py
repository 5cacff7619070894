"""The values the decode loop yields."""

from __future__ import annotations

from dataclasses import dataclass

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.messages import FINISH_REASONS  # noqa: F401 (the one list; chunks name it)
from glmdesk.core.parts import ReplyPart, ToolCallPart, text_of
from glmdesk.core.tools import ToolCall


@dataclass(frozen=True)
class CacheStats:
    """What the KV cache holds after a step.

    Attributes:
        strategy: ``full``, ``sliding_window``, ``dynamic`` or ``quantized``.
        state: ``full`` or ``windowed`` (the dynamic strategy switches once).
        kv_bytes: Bytes of key and value tensors actually held, in bytes.
        tokens_held: Positions whose keys/values are held, in tokens.
        tokens_seen: Positions processed since the answer started, prompt included.
        evicted: Positions dropped from the cache so far, in tokens.
    """

    strategy: str = "full"
    state: str = "full"
    kv_bytes: int = 0
    tokens_held: int = 0
    tokens_seen: int = 0
    evicted: int = 0


@dataclass(frozen=True)
class GenerationChunk:
    """One step of a streamed answer (mlx-lm's ``GenerationResponse`` shape).

    The reply itself travels in one channel, :attr:`parts`; :attr:`text` reads the
    answer text from them.

    Attributes:
        token_ids: Token ids generated in this step (stop tokens excluded).
        prompt_tokens: Tokens in the fitted prompt, in tokens.
        n_generated: Tokens generated so far (stop token excluded), in tokens.
        ttft_s: Time from the request to the first generated token, in s.
        tokens_per_s: Decode speed after the first token, in tokens/s (0 until two
            tokens exist).
        finish_reason: ``None`` while streaming, then one of :data:`FINISH_REASONS`.
        error: Set when ``finish_reason == "error"``.
        cache: KV-cache accounting after this step.
        dropped_messages: Indices (into the request's message list) of messages left
            out of the prompt to fit the context window.
        tool_call: On the final chunk with ``finish_reason == "tool_calls"``: the call
            (the first of :attr:`tool_calls`).
        tool_calls: On that chunk: every call of the reply, in the order written
            (GLM-4.5 writes several in one turn; ``(tool_call,)`` for the earlier
            formats); ``()`` otherwise.
        notice: On the final chunk: why a call-like reply was shown as text
            (``ErrorInfo`` of kind ``tool_call_invalid``), else ``None``.
        reused_tokens: Leading prompt tokens whose KV came from the conversation's
            kept cache instead of a prefill, in tokens (``0 <= reused_tokens <
            prompt_tokens``; 0 without a conversation key).
        kept_kv_bytes: KV bytes kept for conversations between answers (the reuse
            pool, other conversations; this answer's cache is ``cache.kv_bytes``), in bytes.
        reply_limit: Tokens this reply may use, in tokens: max new tokens, or fewer when
            the context window has less room left after the prompt (full KV cache).
            0 before the prompt is fitted.
        parts: The typed parts of this step, in reply order, from the family's reply
            parser (:mod:`glmdesk.engine.families.parser`): text, reasoning (GLM-Z1's
            ``<think>`` block, markers left out) and tool calls (a call's text so far
            while ``tool_pending``; ``done`` on the final chunk of ``tool_calls``).
        answer_ttft_s: For a reply that thinks first: time from the request to its
            first answer part after the reasoning, in s (``ttft_s`` is then the first
            reasoning token's); 0 until the answer starts, and for a reply without
            reasoning.
        reasoning_tokens: Tokens generated before that first answer part (the
            reasoning block and its markers), in tokens; 0 until then.
    """

    token_ids: tuple[int, ...] = ()
    prompt_tokens: int = 0
    n_generated: int = 0
    ttft_s: float = 0.0
    tokens_per_s: float = 0.0
    finish_reason: str | None = None
    error: ErrorInfo | None = None
    cache: CacheStats = CacheStats()
    dropped_messages: tuple[int, ...] = ()
    tool_call: ToolCall | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    notice: ErrorInfo | None = None
    reused_tokens: int = 0
    kept_kv_bytes: int = 0
    reply_limit: int = 0
    parts: tuple[ReplyPart, ...] = ()
    answer_ttft_s: float = 0.0
    reasoning_tokens: int = 0

    @property
    def tool_pending(self) -> str | None:
        """While a tool call's text streams (held back, not in :attr:`text`): the tool's
        name (``interpreter`` for code), read from the step's unfinished
        :class:`~glmdesk.core.parts.ToolCallPart`; ``None`` otherwise and on the final chunk."""
        call = self._pending_call()
        return call.name if call is not None else None

    @property
    def tool_text(self) -> str:
        """While :attr:`tool_pending` is set: the call's text written so far (the part's
        ``arguments_so_far``: the whole text each time, not a delta); ``""`` otherwise."""
        call = self._pending_call()
        return call.arguments_so_far if call is not None else ""

    def _pending_call(self) -> ToolCallPart | None:
        if self.finish_reason is not None:
            return None
        calls = [p for p in self.parts if isinstance(p, ToolCallPart) and not p.done]
        return calls[-1] if calls else None

    @property
    def text(self) -> str:
        """New complete characters of the answer since the previous chunk (may be empty
        while a multi-byte character is held back): the :class:`~glmdesk.core.parts.TextPart`
        texts of :attr:`parts`, reasoning not included."""
        return text_of(self.parts)
