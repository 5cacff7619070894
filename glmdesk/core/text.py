"""Text cleaning, in one place: shared by history, the engine and the UI (plain Python).

- :func:`without_lone_surrogates`: what a tokenizer can encode (the engine).
- :func:`storable_text`: what history stores in its searchable column (NUL too).
- Display-only mapping of control characters to visible symbols is the chat view's
  (``glmdesk.ui.text_safety``), built on :func:`without_lone_surrogates`.
"""

from __future__ import annotations

import re

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
