"""GLM-4.5/4.6/4.7's prompt format and its XML tool calls.

The prompt is the folder's own chat template rendered with transformers, with the
conversation in the template's terms: offered functions as ``tools``, an assistant
call as ``tool_calls`` (name and arguments), an observation as a ``tool`` message
(the template writes ``<|observation|>`` and a ``<tool_response>`` block), earlier
reasoning as ``reasoning_content``, thinking on or off as ``enable_thinking`` (off:
the template adds ``/nothink`` and an empty ``<think></think>``). Every value from the
conversation is encoded as plain text (:func:`~glmdesk.engine.formats.prompt.split_rendering`).

A call is written ``<tool_call>name`` then ``<arg_key>k</arg_key>`` /
``<arg_value>v</arg_value>`` pairs, then ``</tool_call>`` (the template's tools
preamble). :class:`~glmdesk.engine.formats.xml_call_filter.XmlToolFilter` reads it
while it streams.

Sources: the GLM-4.5/GLM-4.6 model cards' chat templates (their format, as
llama.cpp's ``models/templates/GLM-4.6.jinja`` reference copy shows it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from glmdesk.core.messages import ChatMessage
from glmdesk.core.parts import ThinkMarkers
from glmdesk.core.tools import INTERPRETER, ToolSet
from glmdesk.engine.formats.prompt import (
    ChatTemplateFormat,
    Markup,
    ReplyFilter,
    continued,
    forced_call,
    split_rendering,
)
from glmdesk.engine.formats.xml_call_filter import (  # noqa: F401 (the format's reader, imported from here)
    PYTHON,
    XmlToolFilter,
    offers_python,
    parse_xml_call,
    parse_xml_calls,
    parse_xml_reply,
)
from glmdesk.engine.formats.xml_calls import CALL_CLOSE, CALL_OPEN

#: The markers the reply parser reads as text (kept when decoding, even if special).
MARKERS = (
    "<think>",
    "</think>",
    CALL_OPEN,
    CALL_CLOSE,
    "<arg_key>",
    "</arg_key>",
    "<arg_value>",
    "</arg_value>",
)


def split_reasoning(content: str, markers: ThinkMarkers) -> tuple[str, str]:
    """``(reasoning, answer)`` of an assistant text that holds a think block (as the
    template splits it); ``("", content)`` when it holds none."""
    if markers.close not in content:
        return "", content
    head, _, answer = content.partition(markers.close)
    return head.rstrip("\n").split(markers.open)[-1].lstrip("\n"), answer.lstrip("\n")


#: The code interpreter as GLM-4.5 is offered it: a function (its template has no other
#: kind of tool), whose calls glmdesk runs as interpreter calls.
PYTHON_TOOL = {
    "type": "function",
    "function": {
        "name": PYTHON,
        "description": "Run Python code in a Jupyter kernel and return what it prints, its last "
        "value and any plots. The kernel keeps its state between calls.",
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "The Python code to run"}},
            "required": ["code"],
        },
    },
}


def tool_definitions(tools: ToolSet) -> list[dict[str, Any]]:
    """The offered functions as the template's ``tools`` (OpenAI ``type: function``), the
    code interpreter as the function :data:`PYTHON_TOOL` when it is offered."""
    out = []
    for spec in tools.functions:
        definition = spec.definition()
        out.append(definition if "function" in definition else {"type": "function", "function": definition})
    return out + ([PYTHON_TOOL] if offers_python(tools) else [])


class _Slots:
    """The conversation's values (contents, reasoning, string arguments) in order."""

    def __init__(self) -> None:
        self.values: list[str] = []

    def add(self, value: str) -> int:
        self.values.append(value)
        return len(self.values) - 1


def _conversation(
    messages: Sequence[ChatMessage], markers: ThinkMarkers, slots: _Slots, images: bool = False
):
    """``(template messages with slot indexes for values, tools)``; with ``images``, a
    user message's attachments as ``{"type": "image"}`` parts before its text part (the
    GLM-4.5V / 4.6V templates' layout)."""
    rows: list[dict[str, Any]] = []
    tools: ToolSet | None = None
    for m in messages:
        if m.role == "system" and m.tools:
            tools = m.tools
            if not m.content:
                continue
        if m.role == "observation":
            rows.append({"role": "tool", "content": slots.add(m.content)})
            continue
        if m.role == "user" and images and m.attachments:
            parts: list[dict[str, Any]] = [{"type": "image"} for _ in m.attachments]
            rows.append({"role": "user", "content": [*parts, {"type": "text", "text": slots.add(m.content)}]})
            continue
        if m.role != "assistant":
            rows.append({"role": m.role, "content": slots.add(m.content)})
            continue
        reasoning, answer = split_reasoning(m.content, markers)
        reasoning = reasoning or m.reasoning  # a stored answer keeps it apart (ChatMessage.reasoning)
        row: dict[str, Any] = {"role": "assistant", "content": slots.add(answer)}
        if reasoning:
            row["reasoning_content"] = slots.add(reasoning)
        if m.tool_call is not None:
            previous = rows[-1] if rows else {}
            if not m.content and previous.get("role") == "assistant" and previous.get("tool_calls"):
                row = (
                    previous  # several calls in one turn: one assistant message, as the template writes them
                )
                slots.values.pop()
            arguments = {
                k: (slots.add(v) if isinstance(v, str) else ("json", v))
                for k, v in m.tool_call.arguments.items()
            }
            name = PYTHON if m.tool_call.kind == "interpreter" else m.tool_call.name
            call = {"type": "function", "function": {"name": name, "arguments": arguments}}
            row.setdefault("tool_calls", []).append(call)
            if row is previous:
                continue
        rows.append(row)
    return rows, tools


def _filled(value: Any, shown: Sequence[str]) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return shown[value]
    if isinstance(value, tuple):
        return value[1]
    if isinstance(value, dict):
        return {k: _filled(v, shown) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, shown) for v in value]
    return value


class Glm45Format(ChatTemplateFormat):
    """GLM-4.5/4.6/4.7's chat template with tools, reasoning and thinking on/off.

    Args:
        tokenizer: The folder's tokenizer (with the model's chat template).
        stop_ids: Ids that end a reply.
        reasoning: The think markers.
        thinking: ``enable_thinking`` (``False``: the model answers without reasoning).

    Raises:
        ValueError: if the tokenizer has no chat template.
    """

    name = "glm4-moe"
    reasoning: ThinkMarkers  # always given (the base format allows None)
    tool_calls = True
    #: Whether user messages' images are written as image parts (GLM-4.6V's format
    #: sets it; a text model's prompt has no images).
    image_parts = False
    #: A forced function (``ToolSet.forced``, OpenAI's named ``tool_choice``): the prompt
    #: ends with the think block closed empty and ``<tool_call>{name}`` written, as the
    #: template renders a call turn without reasoning; the reply is that call's arguments.
    opens_forced_call = True

    def __init__(
        self, tokenizer, stop_ids: frozenset[int], reasoning: ThinkMarkers, thinking: bool = True
    ) -> None:
        self.thinking = thinking
        super().__init__(tokenizer, stop_ids, reasoning)
        found = {text: tokenizer.convert_tokens_to_ids(text) for text in MARKERS}
        self.marker_ids = {i: t for t, i in found.items() if i is not None and i != tokenizer.unk_token_id}
        self._opens: dict[bool, bool] = {}

    @property
    def opens_reasoning(self) -> bool:
        """Whether the generation prompt ends inside the think block with thinking as it
        is now (GLM-4.7's template writes ``<think>`` itself; thinking off closes it)."""
        if self.thinking not in self._opens:
            try:
                prompt = self._render([{"role": "user", "content": "x"}], None)
            except Exception:  # a template that refuses a lone user turn: it opens nothing here
                prompt = ""
            self._opens[self.thinking] = prompt.rstrip().endswith(self.reasoning.open)
        return self._opens[self.thinking]

    @opens_reasoning.setter
    def opens_reasoning(self, _value: bool) -> None:
        """Set by :class:`ChatTemplateFormat` from a render without ``enable_thinking``;
        this format renders with it (the getter)."""

    def encode(self, messages: Sequence[ChatMessage]) -> list[int]:
        """See :meth:`PromptFormat.encode` (an assistant message to continue: the prompt
        it was generated from, then its text)."""
        partial = messages[-1].content if continued(messages) else None
        turns = messages[:-1] if partial is not None else messages
        slots = _Slots()
        rows, tools = _conversation(turns, self.reasoning, slots, self.image_parts)
        ids: list[int] = []
        render = lambda shown: self._render(_filled(rows, shown), tools)  # noqa: E731
        for part in split_rendering(render, slots.values, [m.role for m in turns]):
            if isinstance(part, Markup):
                ids += self._markup(part.text)
            elif part:
                ids += self._plain(part)
        forced = forced_call(messages)
        if forced is not None:
            ids += self._forced_opening(ids, forced)
        return ids + (self._plain(partial) if partial else [])

    def _markup(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def _forced_opening(self, ids: list[int], name: str) -> list[int]:
        """The ids after the generation prompt that open the call of ``name``: the think
        block closed (``</think>`` when the prompt opened it, GLM-4.7; else an empty
        ``<think></think>`` unless thinking off already wrote one), then
        ``<tool_call>`` and the name (plain text)."""
        close = self._markup(self.reasoning.close)
        if self.opens_reasoning:
            head = close
        elif ids[-len(close) :] == close:
            head = []
        else:
            head = self._markup("\n" + self.reasoning.open + self.reasoning.close)
        wire = PYTHON if name == INTERPRETER else name
        return head + self._markup("\n" + CALL_OPEN) + self._plain(wire)

    def _render(self, rows: list[dict[str, Any]], tools: ToolSet | None) -> str:
        return self.tokenizer.apply_chat_template(
            rows,
            tools=tool_definitions(tools) if tools else None,
            tokenize=False,
            add_generation_prompt=True,
            enable_thinking=self.thinking,
            **dict(self.template_kwargs),
        )

    def tool_reply_filter(self, tools: ToolSet) -> ReplyFilter:
        """An :class:`XmlToolFilter` over ``tools`` that leaves the reasoning block's
        text (a call written while thinking included) to the reasoning."""
        inside = self.opens_reasoning and tools.forced is None
        return XmlToolFilter(tools, self.reasoning, inside=inside)
