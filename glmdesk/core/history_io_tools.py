"""A conversation's Tools section in exported files (JSON format version 4, Markdown).

JSON: the ``conversation`` object of an export holds ``"tools"``, the section as the
history stores it (:class:`~glmdesk.core.tools.ConversationTools`)::

    "tools": {"mode": "none" | "interpreter" | "functions",
              "functions": str (the custom functions' JSON exactly as typed),
              "max_rounds": int (tool calls per user message, 1-50),
              "timeout_s": s (the interpreter's time limit, 1-3600)}

The "always run code" switch is never written nor read: an imported conversation,
like a reopened one, runs no model-written code without a click. Files of versions
1 to 3 have no ``tools`` (an imported conversation then offers none).

Reading it back (:func:`parse_tools`) never refuses the file: a ``tools`` entry that
cannot be used gives the conversation no tools and a note (``import_tools_invalid``,
with :func:`~glmdesk.core.tools.parse_functions`' sentences for custom functions);
custom functions that do not validate are kept as written, like functions still
being typed, and none is offered until they are fixed in the Tools section.

Markdown: :func:`tools_markdown` writes a short "Tools" section under the header
(nothing for a conversation without tools).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from glmdesk.core.errors import ErrorInfo
from glmdesk.core.text import storable_text
from glmdesk.core.tools import TOOL_MODES, ConversationTools, parse_functions

#: English labels of the Markdown section (keys of ``history_markdown.MARKDOWN_LABELS``).
TOOLS_LABELS = {
    "tools": "Tools",
    "tools_interpreter": "Code interpreter, {seconds} s per run",
    "tools_functions": "Custom functions",
    "tools_invalid": "Custom functions, none offered (none is defined, or the definitions have problems)",
    "tools_rounds": "Up to {rounds} tool calls per message.",
}


def tools_json(tools: ConversationTools) -> dict[str, Any]:
    """The ``tools`` object of a JSON export (see the module docstring)."""
    return {
        "mode": tools.mode,
        "functions": tools.functions_json,
        "max_rounds": tools.max_rounds,
        "timeout_s": tools.timeout_s,
    }


def _note(title: str, problems: list[str], kept: bool) -> ErrorInfo:
    what = (
        "its custom functions are kept as written but none is offered until they are fixed"
        if kept
        else "its Tools section was not imported"
    )
    label = storable_text(title) or "Untitled"
    return ErrorInfo(
        "import_tools_invalid",
        f"The conversation “{label}” was imported; {what}: {' '.join(problems)}",
        {"title": storable_text(title), "problems": " ".join(problems), "kept": kept},
    )


def _finite(value: Any, name: str, default: float) -> float:
    """A number field of the section (``default`` when absent).

    Raises:
        ValueError: with a sentence, for anything but a finite number.
    """
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number, not {value!r}.")
    return value


def _read(value: Mapping[str, Any]) -> ConversationTools:
    """The section from its JSON object.

    Raises:
        ValueError: with a sentence naming the field that cannot be used.
    """
    mode = value.get("mode", "none")
    if mode not in TOOL_MODES:
        raise ValueError(f"The tools mode {mode!r} is not one of {', '.join(TOOL_MODES)}.")
    functions = value.get("functions", "")
    if isinstance(functions, list):  # a hand-edited file may hold the list itself
        functions = json.dumps(functions, ensure_ascii=False, indent=2)
    if not isinstance(functions, str):
        raise ValueError("The custom functions must be text (a JSON list as typed) or a list.")
    rounds = _finite(value.get("max_rounds"), "max_rounds", ConversationTools.max_rounds)
    if rounds != int(rounds):
        raise ValueError(f"max_rounds must be a whole number, not {rounds!r}.")
    timeout = _finite(value.get("timeout_s"), "timeout_s", ConversationTools.timeout_s)
    return ConversationTools(mode, functions, int(rounds), float(timeout))  # range checks


def parse_tools(value: Any, title: str) -> tuple[ConversationTools | None, ErrorInfo | None]:
    """Read the ``tools`` entry of an imported conversation.

    Args:
        value: The entry (``None`` when the file has none: versions 1 to 3).
        title: The conversation's title, for the note.

    Returns:
        ``(tools, note)``: ``tools`` is ``None`` when the file says nothing (the
        conversation offers no tools) or the entry cannot be used; ``note`` (an
        ``import_tools_invalid`` :class:`ErrorInfo`: params ``title``, ``problems``,
        ``kept``) says what was wrong, or is ``None``.
    """
    if value is None:
        return None, None
    if not isinstance(value, Mapping):
        return None, _note(title, ["The tools entry is not an object."], kept=False)
    try:
        tools = _read(value)
    except ValueError as exc:
        return None, _note(title, [str(exc)], kept=False)
    if tools.mode == "functions":
        problems = parse_functions(tools.functions_json)[1]
        if problems:
            return tools, _note(title, problems, kept=True)
    return tools, None


def tools_markdown(tools: ConversationTools | None, words: Mapping[str, str]) -> list[str]:
    """The Markdown lines of the Tools section (empty for no tools).

    Args:
        tools: The conversation's section.
        words: Labels keyed as :data:`TOOLS_LABELS` (with ``{seconds}`` and ``{rounds}``).
    """
    if tools is None or tools.mode == "none":
        return []
    rounds = words["tools_rounds"].format(rounds=tools.max_rounds)
    lines = [f"## {words['tools']}", ""]
    if tools.mode == "interpreter":
        return [
            *lines,
            f"- {words['tools_interpreter'].format(seconds=f'{tools.timeout_s:g}')}",
            "",
            rounds,
            "",
        ]
    functions, _problems = parse_functions(tools.functions_json)
    if not functions:
        return [*lines, f"- {words['tools_invalid']}", "", rounds, ""]
    lines.append(f"- {words['tools_functions']}:")
    for spec in functions:
        description = " ".join(storable_text(spec.description).split())
        lines.append(f"  - `{spec.name}`" + (f": {description}" if description else ""))
    return [*lines, "", rounds, ""]
