"""Prompt formats: turn a conversation into token ids for one model family.

Each format is a small class behind :class:`PromptFormat`; :func:`prompt_format_for`
(in ``glmdesk.engine.loader``) chooses one. The ChatGLM2/ChatGLM3 formats live in
``glmdesk.engine.chatglm``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace

from glmdesk.core.messages import ChatMessage
from glmdesk.core.text import without_lone_surrogates


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
    """

    @property
    def stopped(self) -> bool:
        """True once the reply's end marker was seen in the text."""
        return False

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
    """

    name: str = "base"
    stop_ids: frozenset[int] = frozenset()

    @abstractmethod
    def encode(self, messages: Sequence[ChatMessage]) -> list[int]:
        """Return the prompt ids for ``messages``, ending where the reply begins.

        Args:
            messages: Optional system messages first, then user/assistant turns
                ending with a user message.

        Returns:
            Token ids, shape ``[n_prompt]``. Message text is always encoded as plain
            text: special tokens typed by the user never become special ids.
        """

    def reply_filter(self) -> ReplyFilter:
        """Return a fresh :class:`ReplyFilter` for the shown reply text (e.g. ChatGLM3
        drops the empty metadata line). Default: every delta shown as it is."""
        return ReplyFilter()


class ChatTemplateFormat(PromptFormat):
    """The tokenizer's own Jinja chat template (Hugging Face ``apply_chat_template``).

    User text is encoded with ``split_special_tokens=True`` so that typed special
    tokens (``<|im_start|>``...) stay plain text.

    Args:
        tokenizer: A transformers tokenizer with a ``chat_template``.
        stop_ids: Ids that end a reply (generation config eos list plus the template's
            end-of-turn token).

    Raises:
        ValueError: if the tokenizer has no chat template.
    """

    name = "chat-template"

    def __init__(self, tokenizer, stop_ids: frozenset[int]) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("this tokenizer has no chat template")
        self.tokenizer = tokenizer
        self.stop_ids = frozenset(stop_ids)

    def encode(self, messages: Sequence[ChatMessage]) -> list[int]:
        messages = plain_messages(messages)
        text = self.tokenizer.apply_chat_template(
            [{"role": m.role, "content": m.content} for m in messages],
            tokenize=False,
            add_generation_prompt=True,
        )
        # The template is trusted; message contents are not. Render with placeholders
        # would be exact, but the template only concatenates, so encoding each
        # message's content separately and splicing is equivalent and keeps typed
        # special tokens as text.
        return _encode_template_safely(self.tokenizer, text, messages)


def _encode_template_safely(tokenizer, text: str, messages: Sequence[ChatMessage]) -> list[int]:
    """Encode a rendered template so only the template's own special tokens are special.

    The rendered ``text`` is split at each message content (in order); the
    template parts are encoded with special tokens recognised, the contents with
    ``split_special_tokens=True``.
    """
    ids: list[int] = []
    pos = 0
    for message in messages:
        if not message.content:
            continue
        at = text.find(message.content, pos)
        if at < 0:  # the template changed the content (e.g. stripped it): fall back
            continue
        ids += tokenizer.encode(text[pos:at], add_special_tokens=False)
        ids += tokenizer.encode(message.content, add_special_tokens=False, split_special_tokens=True)
        pos = at + len(message.content)
    ids += tokenizer.encode(text[pos:], add_special_tokens=False)
    return ids
