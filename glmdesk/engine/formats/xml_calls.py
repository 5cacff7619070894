"""GLM-4.5/4.6/4.7's XML tool calls: read by structure, argument values decoded by schema.

The templates write a call as ``<tool_call>`` + the function's name + for each argument
``<arg_key>{key}</arg_key>`` and ``<arg_value>{value}</arg_value>`` + ``</tool_call>``:
GLM-4.5/4.6 with a newline after the name and after each tag pair, GLM-4.7 and later
with none. Nothing inside a value is escaped (a string value is written as it is, any
other value as JSON), so a value may hold the tags themselves (a model editing code
about them). The reader therefore takes a closing tag as the structure's only where
what follows it continues the structure:

- a value ends at the first ``</arg_value>`` followed (after whitespace) by
  ``<arg_key>`` or by the end of the call; a value that would then hold an
  ``<arg_key>`` or ``<arg_value>`` it does not close is a missing ``</arg_value>``;
- a call ends at the first ``</tool_call>`` after which the reply does not close the
  call again before the next ``<tool_call>`` (a later ``</tool_call>`` with no call
  opened between means the earlier one was text inside a value). While the reply
  streams, the text after a ``</tool_call>`` is held until that is decided: the next
  ``<tool_call>``, another ``</tool_call>``, or the reply's end.

A call whose body does not follow the structure (a missing ``<arg_value>`` or
``</arg_value>``, a stray ``</arg_key>``, text between the pairs, a key given twice)
is never run: :class:`UnreadableCall` says why, and the reply shows its text.

Values are decoded as the function's JSON Schema allows (:func:`argument_value`): a
value stays the text it is wherever the schema allows a string (``Optional[str]``'s
``anyOf: [string, null]`` included), and is JSON-decoded only where the schema allows
no string.

Sources: the GLM-4.5/GLM-4.6/GLM-4.7 model cards' chat templates; vLLM's
``glm4_moe_tool_parser`` and ``glm47_moe_tool_parser`` (the reading of well-formed
calls this one agrees with).
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
KEY_OPEN, KEY_CLOSE = "<arg_key>", "</arg_key>"
VALUE_OPEN, VALUE_CLOSE = "<arg_value>", "</arg_value>"

#: JSON Schema type names by the Python type of a JSON value.
_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}
#: Python spellings a model writes for JSON's literals.
_PYTHON_LITERALS = {"True": True, "False": False, "None": None}


class UnreadableCall(ValueError):
    """A call whose text does not follow the template's structure; the message says
    where (English, a sentence's end: "the value of 'path' is not closed")."""


@dataclass(frozen=True)
class CallEnd:
    """Where a call's body ends in the text after its name.

    Attributes:
        body: The argument pairs' text (up to the closing ``</tool_call>``).
        rest: The text after that ``</tool_call>``.
    """

    body: str
    rest: str


def find_call_end(text: str, final: bool) -> CallEnd | None:
    """Where the call whose body starts ``text`` ends (see the module docstring).

    Args:
        text: The reply after the call's name (argument pairs, ``</tool_call>``, and
            whatever the reply wrote after it so far).
        final: ``text`` is the rest of the whole reply (nothing more will come).

    Returns:
        The body and what follows; ``None`` while undecided (no ``</tool_call>`` yet, or
        the text after one does not tell yet; never when ``final`` and one exists).
    """
    start = 0
    while True:
        cut = text.find(CALL_CLOSE, start)
        if cut < 0:
            return None
        rest = text[cut + len(CALL_CLOSE) :]
        again = rest.find(CALL_CLOSE)
        opened = rest.find(CALL_OPEN)
        if again >= 0 and (opened < 0 or again < opened):
            start = cut + len(CALL_CLOSE)  # closed again before any new call: that one was text
            continue
        if opened >= 0 or final:
            return CallEnd(text[:cut], rest)
        return None


def read_pairs(body: str) -> list[tuple[str, str]]:
    """The ``(key, value)`` pairs of a call's body, in the order written; keys stripped,
    values as written.

    Raises:
        UnreadableCall: when the body does not follow the structure.
    """
    pairs: list[tuple[str, str]] = []
    pos = _skip_space(body, 0)
    while pos < len(body):
        if not body.startswith(KEY_OPEN, pos):
            if body.startswith(VALUE_OPEN, pos):
                raise UnreadableCall("a value has no <arg_key> before it")
            raise UnreadableCall(f"it has text outside the argument tags ({_excerpt(body[pos:])!r})")
        pos += len(KEY_OPEN)
        end = body.find(KEY_CLOSE, pos)
        key = body[pos:end] if end >= 0 else body[pos:]
        if end < 0 or any(tag in key for tag in (KEY_OPEN, VALUE_OPEN, VALUE_CLOSE)):
            raise UnreadableCall(f"the argument name {_excerpt(key.split('<')[0].strip())!r} is not closed")
        key = key.strip()
        pos = _skip_space(body, end + len(KEY_CLOSE))
        if not body.startswith(VALUE_OPEN, pos):
            raise UnreadableCall(f"the argument {key!r} has no <arg_value>")
        pos += len(VALUE_OPEN)
        close = _value_close(body, pos)
        if close < 0 or _opens_unclosed(body[pos:close]):
            raise UnreadableCall(f"the value of {key!r} is not closed")
        if key in (k for k, _ in pairs):
            raise UnreadableCall(f"it gives the argument {key!r} twice")
        pairs.append((key, body[pos:close]))
        pos = _skip_space(body, close + len(VALUE_CLOSE))
    return pairs


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    return pos


def _value_close(body: str, pos: int) -> int:
    """The ``</arg_value>`` that ends the value starting at ``pos``: the first followed
    by whitespace then ``<arg_key>`` or the body's end; when none is, the first (what
    follows it is then told as text outside the tags); -1 when there is none."""
    first = body.find(VALUE_CLOSE, pos)
    close = first
    while close >= 0:
        after = _skip_space(body, close + len(VALUE_CLOSE))
        if after == len(body) or body.startswith(KEY_OPEN, after):
            return close
        close = body.find(VALUE_CLOSE, close + len(VALUE_CLOSE))
    return first


def _opens_unclosed(value: str) -> bool:
    """Whether ``value`` holds an ``<arg_key>`` or ``<arg_value>`` not closed inside it:
    the model began the next pair before closing this value (a value quoting the tags
    whole, or only a closing tag, is text)."""
    for open_tag, close_tag in ((KEY_OPEN, KEY_CLOSE), (VALUE_OPEN, VALUE_CLOSE)):
        start = value.find(open_tag)
        while start >= 0:
            end = value.find(close_tag, start + len(open_tag))
            if end < 0:
                return True
            start = value.find(open_tag, end + len(close_tag))
    return False


def _excerpt(text: str, most: int = 40) -> str:
    return text if len(text) <= most else text[:most] + "…"


def schema_types(schema: Any) -> set[str] | None:
    """The JSON types a JSON Schema allows: from ``type`` (a name or a list),
    ``anyOf``/``oneOf`` members, or ``enum``/``const`` values when no type is given;
    ``None`` when the schema does not say (no schema, a ``$ref``, an empty member)."""
    if not isinstance(schema, Mapping):
        return None
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list) and kind:
        return {k for k in kind if isinstance(k, str)}
    members = [*(schema.get("anyOf") or ()), *(schema.get("oneOf") or ())]
    if members:
        types: set[str] = set()
        for member in members:
            found = schema_types(member)
            if found is None:
                return None
            types |= found
        return types
    values = schema.get("enum") if isinstance(schema.get("enum"), list) else None
    if values is None and "const" in schema:
        values = [schema["const"]]
    if values:
        return {_JSON_TYPES.get(type(v), "object" if isinstance(v, dict) else "array") for v in values}
    return None


def _decoded(text: str) -> tuple[bool, Any]:
    """``(True, value)`` for text that is a JSON value (or Python's ``True``, ``False``,
    ``None``, or a Python literal list/dict), else ``(False, None)``."""
    text = text.strip()
    if text in _PYTHON_LITERALS:
        return True, _PYTHON_LITERALS[text]
    try:
        return True, json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    if text[:1] and text[:1] in "[{":
        try:
            return True, ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            pass
    return False, None


def _fits(value: Any, types: set[str]) -> bool:
    if isinstance(value, bool):
        return "boolean" in types
    if isinstance(value, int):
        return bool({"integer", "number"} & types)
    if isinstance(value, float):
        return "number" in types
    return _JSON_TYPES.get(type(value)) in types or (
        isinstance(value, dict) and "object" in types or isinstance(value, list) and "array" in types
    )


def argument_value(text: str, schema: Any) -> Any:
    """An argument's value as written (``text``), decoded as its JSON Schema allows.

    - The schema allows a string (``type: string``, ``["string", "null"]``, an
      ``anyOf`` with a string member, an ``enum`` holding strings): the text as it
      is, unless an ``enum`` lists the decoded value and not the text.
    - The schema allows only other types: the JSON value the text is (Python's
      ``True``/``False``/``None`` read as JSON's; a float with no fraction as an
      integer where only integers fit) when it is one of them, else the text (the
      tool's own check then says what is wrong).
    - The schema says nothing (no schema for the key, a ``$ref``): the JSON value when
      the text is one, else the text (vLLM's reading).
    """
    types = schema_types(schema)
    ok, value = _decoded(text)
    if types is None:
        return value if ok else text
    enum = schema.get("enum") if isinstance(schema, Mapping) else None
    if "string" in types:
        if isinstance(enum, list) and text not in enum and ok and value in enum:
            return value
        return text
    if not ok:
        return text
    if isinstance(value, float) and value.is_integer() and "integer" in types and "number" not in types:
        value = int(value)
    return value if _fits(value, types) else text


def call_arguments(body: str, parameters: Any) -> dict[str, Any]:
    """A call's arguments: its body's pairs, each value decoded by the property's
    schema in ``parameters`` (the function's JSON Schema; ``additionalProperties``
    for a key it does not list).

    Raises:
        UnreadableCall: when the body does not follow the structure.
    """
    parameters = parameters if isinstance(parameters, Mapping) else {}
    properties = parameters.get("properties") if isinstance(parameters.get("properties"), Mapping) else {}
    extra = parameters.get("additionalProperties")
    return {
        key: argument_value(value, properties.get(key, extra if isinstance(extra, Mapping) else None))
        for key, value in read_pairs(body)
    }
