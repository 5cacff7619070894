"""Tools a conversation offers the model, and the calls it makes, as plain values.

A conversation offers no tools, the code interpreter, custom functions, or both
(:class:`ToolSet`). Custom functions are OpenAI-style function definitions
(``{"name", "description", "parameters"}``, the ``function`` object of an OpenAI
``tools`` entry); :func:`parse_functions` validates the JSON list a user types and
words one sentence per problem. A call the model made is a :class:`ToolCall`.

Sources: OpenAI Chat Completions API reference (``tools``, ``tool_calls``,
function ``name`` pattern ``^[a-zA-Z0-9_-]{1,64}$``); THUDM ChatGLM3 ``PROMPT.md``
and GLM-4 ``tokenizer_config.json`` (the interpreter's names ``interpreter`` and
``python``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The built-in code interpreter's name as seen by the app (ChatGLM3 writes the
#: metadata ``interpreter``, GLM-4 ``python``; both become this kind).
INTERPRETER = "interpreter"
#: Tool call kinds: a custom function, or code for the interpreter.
CALL_KINDS = ("function", "interpreter")

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
#: Names the interpreter uses in the formats; a custom function may not take them.
RESERVED_NAMES = frozenset({"interpreter", "python"})


@dataclass(frozen=True)
class FunctionSpec:
    """One custom function offered to the model (an OpenAI function definition).

    Attributes:
        name: Function name, ``[A-Za-z0-9_-]{1,64}``.
        description: What it does (may be empty).
        parameters: JSON Schema object of its arguments (may be empty).
        raw: The definition exactly as given (key order kept: the prompt shows it).
    """

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict)

    def definition(self) -> dict[str, Any]:
        """The definition as the prompt shows it: ``raw`` if given, else the three fields."""
        if self.raw:
            return dict(self.raw)
        out: dict[str, Any] = {"name": self.name, "description": self.description}
        out["parameters"] = dict(self.parameters)
        return out


@dataclass(frozen=True)
class ToolSet:
    """The tools of one conversation.

    Attributes:
        functions: Custom functions, in the order the user listed them.
        interpreter: Whether the code interpreter is offered.
        forced: The name of an offered function the answer must call (OpenAI's
            ``tool_choice`` naming a function), or ``None``: the model decides. A
            GLM prompt then ends with the assistant turn opened and this name written
            as its metadata line, so the model writes only the arguments.

    Raises:
        ValueError: when ``forced`` names no offered function.
    """

    functions: tuple[FunctionSpec, ...] = ()
    interpreter: bool = False
    forced: str | None = None

    def __post_init__(self) -> None:
        if self.forced is not None and self.function(self.forced) is None:
            offered = ", ".join(f.name for f in self.functions) or "none"
            raise ValueError(
                f"The function {self.forced!r} cannot be forced: it is not offered (offered: {offered})."
            )

    def __bool__(self) -> bool:
        return bool(self.functions) or self.interpreter

    def function(self, name: str) -> FunctionSpec | None:
        """The offered function called ``name``, or ``None``."""
        return next((f for f in self.functions if f.name == name), None)


@dataclass(frozen=True)
class ToolCall:
    """A call the model made (recognised: the tool was offered, the arguments parsed).

    Attributes:
        name: The function's name, or :data:`INTERPRETER`.
        arguments: Parsed arguments (JSON values); for the interpreter ``{"code": str}``.
        raw: The call's text exactly as the model wrote it after the metadata line
            (re-encoded byte-exact in later prompts); empty when built from elsewhere
            (the API), then the format writes its canonical text.
        kind: ``function`` or ``interpreter``.
        call_id: An id for the OpenAI API (``call_...``); empty when unknown.
    """

    name: str
    arguments: Mapping[str, Any]
    raw: str = ""
    kind: str = "function"
    call_id: str = ""

    def __post_init__(self) -> None:
        if self.kind not in CALL_KINDS:
            raise ValueError(f"unknown tool call kind {self.kind!r}; expected one of {CALL_KINDS}")

    @property
    def code(self) -> str:
        """The interpreter's code (empty for a function call)."""
        return str(self.arguments.get("code", "")) if self.kind == "interpreter" else ""

    def arguments_json(self, indent: int | None = None) -> str:
        """The arguments as JSON text (non-ASCII kept), e.g. for a card or the API."""
        return json.dumps(dict(self.arguments), ensure_ascii=False, indent=indent)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (history and export)."""
        return {
            "name": self.name,
            "arguments": dict(self.arguments),
            "raw": self.raw,
            "kind": self.kind,
            "call_id": self.call_id,
        }

    @classmethod
    def from_dict(cls, data: Any) -> ToolCall:
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: for anything but such a dict.
        """
        if not isinstance(data, Mapping):
            raise ValueError("A tool call must be an object.")
        name, arguments = data.get("name"), data.get("arguments")
        if not isinstance(name, str) or not name:
            raise ValueError("A tool call has no name.")
        if not isinstance(arguments, Mapping):
            raise ValueError(f"The call of {name} has arguments that are not an object.")
        raw, kind, call_id = data.get("raw", ""), data.get("kind", "function"), data.get("call_id", "")
        if not isinstance(raw, str) or not isinstance(call_id, str) or kind not in CALL_KINDS:
            raise ValueError(f"The call of {name} has an invalid raw text, kind or id.")
        return cls(name, dict(arguments), raw, kind, call_id)


def _problems(index: int, item: Any, seen: set[str]) -> list[str]:
    where = f"Function {index + 1}"
    if not isinstance(item, dict):
        return [f"{where} is not a JSON object."]
    if item.get("type") == "function" and isinstance(item.get("function"), dict):
        item = item["function"]  # an OpenAI tools entry: take its function
    out: list[str] = []
    name = item.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        out.append(f"{where} needs a name of 1 to 64 letters, digits, _ or - (got {name!r}).")
    elif name in RESERVED_NAMES:
        out.append(f"{where} may not be called {name!r}: that name belongs to the code interpreter.")
    elif name in seen:
        out.append(f"{where} repeats the name {name!r}; each function needs its own name.")
    else:
        seen.add(name)
    if "description" in item and not isinstance(item["description"], str):
        out.append(f"{where}: the description must be text.")
    params = item.get("parameters", {})
    if not isinstance(params, dict):
        out.append(f"{where}: parameters must be a JSON Schema object.")
    elif params and params.get("type", "object") != "object":
        out.append(f'{where}: parameters must have type "object" (got {params.get("type")!r}).')
    elif not isinstance(params.get("properties", {}), dict):
        out.append(f"{where}: parameters.properties must be an object.")
    elif not isinstance(params.get("required", []), list):
        out.append(f"{where}: parameters.required must be a list of names.")
    return out


def function_spec(item: Mapping[str, Any]) -> FunctionSpec:
    """A :class:`FunctionSpec` from one checked definition (or OpenAI tools entry)."""
    if item.get("type") == "function" and isinstance(item.get("function"), Mapping):
        item = item["function"]
    return FunctionSpec(
        str(item["name"]), str(item.get("description", "")), dict(item.get("parameters", {})), dict(item)
    )


def check_functions(items: Any) -> list[str]:
    """Every problem of a list of function definitions, one sentence each (empty: fine)."""
    if not isinstance(items, list):
        return ["Custom functions must be a JSON list of function definitions, [ {...}, ... ]."]
    seen: set[str] = set()
    return [p for i, item in enumerate(items) for p in _problems(i, item, seen)]


#: Longest custom-function text accepted, in characters. The definitions go into the
#: system turn of every prompt: 100,000 characters are about 25,000-50,000 tokens,
#: already most of a 32K context.
MAX_FUNCTIONS_CHARS = 100_000


def parse_functions(text: str) -> tuple[tuple[FunctionSpec, ...], list[str]]:
    """Read the custom functions a user typed.

    Args:
        text: A JSON list of OpenAI-style function definitions (each a
            ``{"name", "description", "parameters"}`` object, or an OpenAI ``tools``
            entry ``{"type": "function", "function": {...}}``). Blank text is no functions;
            text over :data:`MAX_FUNCTIONS_CHARS` is a problem (it is not parsed).

    Returns:
        ``(functions, problems)``: the functions when ``problems`` is empty, else
        ``()`` and one sentence per problem.
    """
    if len(text) > MAX_FUNCTIONS_CHARS:
        return (), [
            f"The definitions are {len(text):,} characters; they go into every prompt, so at most "
            f"{MAX_FUNCTIONS_CHARS:,} are taken."
        ]
    if not text.strip():
        return (), []
    try:
        items = json.loads(text)
    except json.JSONDecodeError as exc:
        return (), [f"This is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."]
    problems = check_functions(items)
    if problems:
        return (), problems
    return tuple(function_spec(item) for item in items), []


@dataclass(frozen=True)
class ToolSettings:
    """How tools run (a frozen value, swapped whole).

    Attributes:
        max_rounds: Tool calls answered per user message before the answer is ended
            with a note, in calls.
        timeout_s: Longest an interpreter run may take, in s.
        memory_mib: Address-space limit of the interpreter's kernel process, in MiB.
        always_run: Run interpreter code without asking (per conversation; off by default).

    Raises:
        ValueError: for values out of range.
    """

    max_rounds: int = 5
    timeout_s: float = 60.0
    memory_mib: int = 2048
    always_run: bool = False

    def __post_init__(self) -> None:
        if int(self.max_rounds) != self.max_rounds or not 1 <= self.max_rounds <= 50:
            raise ValueError(
                f"Tool rounds per message must be a whole number from 1 to 50, not {self.max_rounds}."
            )
        if not 1.0 <= self.timeout_s <= 3600.0:
            raise ValueError(f"The interpreter's time limit must be 1 to 3600 s, not {self.timeout_s}.")
        if not 256 <= self.memory_mib <= 1_048_576:
            raise ValueError(
                f"The interpreter's memory limit must be at least 256 MiB, not {self.memory_mib}."
            )


def calls_since_user(messages: Sequence[Any]) -> int:
    """Tool calls made since the newest user message (the rounds used by this answer)."""
    n = 0
    for m in reversed(messages):
        if m.role == "user":
            break
        if m.role == "assistant" and getattr(m, "tool_call", None) is not None:
            n += 1
    return n


#: What a conversation's Tools section can be set to.
TOOL_MODES = ("none", "interpreter", "functions")


@dataclass(frozen=True)
class ConversationTools:
    """A conversation's Tools section as stored with the conversation (history schema 5).

    The "always run code" switch is deliberately not part of it: reopening a
    conversation, or the app after a restart, never runs model-written code without
    a new click (see :class:`ToolSettings`, where it lives for the open session only).

    Attributes:
        mode: One of :data:`TOOL_MODES`.
        functions_json: The custom functions as the user typed them (kept even while
            they do not validate, so nothing typed is lost).
        max_rounds: Tool calls per user message, in calls (1-50).
        timeout_s: The interpreter's time limit, in s (1-3600).

    Raises:
        ValueError: for an unknown mode or a limit out of range (``ToolSettings``'s
            sentences).
    """

    mode: str = "none"
    functions_json: str = ""
    max_rounds: int = ToolSettings.max_rounds
    timeout_s: float = ToolSettings.timeout_s

    def __post_init__(self) -> None:
        if self.mode not in TOOL_MODES:
            raise ValueError(f"Unknown tools mode {self.mode!r}; expected one of {TOOL_MODES}.")
        ToolSettings(max_rounds=self.max_rounds, timeout_s=self.timeout_s)  # range checks

    def to_json(self) -> str:
        """The stored form: a JSON object of the four fields."""
        return json.dumps(
            {
                "mode": self.mode,
                "functions": self.functions_json,
                "max_rounds": self.max_rounds,
                "timeout_s": self.timeout_s,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str | None) -> ConversationTools:
        """Read :meth:`to_json`'s form; ``None``, damaged JSON or bad values give the
        defaults (no tools): a stored value never stops a conversation from opening."""
        try:
            data = json.loads(text) if text else {}
            return cls(
                mode=str(data.get("mode", "none")),
                functions_json=str(data.get("functions", "")),
                max_rounds=int(data.get("max_rounds", ToolSettings.max_rounds)),
                timeout_s=float(data.get("timeout_s", ToolSettings.timeout_s)),
            )
        except (ValueError, TypeError, AttributeError):
            return cls()
