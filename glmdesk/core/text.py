"""Text helpers shared by the engine and the UI (plain Python)."""

from __future__ import annotations


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
