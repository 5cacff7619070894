"""Prompt formats: turn a conversation into token ids for one model family.

Each format is a small class behind :class:`PromptFormat`; :func:`prompt_format_for`
(in ``glmdesk.engine.backends.transformers.loader``) chooses one. The ChatGLM2/ChatGLM3 formats live in
``glmdesk.engine.chatglm``.
"""

from __future__ import annotations

import re
import secrets
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ThinkMarkers
from glmdesk.core.text import without_lone_surrogates
from glmdesk.core.tools import ToolCall, ToolSet


def encodable(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Messages the tokenizer can encode: lone surrogates (pasted from broken UTF-16)
    become U+FFFD, surrogate pairs are joined; everything else is unchanged."""
    return [replace(m, content=without_lone_surrogates(m.content)) for m in messages]


def plain_messages(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Messages for a format without tool turns (a conversation that used tools, continued
    with another model): a tool call becomes assistant text naming the call, an
    observation a user message; offered tools are dropped."""
    out = []
    for m in messages:
        if m.role == "observation":
            out.append(ChatMessage("user", m.content))
        elif m.tool_call is not None:
            call = f"{m.tool_call.name}({m.tool_call.arguments_json()})"
            out.append(ChatMessage("assistant", f"{m.content}\n{call}" if m.content else call))
        else:
            out.append(ChatMessage(m.role, m.content))
    return out


class ReplyFilter:
    """A stateful filter of the shown reply text: ``filter(delta) -> shown text``.

    The decode loop calls the object once per text delta (deltas may split the
    reply anywhere), reads :attr:`stopped` after each call (the format saw its own
    end marker in the text, e.g. ChatGLM2's next ``[Round``), and calls :meth:`flush`
    once at the end. This base class shows every delta as it is.

    Attributes:
        tool_call: The recognised call once the reply ended (a tool-call filter's), else
            ``None``; the first of :attr:`calls` when there are several.
        notice: Why a call-like reply was shown as text (English), else ``None``.
        pending: The tool being called while its text streams, else ``None``.
        call_text: The pending call's text so far (``""`` when none is pending).
    """

    tool_call: ToolCall | None = None
    notice: str | None = None
    pending: str | None = None
    call_text: str = ""

    @property
    def stopped(self) -> bool:
        """True once the reply's end marker was seen in the text."""
        return False

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """Every recognised call, in the order written (GLM-4.5 writes several in one
        reply; the earlier formats one, :attr:`tool_call`)."""
        return () if self.tool_call is None else (self.tool_call,)

    def __call__(self, delta: str) -> str:
        return delta

    def see_token(self, token_id: int) -> str:
        """Called with each generated id before its text (a format may mark segments
        with special ids); returns text to show first. Default: nothing."""
        return ""

    def flush(self) -> str:
        """Return the text held back so far (end of the reply)."""
        return ""

    def finish(self, cut_off: bool) -> str:
        """End of the reply (``cut_off``: length, Stop or an error ended it early);
        returns the text held back. Default: :meth:`flush`."""
        return self.flush()


class PromptFormat(ABC):
    """Builds prompt ids and knows how a reply ends.

    Attributes:
        name: Short name shown to the user (``chat-template``, ``chatglm2``, ...).
        stop_ids: Token ids that end a reply; never shown.
        tool_calls: Whether the format offers tools and reads calls
            (``Capabilities.tool_calls``; then :meth:`tool_reply_filter` reads them).
        reasoning: The markers of the family's reasoning block, or ``None``.
        opens_reasoning: The prompt ends inside the reasoning block (the template
            writes the open marker), so the reply starts with reasoning.
        reasoning_close_ids: The close marker's token ids (a thinking budget writes
            them), ``()`` when none.
        opens_forced_call: With :attr:`tool_calls`, a forced function's prompt ends
            inside its call (ChatGLM3/GLM-4 write its metadata line); ``False``: the
            function is offered and the model chooses (GLM-4.5's template).
        marker_ids: Token ids decoded as their text even when the tokenizer marks them
            special (``{id: text}``: GLM-4.5's think and tool-call tags, GLM-4.1V's
            think and answer markers), so the reply parser reads them; ``{}`` when none.
    """

    name: str = "base"
    stop_ids: frozenset[int] = frozenset()
    tool_calls: bool = False
    reasoning: ThinkMarkers | None = None
    opens_reasoning: bool = False
    reasoning_close_ids: tuple[int, ...] = ()
    opens_forced_call: bool = True
    marker_ids: Mapping[int, str] = MappingProxyType({})
    #: Further values the chat template reads (``SamplingParams.template_kwargs``), set
    #: for one answer by :func:`thinking_for`; ``()`` for a format without a template.
    template_kwargs: tuple[tuple[str, object], ...] = ()

    @abstractmethod
    def encode(self, messages: Sequence[ChatMessage]) -> list[int]:
        """Return the prompt ids for ``messages``, ending where the reply begins.

        Args:
            messages: Optional system messages first, then user/assistant turns
                ending with a user message (or an observation), or with an assistant
                message to continue (Continue after the length limit): the prompt then
                ends with that message's text, its turn left open (no closing markup).

        Returns:
            Token ids, shape ``[n_prompt]``. Message text is always encoded as plain
            text: special tokens typed by the user never become special ids.
        """

    def reply_filter(self) -> ReplyFilter:
        """Return a fresh :class:`ReplyFilter` for the shown reply text (e.g. ChatGLM3
        drops the empty metadata line). Default: every delta shown as it is."""
        return ReplyFilter()

    def continuation_filter(self) -> ReplyFilter:
        """Return a fresh :class:`ReplyFilter` for the rest of an open assistant turn
        (Continue): the reply's start (metadata line, leading whitespace) is already
        in the prompt. Default: every delta shown as it is."""
        return ReplyFilter()

    def tool_reply_filter(self, tools: ToolSet) -> ReplyFilter:
        """Return a fresh filter that reads calls of ``tools`` (only asked when
        :attr:`tool_calls`). Default: :meth:`reply_filter`."""
        return self.reply_filter()


def without_reasoning(message: ChatMessage, markers: ThinkMarkers) -> ChatMessage:
    """An assistant message with its reasoning block left out (the answer after the
    close marker, stripped), as GLM-Z1's template keeps earlier turns; others unchanged."""
    if message.role != "assistant" or markers.close not in message.content:
        return message
    return replace(message, content=message.content.split(markers.close)[-1].strip())


def continued(messages: Sequence[ChatMessage]) -> bool:
    """Whether ``messages`` ends with an assistant message to continue (not a tool call)."""
    return bool(messages) and messages[-1].role == "assistant" and messages[-1].tool_call is None


def forced_call(messages: Sequence[ChatMessage]) -> str | None:
    """The function the answer must call, or ``None``.

    That is the ``forced`` name of the tools the system messages offer (the last set
    wins, as :func:`glmdesk.engine.decode.generate.offered_tools`), unless the conversation
    ends with an answer to continue (Continue goes on with that answer's text).
    """
    if continued(messages):
        return None
    found = [m.tools for m in messages if m.role == "system" and m.tools]
    return found[-1].forced if found else None


class ChatTemplateFormat(PromptFormat):
    """The tokenizer's own Jinja chat template (Hugging Face ``apply_chat_template``).

    Correct by construction: the template is rendered with a unique placeholder in
    place of each message's content, so everything around the placeholders is the
    template's own markup (encoded with special tokens recognised) and every content
    is encoded with ``split_special_tokens=True`` (typed ``<|im_end|>`` stays plain
    text pieces, whatever the content is: a special token, a role name, the
    template's markup). See :func:`render_template_parts`.

    Args:
        tokenizer: A transformers tokenizer with a ``chat_template``.
        stop_ids: Ids that end a reply (generation config eos list plus the template's
            end-of-turn token).
        reasoning: The family's think markers (GLM-Z1), or ``None``; the prompt opens
            the block when the template's generation prompt ends with the open marker.

    Raises:
        ValueError: if the tokenizer has no chat template.
    """

    name = "chat-template"

    def __init__(self, tokenizer, stop_ids: frozenset[int], reasoning: ThinkMarkers | None = None) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("this tokenizer has no chat template")
        self.tokenizer = tokenizer
        self.stop_ids = frozenset(stop_ids)
        self.reasoning = reasoning
        if reasoning is not None:
            try:
                prompt = _render(tokenizer, [ChatMessage("user", "x")], ["x"])
            except Exception:  # a template that refuses a lone user turn: it opens nothing here
                prompt = ""
            self.opens_reasoning = prompt.rstrip().endswith(reasoning.open)
            self.reasoning_close_ids = tuple(tokenizer.encode(reasoning.close, add_special_tokens=False))

    def encode(self, messages: Sequence[ChatMessage]) -> list[int]:
        """See :meth:`PromptFormat.encode`. An assistant message to continue is written as
        the template's generation prompt after the turns before it, then its text: the
        prompt the answer was generated from, followed by what was generated. With
        :attr:`reasoning`, earlier answers go in without their reasoning block."""
        partial = messages[-1].content if continued(messages) else None
        messages = plain_messages(messages[:-1] if partial is not None else messages)
        if self.reasoning is not None:
            messages = [without_reasoning(m, self.reasoning) for m in messages]
        ids: list[int] = []
        for part in render_template_parts(self.tokenizer, messages, dict(self.template_kwargs)):
            if isinstance(part, Markup):
                ids += self.tokenizer.encode(part.text, add_special_tokens=False)
            elif part:
                ids += self._plain(part)
        return ids + (self._plain(partial) if partial else [])

    def _plain(self, text: str) -> list[int]:
        return plain_ids(self.tokenizer, text)


def _ordinary_added(tokenizer) -> dict[str, int]:
    """The tokenizer's added tokens that are not special (``<think>``, ``<tool_call>``
    in some GLM and Qwen tokenizers): text -> id."""
    decoder = getattr(tokenizer, "added_tokens_decoder", None)
    if not isinstance(decoder, dict):
        return {}
    return {str(t): int(i) for i, t in decoder.items() if not getattr(t, "special", True)}


def plain_ids(tokenizer, text: str) -> list[int]:
    """``text`` as plain-text ids: special tokens typed in it are never their ids
    (``split_special_tokens``), nor are ordinary added tokens (which transformers matches
    even then): such a piece is encoded as its first character, then the rest."""
    ids = tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)
    added = _ordinary_added(tokenizer)
    if not added or not set(added.values()) & set(ids):
        return ids
    pattern = "(" + "|".join(map(re.escape, sorted(added, key=len, reverse=True))) + ")"
    out: list[int] = []
    for piece in re.split(pattern, text):
        chunks = (piece[:1], piece[1:]) if piece in added else (piece,)
        for chunk in chunks:
            if chunk:
                out += tokenizer.encode(chunk, add_special_tokens=False, split_special_tokens=True)
    return out


@dataclass(frozen=True)
class Markup:
    """A piece of the rendered chat template that the template itself wrote."""

    text: str


def _render(tokenizer, messages: Sequence[ChatMessage], contents: Sequence[str], kwargs=None) -> str:
    return tokenizer.apply_chat_template(
        [{"role": m.role, "content": c} for m, c in zip(messages, contents, strict=True)],
        tokenize=False,
        add_generation_prompt=True,
        **(kwargs or {}),
    )


def _placeholders(messages: Sequence[ChatMessage]) -> list[str]:
    """One placeholder per message (see :func:`_value_placeholders`)."""
    return _value_placeholders([*(m.content for m in messages), *(m.role for m in messages)])[: len(messages)]


def _value_placeholders(values: Sequence[str]) -> list[str]:
    """One placeholder per value: letters and digits only (no template filter such
    as ``trim`` changes it), with a nonce that occurs in no value."""
    while True:
        nonce = secrets.token_hex(8).upper()
        if not any(nonce in v for v in values):
            return [f"GLMDESK{nonce}MSG{i}END" for i in range(len(values))]


def render_template_parts(tokenizer, messages: Sequence[ChatMessage], kwargs=None) -> list[Markup | str]:
    """Render the chat template as alternating template markup and message contents.

    The template is rendered with each message's content as its value (see
    :func:`split_rendering`; Llama 3's template trims contents).

    Args:
        tokenizer: A transformers tokenizer with a chat template.
        messages: The conversation, ending with a user message.
        kwargs: Further values the template reads (``clear_thinking``), or ``None``.

    Returns:
        ``[Markup, str, Markup, ...]``: markup pieces (special tokens recognised)
        and content strings (plain text), in prompt order; joined they are the
        rendered prompt.
    """
    return split_rendering(
        lambda contents: _render(tokenizer, messages, contents, kwargs),
        [m.content for m in messages],
        [m.role for m in messages],
    )


def split_rendering(render, values: Sequence[str], avoid: Sequence[str] = ()) -> list[Markup | str]:
    """Split a template's rendering into its own markup and the values it was given.

    ``render(values) -> text`` renders the template with ``values`` in the places that
    hold user data (message contents, reasoning, tool arguments). It is called once
    with a placeholder for each non-empty value (empty values render as they are:
    there is nothing to encode), and the text is split at the placeholders: the
    pieces between them are exactly the template's markup. Each placeholder becomes
    the value as the template shows it: ``render`` is also called with the real
    values, and for each the first of ``value``, ``value.strip()``, ``.lstrip()``,
    ``.rstrip()`` that makes the two renderings agree is taken. When none does (a
    template that rewrites or tests values), the value is taken as it is: user text
    stays plain text whatever the template does with it.

    Args:
        render: The template over a list of values (same length as ``values``).
        values: The real values.
        avoid: Other text the placeholders' nonce must not occur in (role names).

    Returns:
        ``[Markup, str, Markup, ...]``: markup and values in prompt order.
    """
    holders = _value_placeholders([*values, *avoid])[: len(values)]
    shown = [h if v else "" for h, v in zip(holders, values, strict=True)]
    with_holders = render(shown)
    real = render(list(values))
    by_holder = dict(zip(holders, values, strict=True))
    pieces = re.split("(" + "|".join(map(re.escape, holders)) + ")", with_holders)
    parts: list[Markup | str] = []
    pos = 0  # position in ``real`` while the renderings agree; -1 once they do not
    for k, piece in enumerate(pieces):
        if k % 2 == 0:
            parts.append(Markup(piece))
            pos = pos + len(piece) if pos >= 0 and real.startswith(piece, pos) else -1
            continue
        content = by_holder[piece]
        following = pieces[k + 1]
        chosen = content
        if pos >= 0:
            for candidate in (content, content.strip(), content.lstrip(), content.rstrip()):
                if real.startswith(candidate + following, pos):
                    chosen = candidate
                    break
            pos = pos + len(chosen) if real.startswith(chosen, pos) else -1
        parts.append(chosen)
    return parts


@runtime_checkable
class SwitchableThinking(Protocol):
    """A format with a thinking switch (GLM-4.5's ``enable_thinking``)."""

    thinking: bool


@contextmanager
def thinking_for(fmt: PromptFormat, enable: bool | None, template_kwargs=()) -> Iterator[None]:
    """``fmt`` with its thinking switch (a ``thinking`` attribute, GLM-4.5's
    ``enable_thinking``) set to ``enable`` and its :attr:`~PromptFormat.template_kwargs`
    to ``template_kwargs`` inside the block, restored after; ``enable`` ``None``, or a
    format without a switch: the switch unchanged. Used under the model's lock (one
    answer at a time), so one answer's setting does not reach another."""
    before_kwargs = fmt.template_kwargs
    fmt.template_kwargs = tuple(template_kwargs)
    switch = fmt if isinstance(fmt, SwitchableThinking) else None
    before = switch.thinking if switch is not None else False
    if switch is not None and enable is not None:
        switch.thinking = enable
    try:
        yield
    finally:
        fmt.template_kwargs = before_kwargs
        if switch is not None and enable is not None:
            switch.thinking = before
