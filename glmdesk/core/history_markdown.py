"""Export a conversation as Markdown: headings per message, reasoning collapsed, calls and
observations fenced, images inline or as files beside it (valid UTF-8 throughout)."""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from datetime import datetime

from glmdesk.core.history_io_tools import TOOLS_LABELS, tools_markdown
from glmdesk.core.history_types import Conversation, StoredMessage
from glmdesk.core.text import storable_text
from glmdesk.core.tools import ConversationTools

#: English labels used by :func:`to_markdown`; the UI passes translated ones.
MARKDOWN_LABELS = {
    "system": "System",
    "user": "User",
    "assistant": "Assistant",
    "untitled": "Untitled",
    "partial": "(unfinished)",
    "cancelled": "(stopped)",
    "error": "(failed)",
    "observation": "Observation",
    "tool_call": "Tool call",
    "image": "Image",
    "documents": "Documents",
    "thinking": "Thinking",
    **TOOLS_LABELS,
}


def to_markdown(
    conversation: Conversation,
    messages: Sequence[StoredMessage],
    labels: Mapping[str, str] | None = None,
    tools: ConversationTools | None = None,
    images: Mapping[int, Sequence[str]] | None = None,
    documents: Mapping[int, Sequence[str]] | None = None,
) -> str:
    """Render a conversation as Markdown (valid UTF-8: NULs and lone surrogates become U+FFFD).

    Args:
        conversation: Its header.
        messages: Its messages in order.
        labels: Headings and markers keyed as :data:`MARKDOWN_LABELS` (missing keys
            fall back to English).
        tools: Its Tools section, shown under the header when it offers tools.
        images: Per user message id, the relative paths of its image files (written
            beside the Markdown file by the caller), shown as images under its text.
        documents: Per user message id, the names of the documents it was given, listed
            under its text (their text is not copied).
    """
    words = {**MARKDOWN_LABELS, **(labels or {})}
    images = images or {}
    documents = documents or {}
    when = datetime.fromtimestamp(conversation.created).astimezone().strftime("%Y-%m-%d %H:%M")
    lines = [f"# {storable_text(conversation.title) or words['untitled']}", ""]
    lines += [f"_{when}" + (f" · {conversation.model}_" if conversation.model else "_"), ""]
    lines += tools_markdown(tools, words)
    for message in messages:
        heading = f"### {words[message.role]}"
        if message.tool_name:
            heading += f" ({storable_text(message.tool_name)})"
        if not message.complete:
            heading += f" {words['partial']}"
        elif message.finish_reason in ("cancelled", "error"):
            heading += f" {words[message.finish_reason]}"
        pictures = [f"![{words['image']}]({path})" for path in images.get(message.id, ())]
        if documents.get(message.id):
            names = ", ".join(storable_text(n) for n in documents[message.id])
            pictures.append(f"_{words['documents']}: {names}_")
        lines += [heading, ""] + _markdown_body(message, words) + ([""] + pictures if pictures else []) + [""]
    return "\n".join(lines)


def _fence(text: str, info: str = "") -> list[str]:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return [f"{ticks}{info}", text, ticks]


def _markdown_body(message: StoredMessage, words: Mapping[str, str]) -> list[str]:
    """Markdown lines of one message: its reasoning as a collapsed block, its text, a call
    as a code block, an image inline."""
    body = [storable_text(message.text)] if message.text or message.kind == "text" else []
    if message.reasoning:
        quoted = [f"> {line}".rstrip() for line in storable_text(message.reasoning).splitlines()]
        body = [
            "<details>",
            f"<summary>{words['thinking']}</summary>",
            "",
            *quoted,
            "",
            "</details>",
            "",
        ] + body
    call = message.tool_call
    if message.kind == "tool_call" and call is not None:
        body += ([""] if body else []) + [f"**{words['tool_call']}: `{storable_text(call.name)}`**", ""]
        if call.kind == "interpreter":
            body += _fence(storable_text(call.code), "python")
        else:
            body += _fence(storable_text(call.arguments_json(indent=2)), "json")
    elif message.kind == "observation":
        body = _fence(storable_text(message.text))
    elif message.kind == "image" and message.image:
        data = base64.b64encode(message.image).decode("ascii")
        body += [f"![{words['image']}](data:image/png;base64,{data})"]
    return body
