"""ChatGLM2, ChatGLM3 and GLM-4 prompt formats, built directly as token ids.

Role tags are special ids added here; message text always goes through the
tokenizer's plain-text ``encode``, so a user typing ``<|user|>`` or ``[Round 2]``
gets ordinary text pieces, never a role switch.

Sources: THUDM/chatglm2-6b ``tokenization_chatglm.py::build_prompt`` and
``modeling_chatglm.py::process_response``; THUDM/chatglm3-6b
``tokenization_chatglm.py::build_single_message`` / ``build_chat_input``; THUDM
glm-4-9b-chat ``tokenization_chatglm.py::apply_chat_template`` and its
``generation_config.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from glmdesk.core.messages import ChatMessage
from glmdesk.core.text import held_length
from glmdesk.core.tools import ToolSet
from glmdesk.engine.families.base import collect_stop_ids, token_lookup
from glmdesk.engine.families.files import ROLE_END_TOKENS
from glmdesk.engine.formats.chatglm_tools import call_text, chatglm3_system_text, glm4_tools_text
from glmdesk.engine.formats.prompt import PromptFormat, ReplyFilter, continued, forced_call, plain_messages

#: GLM-4 ids (tiktoken vocabulary of 151329 ranks, special tokens after it).
GLM4_SPECIAL_IDS = {
    "<|endoftext|>": 151329,
    "[MASK]": 151330,
    "[gMASK]": 151331,
    "[sMASK]": 151332,
    "<sop>": 151333,
    "<eop>": 151334,
    "<|system|>": 151335,
    "<|user|>": 151336,
    "<|assistant|>": 151337,
    "<|observation|>": 151338,
}
#: The original families' stop ids in their released vocabularies: what the one rule
#: (:func:`glmdesk.engine.families.base.collect_stop_ids`) gives there (eos, and for ChatGLM3 and
#: GLM-4 ``<|user|>`` and ``<|observation|>``: THUDM's generation_config.json eos
#: lists). The formats ask the rule with the tokenizer they are given, so a folder with
#: another vocabulary size stops on its own ids; the converter falls back on these
#: when a folder's tokenizer file cannot be read.
STOP_IDS_BY_FAMILY: dict[str, tuple[int, ...]] = {
    "chatglm2": (2,),
    "chatglm2-32k": (2,),
    "chatglm3": (2, 64795, 64797),
    "chatglm3-32k": (2, 64795, 64797),
    "glm4": (151329, 151336, 151338),
}


class TextEncoder(Protocol):
    """What the formats need from a tokenizer: plain-text ``encode``."""

    def encode(self, text: str) -> list[int]: ...


class LeadingMetadataFilter(ReplyFilter):
    """Drop ChatGLM3/GLM-4's empty metadata line and the whitespace after it.

    A ChatGLM3 reply is ``metadata + "\\n" + content``. For a plain answer the
    metadata is empty: the reply starts with ``"\\n"``, which is removed together
    with the content's leading whitespace (THUDM's ``process_response`` strips the
    content). A reply that starts with anything else (a tool name line) passes
    through unchanged. Only leading spaces/newlines are ever held back.
    """

    def __init__(self) -> None:
        self._state = "metadata"  # -> "content_start" -> "pass"
        self._held = ""

    def __call__(self, delta: str) -> str:
        if self._state == "pass":
            return delta
        if self._state == "metadata":
            self._held += delta
            rest = self._held.lstrip(" ")
            if not rest:
                return ""
            if rest[0] != "\n":
                self._state = "pass"
                out, self._held = self._held, ""
                return out
            self._held = ""
            self._state = "content_start"
            delta = rest[1:]
        stripped = delta.lstrip()
        if not stripped:
            return ""
        self._state = "pass"
        return stripped

    def flush(self) -> str:
        out, self._held = "", ""
        return out


class ChatGLM2ReplyFilter(ReplyFilter):
    """Strip the reply's leading whitespace and hide any ``[Round`` continuation.

    ChatGLM2 ends a reply with eos, but a model that runs on writes the next
    round header itself (``"[Round 3]\\n\\n问："``). From the first ``"[Round"``
    in the reply on, nothing is shown; a trailing fragment that could start it
    (``"["``, ``"[Ro"``) is held back until it is decided (or :meth:`flush`).
    """

    MARKER = "[Round"

    def __init__(self, started: bool = False) -> None:
        self._started = started  # True: the reply's start is already shown (Continue)
        self._held = ""
        self._stopped = False

    @property
    def stopped(self) -> bool:
        """True once the reply wrote a round header (the loop may stop there)."""
        return self._stopped

    def __call__(self, delta: str) -> str:
        if self._stopped:
            return ""
        text = self._held + delta
        self._held = ""
        if not self._started:
            text = text.lstrip()
            if not text:
                return ""
            self._started = True
        cut = text.find(self.MARKER)
        if cut >= 0:
            self._stopped = True
            return text[:cut]
        k = held_length(text, (self.MARKER,))
        self._held = text[len(text) - k :] if k else ""
        return text[: len(text) - k]

    def flush(self) -> str:
        out, self._held = ("" if self._stopped else self._held), ""
        return out


def _split_rounds(messages: Sequence[ChatMessage]) -> tuple[str, list[tuple[str, str | None]]]:
    """Return ``(system text, [(question, answer or None), ...])``.

    System messages are joined with blank lines. Consecutive user messages are
    joined with a newline into one question; an assistant message with no
    question before it becomes a round with an empty question.
    """
    messages = plain_messages(messages)
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    rounds: list[tuple[str, str | None]] = []
    for m in messages:
        if m.role == "user":
            if rounds and rounds[-1][1] is None:
                rounds[-1] = (rounds[-1][0] + "\n" + m.content, None)
            else:
                rounds.append((m.content, None))
        elif m.role == "assistant":
            if rounds and rounds[-1][1] is None:
                rounds[-1] = (rounds[-1][0], m.content)
            else:
                rounds.append(("", m.content))
    return system, rounds


class ChatGLM2Format(PromptFormat):
    """ChatGLM2-6B (and -32K) rounds: ``[gMASK] sop "[Round 1]\\n\\n问：q\\n\\n答：a\\n\\n" ...``.

    The whole round text is encoded as one string, as THUDM's ``build_prompt``
    does (sentencepiece may merge pieces across message boundaries, so encoding
    per message would give ids the model never saw). Round headers and message
    text are therefore indistinguishable at the id level; what keeps a typed
    ``"[Round 2]"`` harmless is that no special id can come from it.

    System prompt: ChatGLM2 has no system role. The system text is prepended to
    the first question that is kept, separated by a blank line
    (``"{system}\\n\\n{question}"``), so it survives when the context fitter drops
    older rounds (the fitter keeps system messages).

    A last round whose answer is missing is the open question; the reply is
    stopped by eos (id 2 in the real model). A conversation ending with an assistant
    message (Continue) ends the prompt with that answer's text, the round left open.

    Args:
        tokenizer: A :class:`~glmdesk.engine.formats.chatglm_tokenizer.ChatGLMTokenizer`.
    """

    name = "chatglm2"

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.prefix = [tokenizer.special_id("[gMASK]"), tokenizer.special_id("sop")]
        self.stop_ids = collect_stop_ids((), (tokenizer.eos_token_id,), token_lookup(tokenizer))

    def build_text(self, messages: Sequence[ChatMessage]) -> str:
        """Return the prompt text after ``[gMASK] sop`` (for display and tests)."""
        system, rounds = _split_rounds(messages)
        partial = None
        if continued(messages):
            q, partial = rounds.pop()
            rounds.append((q, None))
        elif not rounds or rounds[-1][1] is not None:
            rounds.append(("", None))
        if system:
            q, a = rounds[0]
            rounds[0] = (f"{system}\n\n{q}" if q else system, a)
        parts = []
        for i, (q, a) in enumerate(rounds, start=1):
            if a is None:
                parts.append(f"[Round {i}]\n\n问：{q}\n\n答：{partial or ''}")
            else:
                parts.append(f"[Round {i}]\n\n问：{q}\n\n答：{a}\n\n")
        return "".join(parts)

    def encode(self, messages: Sequence[ChatMessage]) -> list[int]:
        return self.prefix + self.tokenizer.encode(self.build_text(messages))

    def reply_filter(self) -> ReplyFilter:
        """A fresh :class:`ChatGLM2ReplyFilter`."""
        return ChatGLM2ReplyFilter()

    def continuation_filter(self) -> ReplyFilter:
        """A :class:`ChatGLM2ReplyFilter` that keeps leading whitespace (mid-answer)."""
        return ChatGLM2ReplyFilter(started=True)


class RoleTokenFormat(PromptFormat):
    """``[gMASK] sop`` then per message ``<|role|>`` + enc(metadata + "\\n") + enc(content).

    Shared by ChatGLM3 and GLM-4: they differ in the tokenizer, the ids and how tools
    are offered and called (:mod:`glmdesk.engine.formats.chatglm_tools`). The prompt ends with
    ``<|assistant|>``; the reply starts with its metadata line. An assistant message
    with a tool call is written with the tool's name as metadata and the call's text
    as content; an observation is an ``<|observation|>`` turn with empty metadata.

    A forced call (``ToolSet.forced``, OpenAI's ``tool_choice`` naming a function) ends
    the prompt with ``<|assistant|>`` + enc(name + "\n"): the metadata line is written,
    so the model writes the call's arguments (GLM-4: JSON; ChatGLM3: the fenced
    ``tool_call(...)``). The metadata is encoded as THUDM's ``build_single_message``
    does, so the call's turn re-encoded in the next prompt (``<|assistant|>`` +
    enc(name + "\n") + enc(call text)) starts with the same ids (KV reuse).

    Args:
        encode: Plain-text encoder (never returns special ids).
        special_ids: Ids of ``[gMASK]``, ``sop``, ``<|system|>``, ``<|user|>``,
            ``<|assistant|>``, ``<|observation|>`` under the keys ``gmask``, ``sop``,
            ``system``, ``user``, ``assistant``, ``observation``.
        stop_ids: Ids that end a reply.
        family: ``chatglm3`` or ``glm4`` (how tools are written).
    """

    name = "role-tokens"
    #: Whether this format has tool calls (``Capabilities.tool_calls``).
    tool_calls = True

    def __init__(
        self, encode: Callable[[str], list[int]], special_ids: dict[str, int], stop_ids, family: str
    ) -> None:
        self._encode = encode
        self.ids = dict(special_ids)
        self.stop_ids = frozenset(stop_ids)
        self.family = family
        self._newline = encode("\n")

    def encode_message(self, role: str, content: str, metadata: str = "") -> list[int]:
        """Ids of one message: role id, ``metadata + "\\n"``, content."""
        head = self._newline if not metadata else self._encode(metadata + "\n")
        return [self.ids[role], *head, *self._encode(content)]

    def encode_chat_message(self, m: ChatMessage) -> list[int]:
        """Ids of one :class:`ChatMessage` (tools, tool calls and observations included)."""
        if m.role == "system" and m.tools:
            return self.encode_system_with_tools(m.content, m.tools)
        if m.role == "assistant" and m.tool_call is not None:
            metadata, content = call_text(self.family, m.tool_call)
            ids = self.encode_message("assistant", m.content) if m.content else []
            return ids + self.encode_message("assistant", content, metadata)
        return self.encode_message(m.role, m.content)

    def encode_system_with_tools(self, content: str, tools: ToolSet) -> list[int]:
        """The system turn(s) offering ``tools`` (ChatGLM3: one turn; GLM-4: a tools turn,
        then the system text as its own turn when not empty)."""
        if self.family == "chatglm3":
            return self.encode_message("system", chatglm3_system_text(content, tools))
        ids = self.encode_message("system", glm4_tools_text(tools))
        return ids + (self.encode_message("system", content) if content else [])

    def encode(self, messages: Sequence[ChatMessage]) -> list[int]:
        """See :meth:`PromptFormat.encode`. An assistant message to continue ends the
        prompt as ``<|assistant|>`` + enc("\\n") + enc(its text), the turn left open; a
        forced call as ``<|assistant|>`` + enc(name + "\\n")."""
        ids = [self.ids["gmask"], self.ids["sop"]]
        if continued(messages):
            *messages, last = messages
            for m in messages:
                ids += self.encode_chat_message(m)
            return ids + self.encode_message("assistant", last.content)
        for m in messages:
            ids += self.encode_chat_message(m)
        ids.append(self.ids["assistant"])
        forced = forced_call(messages)
        return ids + self._encode(forced + "\n") if forced else ids

    def reply_filter(self) -> ReplyFilter:
        """A fresh :class:`LeadingMetadataFilter`."""
        return LeadingMetadataFilter()

    def tool_reply_filter(self, tools: ToolSet) -> ReplyFilter:
        """A fresh :class:`~glmdesk.engine.formats.tool_filter.ToolReplyFilter` for ``tools``."""
        from glmdesk.engine.formats.tool_filter import ToolReplyFilter

        return ToolReplyFilter(self.family, tools, self.ids["assistant"])


class ChatGLM3Format(RoleTokenFormat):
    """ChatGLM3-6B (-32K, -128K): role tokens, stop on eos, ``<|user|>``, ``<|observation|>``.

    System messages use the native ``<|system|>`` role. Assistant history is
    written with empty metadata (the shown text, the metadata line stripped).

    Args:
        tokenizer: A :class:`~glmdesk.engine.formats.chatglm_tokenizer.ChatGLMTokenizer` (or any
            vocabulary with ``encode``, ``special_id`` and ``eos_token_id``: a GGUF's).
        extra_stop_ids: Added to the eos and end-token ids (a GGUF's eot).
    """

    name = "chatglm3"

    def __init__(self, tokenizer, extra_stop_ids: frozenset[int] = frozenset()) -> None:
        s = tokenizer.special_id
        super().__init__(
            tokenizer.encode,
            {
                "gmask": s("[gMASK]"),
                "sop": s("sop"),
                "system": s("<|system|>"),
                "user": s("<|user|>"),
                "assistant": s("<|assistant|>"),
                "observation": s("<|observation|>"),
            },
            collect_stop_ids(
                ROLE_END_TOKENS, (tokenizer.eos_token_id, *extra_stop_ids), token_lookup(tokenizer)
            ),
            "chatglm3",
        )
        self.tokenizer = tokenizer


class GLM4Format(RoleTokenFormat):
    """GLM-4-9B-chat from an original folder: ChatGLM3's layout on GLM-4's vocabulary.

    Args:
        encode: Plain-text encoder of the GLM-4 tokenizer.
        special_ids: Token name -> id (defaults to :data:`GLM4_SPECIAL_IDS`).
        extra_stop_ids: Added to the ids of ``<|endoftext|>``, ``<|user|>`` and
            ``<|observation|>`` in ``special_ids`` (e.g. generation_config's eos list;
            :func:`glmdesk.engine.families.base.collect_stop_ids`).
    """

    name = "glm4"

    def __init__(
        self,
        encode: Callable[[str], list[int]],
        special_ids: dict[str, int] | None = None,
        extra_stop_ids: frozenset[int] = frozenset(),
    ) -> None:
        ids = special_ids or GLM4_SPECIAL_IDS
        super().__init__(
            encode,
            {
                "gmask": ids["[gMASK]"],
                "sop": ids["<sop>"],
                "system": ids["<|system|>"],
                "user": ids["<|user|>"],
                "assistant": ids["<|assistant|>"],
                "observation": ids["<|observation|>"],
            },
            collect_stop_ids(ROLE_END_TOKENS, extra_stop_ids, ids.get),
            "glm4",
        )
