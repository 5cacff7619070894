"""Text cleaning, in one place: shared by history, the engine and the UI (plain Python).

- :func:`without_lone_surrogates`: what a tokenizer can encode (the engine).
- :func:`storable_text`: what history stores in its searchable column (NUL too).
- :func:`held_length`: how much of a streamed text's end to hold back because it could
  begin a marker or a stop string (the reply parsers, the server's ``stop``).
- Display-only mapping of control characters to visible symbols is the chat view's
  (``glmdesk.ui.chat.text_safety``), built on :func:`without_lone_surrogates`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_UNSAFE = re.compile("[\x00\ud800-\udfff]")


def storable_text(text: str) -> str:
    """Return ``text`` with each NUL and lone surrogate replaced by U+FFFD (history's
    searchable text; the exact text is stored beside it).

    Text with neither (nearly all) is returned as it is after two C-speed checks: the
    regular expression alone took 73 ms on 2 MB here, holding the GIL all along (the
    history writer's thread then froze the window's).
    """
    if "\x00" not in text:
        try:
            text.encode("utf-8")  # fails on any surrogate code point
        except UnicodeEncodeError:
            pass
        else:
            return text
    return _UNSAFE.sub("\ufffd", text)


def without_lone_surrogates(text: str) -> str:
    """Return ``text`` with each lone UTF-16 surrogate replaced by U+FFFD (pairs are joined).

    Clipboards can hand over broken UTF-16. Tokenizers (the Rust ``tokenizers``
    library) and UTF-8 refuse lone surrogates; every other character, NUL and
    control characters included, passes unchanged.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def held_length(text: str, markers: Iterable[str]) -> int:
    """Length of the longest end of ``text`` that could be the start of one of ``markers``.

    A streamed reply holds that end back until the next piece shows whether a marker
    (a think close, a tool-call open, a ``stop`` string) really begins there; a whole
    marker inside ``text`` is the caller's to find first. In characters; 0 when no
    end of ``text`` begins any marker (or ``markers`` is empty).
    """
    keep = 0
    for marker in markers:
        for k in range(min(len(marker) - 1, len(text)), keep, -1):
            if marker.startswith(text[-k:]):
                keep = k
                break
    return keep
