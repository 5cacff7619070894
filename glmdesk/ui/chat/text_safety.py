"""Make pasted or generated text safe to show, send and store.

Lone UTF-16 surrogates become U+FFFD; NUL and the other C0 control characters
(except tab, newline and carriage return) and DEL become their visible Unicode
"control pictures" (U+2400 block), so nothing invisible reaches the model, the
database or the renderer, and the user still sees that something was there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from glmdesk.core.parts import MessagePart, ReasoningPart, TextPart, ToolResponsePart
from glmdesk.core.text import without_lone_surrogates

_KEEP = {"\t", "\n", "\r"}
_TABLE = {c: 0x2400 + c for c in range(0x20) if chr(c) not in _KEEP}
_TABLE[0x7F] = 0x2421


def clean_text(text: str) -> str:
    """Return ``text`` with lone surrogates and control characters made visible and safe.

    Args:
        text: Any Python string (possibly holding lone surrogates from a clipboard).

    Returns:
        A string that encodes to UTF-8 without errors.
    """
    return without_lone_surrogates(text).translate(_TABLE)


def clean_parts(parts: Iterable[MessagePart]) -> tuple[MessagePart, ...]:
    """``parts`` with the text of each text, reasoning and tool-result part made safe by
    :func:`clean_text` (a tool call's text is shown as plain text by its card)."""
    return tuple(
        dataclasses.replace(p, text=clean_text(p.text))
        if isinstance(p, (TextPart, ReasoningPart, ToolResponsePart))
        else p
        for p in parts
    )
