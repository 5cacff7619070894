"""Cut the long strings of a JSON text before anything parses it.

A server may answer with 50 MB of text. Parsing that (pydantic in the SDK, then
``json.dumps`` of the structured copy) holds Python's GIL for half a second at a time,
and every other thread, the window's included, waits. :func:`shrink_json` walks the raw
bytes instead, with short C calls (``bytes.find``, ``translate``, ``count``) between
which other threads run, and keeps of each long string its first characters and a mark
that says how long the string was (:func:`strip_marks` reads it back; the result's cut
note then counts the whole string).

Strings under the keys ``data`` and ``blob`` (an image's or a binary resource's base64)
are kept whole up to their own, larger limit, and dropped (``""``) beyond it: half an
image is no image.
"""

from __future__ import annotations

import json
import re

#: The mark put after a cut string's kept part: NUL, ``glmdesk-cut:``, the string's full
#: length in characters, NUL (NUL does not occur in text a person reads).
_MARK = re.compile("\x00glmdesk-cut:(\\d+)\x00")
#: The bytes scanned per C call, so that no call holds the GIL for long.
WINDOW = 1 << 18
_CONTINUATION = bytes(range(0x80, 0xC0))
_BLOB_KEYS = (b"data", b"blob")
#: Strings kept whole or cut to the limit, in limits' worth of bytes, before later
#: strings are cut short (a result's text and its structured copy fit).
BUDGET_LIMITS = 4
#: What a string is cut to once that budget is spent, in characters.
SHORT_CHARS = 1000
_SPACE = b" \t\r\n"


def mark(total_chars: int) -> str:
    """The mark of a string that was cut; ``total_chars`` is its full length."""
    return f"\x00glmdesk-cut:{total_chars}\x00"


def strip_marks(text: str) -> tuple[str, int]:
    """``text`` (one string of the JSON) without the marks of :func:`shrink_json`,
    and the characters those cuts left out (0 when nothing was cut)."""
    if "\x00" not in text:
        return text, 0
    left_out = 0
    pieces: list[str] = []
    start = 0
    for match in _MARK.finditer(text):
        kept = match.start() - start
        pieces.append(text[start : match.start()])
        left_out += max(0, int(match.group(1)) - kept)
        start = match.end()
    pieces.append(text[start:])
    return "".join(pieces), left_out


def _find(data: bytes, needle: bytes, start: int) -> int:
    """``data.find(needle, start)``, one :data:`WINDOW` at a time."""
    end = len(data)
    while start < end:
        found = data.find(needle, start, min(end, start + WINDOW + len(needle)))
        if found >= 0:
            return found
        start += WINDOW
    return -1


def _string_end(data: bytes, start: int) -> int:
    """The index of the quote that closes the JSON string whose body starts at
    ``start`` (-1 when it never closes)."""
    while True:
        quote = _find(data, b'"', start)
        if quote < 0:
            return -1
        back = quote - 1
        while back >= start and data[back] == 0x5C:  # a backslash
            back -= 1
        if (quote - 1 - back) % 2 == 0:
            return quote
        start = quote + 1


def _is_key(data: bytes, after: int) -> bool:
    """Whether the string that ended just before ``after`` is an object's key."""
    while after < len(data) and data[after] in _SPACE:
        after += 1
    return after < len(data) and data[after] == 0x3A  # ':'


def _char_count(body: memoryview) -> int:
    """Characters of a JSON string body (escapes counted as one character each;
    a surrogate pair as two)."""
    total = 0
    for at in range(0, len(body), WINDOW):
        window = bytes(body[at : at + WINDOW])
        chars = len(window) if window.isascii() else len(window.translate(None, _CONTINUATION))
        escapes = window.count(b"\\") - window.count(b"\\\\")
        total += chars - escapes - 4 * window.count(b"\\u")
    return total


def _kept_text(body: memoryview, limit: int) -> str:
    """The first characters (at most ``limit``) of a JSON string body, decoded."""
    raw = bytes(body[:limit])
    for trim in range(7):  # an escape or a UTF-8 character cut in half
        try:
            return json.loads(b'"' + raw[: len(raw) - trim].decode("utf-8", "ignore").encode() + b'"')
        except ValueError:
            continue
    return ""


def shrink_json(data: bytes, limit: int, blob_limit: int) -> bytes:
    """``data`` (a JSON text, UTF-8) with every string longer than ``limit`` characters
    cut to its first ``limit`` and a :func:`mark`; once the strings kept come to
    :data:`BUDGET_LIMITS` times ``limit`` bytes, a later string is cut to
    :data:`SHORT_CHARS` (many strings just under the limit make a huge answer too);
    strings under ``data``/``blob`` keys longer than ``blob_limit`` bytes become ``""``.
    Anything that is not well-formed is passed on unchanged from where it stops being so.

    Args:
        data: The JSON text's bytes.
        limit: The most characters kept of one string.
        blob_limit: The most bytes of one base64 ``data``/``blob`` string.

    Returns:
        The JSON text's bytes, no longer than ``data`` plus a few bytes per cut string.
    """
    out = bytearray()
    view = memoryview(data)  # slices of it copy nothing
    at, key = 0, b""
    kept, budget = 0, BUDGET_LIMITS * limit
    while at < len(data):
        quote = _find(data, b'"', at)
        if quote < 0:
            out += view[at:]
            break
        out += view[at:quote]
        end = _string_end(data, quote + 1)
        if end < 0:
            out += view[quote:]
            break
        body = view[quote + 1 : end]
        at = end + 1
        if _is_key(data, at):
            key = bytes(body) if len(body) <= 64 else b""
            out += view[quote:at]
        elif key in _BLOB_KEYS:
            out += view[quote:at] if len(body) <= blob_limit else b'""'
        else:
            most = limit if kept < budget else min(limit, SHORT_CHARS)
            total = len(body) if len(body) <= most else _char_count(body)  # chars <= bytes
            if total <= most:
                out += view[quote:at]
                kept += len(body)
            else:
                out += json.dumps(_kept_text(body, most) + mark(total)).encode()
                kept += most
    return bytes(out)
