"""OpenAI Chat Completions tools <-> glmdesk's tool values (for ``glmdesk serve`` and
the remote backend).

- :func:`toolset_from_openai`: a request's ``tools`` and ``tool_choice`` -> :class:`ToolSet`.
- :func:`messages_from_openai`: its ``messages`` (``system``/``user``/``assistant`` with
  ``tool_calls``/``tool``) -> :class:`ChatMessage` values, the tools on the system
  message (as the formats expect).
- :func:`tool_call_to_openai` / :func:`tool_call_deltas`: a parsed call -> the
  ``tool_calls`` entry of a response, or the deltas of a streamed one.
- :func:`parse_glm_reply`: GLM text a server returned without parsed ``tool_calls``
  (vLLM has no parser for glm-4-9b-chat) -> a call, with the same parser.

Source: OpenAI API reference, Chat Completions (``tools``, ``tool_choice``,
``tool_calls``, ``role: "tool"`` with ``tool_call_id``, streamed ``delta.tool_calls``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from glmdesk.core.messages import ChatMessage
from glmdesk.core.tools import INTERPRETER, ToolCall, ToolSet, check_functions, function_spec


def toolset_from_openai(tools: Sequence[Mapping[str, Any]] | None, tool_choice: Any = "auto") -> ToolSet:
    """The tools a request offers.

    ``tool_choice``: ``"none"`` offers nothing; ``"auto"`` or absent offer every
    function and the model decides; ``{"type": "function", "function": {"name": N}}``
    offers every function and forces the call of ``N`` (``ToolSet.forced``: a GLM
    prompt then ends with ``N``'s metadata line, so the model writes its arguments);
    ``"required"`` forces the one function when exactly one is offered (a GLM model
    can be made to call a named function, not to choose among several).

    Every function stays offered when one is forced, so the system turn, and the KV
    cache kept for it, is the same whatever a request's ``tool_choice``.

    Raises:
        ValueError: with one sentence per problem (for a 400 answer).
    """
    if not tools or tool_choice == "none":
        return ToolSet()
    entries = list(tools)
    problems = [
        f"Tool {i + 1} is not a function tool ({{'type': 'function', 'function': {{...}}}})."
        for i, t in enumerate(entries)
        if not isinstance(t, Mapping)
        or t.get("type") != "function"
        or not isinstance(t.get("function"), Mapping)
    ]
    if problems:
        raise ValueError(" ".join(problems))
    functions = [dict(t["function"]) for t in entries]
    problems = check_functions(functions)
    if problems:
        raise ValueError(" ".join(problems))
    specs = tuple(function_spec(f) for f in functions)
    return ToolSet(specs, forced=_forced(tool_choice, specs))


def _forced(tool_choice: Any, specs: Sequence[Any]) -> str | None:
    """The function ``tool_choice`` forces, or ``None`` (see :func:`toolset_from_openai`)."""
    if isinstance(tool_choice, Mapping):
        function = tool_choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        if not any(s.name == name for s in specs):
            raise ValueError(f"tool_choice names the function {name!r}, which is not among the tools.")
        return name
    if tool_choice == "required":
        if len(specs) != 1:
            raise ValueError(
                f'tool_choice "required" needs exactly one function here, not {len(specs)}: a GLM '
                "model can be made to call a named function, not to choose among several. Name the "
                'function, or use "auto".'
            )
        return specs[0].name
    if tool_choice not in (None, "auto"):
        raise ValueError(
            f"tool_choice must be 'none', 'auto', 'required' or a named function, not {tool_choice!r}."
        )
    return None


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(
            p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text"
        )
    raise ValueError("A message's content must be text or a list of content parts.")


def _calls(message: Mapping[str, Any]) -> list[ToolCall]:
    out = []
    for entry in message.get("tool_calls") or []:
        function = entry.get("function") if isinstance(entry, Mapping) else None
        if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
            raise ValueError("An assistant tool call has no function name.")
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except json.JSONDecodeError as exc:
            raise ValueError(f"The arguments of the call of {function['name']} are not valid JSON.") from exc
        if not isinstance(arguments, dict):
            raise ValueError(f"The arguments of the call of {function['name']} are not a JSON object.")
        name = function["name"]
        kind = "interpreter" if name in (INTERPRETER, "python") and set(arguments) == {"code"} else "function"
        out.append(
            ToolCall(
                INTERPRETER if kind == "interpreter" else name, arguments, "", kind, str(entry.get("id", ""))
            )
        )
    return out


def messages_from_openai(messages: Sequence[Mapping[str, Any]], tools: ToolSet) -> list[ChatMessage]:
    """A request's messages as :class:`ChatMessage` values.

    ``tool`` (and legacy ``function``) messages become observations named after the
    call they answer (``tool_call_id``); an assistant message with ``tool_calls``
    becomes one message per call (its text on the first). An assistant message's
    ``reasoning_content`` (or ``reasoning``, vLLM 0.32's name) is its reasoning, which the
    chat template keeps or drops (``clear_thinking``). The tools go on the first
    system message (one with empty text is added when there is none). A user message's
    ``attachments`` (images the server decoded from its ``image_url`` parts) stay on it.

    Raises:
        ValueError: with a sentence, for an unknown role or malformed calls.
    """
    out: list[ChatMessage] = []
    names: dict[str, str] = {}
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, Mapping) else None
        content = _text(m.get("content")) if role else ""
        if role in ("system", "developer"):
            out.append(ChatMessage("system", content))
        elif role == "user":
            out.append(ChatMessage("user", content, attachments=tuple(m.get("attachments") or ())))
        elif role == "assistant":
            calls = _calls(m)
            thought = _reasoning(m)
            for k, call in enumerate(calls):
                names[call.call_id] = call.name
                out.append(
                    ChatMessage(
                        "assistant",
                        content if k == 0 else "",
                        tool_call=call,
                        reasoning=thought if k == 0 else "",
                    )
                )
            if not calls:
                out.append(ChatMessage("assistant", content, reasoning=thought))
        elif role in ("tool", "function"):
            name = names.get(str(m.get("tool_call_id", "")), "") or str(m.get("name") or "")
            out.append(ChatMessage("observation", content, name=name))
        else:
            raise ValueError(f"Message {i + 1} has an unknown role {role!r}.")
    if tools:
        at = next((i for i, m in enumerate(out) if m.role == "system"), None)
        if at is None:
            out.insert(0, ChatMessage("system", "", tools=tools))
        else:
            out[at] = ChatMessage("system", out[at].content, tools=tools)
    return out


def _reasoning(message: Mapping[str, Any]) -> str:
    """An assistant message's ``reasoning_content`` or ``reasoning`` (text; else ``""``)."""
    for field in ("reasoning_content", "reasoning"):
        value = message.get(field)
        if isinstance(value, str) and value:
            return value
    return ""


def tool_call_to_openai(call: ToolCall) -> dict[str, Any]:
    """A ``tool_calls`` entry: ``{"id", "type": "function", "function": {"name", "arguments"}}``.

    The interpreter's calls are named ``python`` with arguments ``{"code": ...}``.
    """
    name = "python" if call.kind == "interpreter" else call.name
    return {
        "id": call.call_id or f"call_{uuid.uuid4().hex[:24]}",
        "type": "function",
        "function": {"name": name, "arguments": call.arguments_json()},
    }


def tool_call_deltas(call: ToolCall, index: int = 0) -> list[dict[str, Any]]:
    """``delta.tool_calls`` values of a streamed response: id and name first, then the
    arguments (clients concatenate ``arguments`` strings per ``index``)."""
    full = tool_call_to_openai(call)
    head = {
        "index": index,
        "id": full["id"],
        "type": "function",
        "function": {"name": full["function"]["name"], "arguments": ""},
    }
    return [head, {"index": index, "function": {"arguments": full["function"]["arguments"]}}]


def parse_glm_reply(family: str, text: str, tools: ToolSet) -> ToolCall | None:
    """Recognise a call in a reply's text (metadata line, newline, call), or ``None``.

    Args:
        family: ``chatglm3``, ``glm4`` or ``glm45`` (XML ``<tool_call>`` blocks).
        text: The reply as a server returned it (special tokens already removed).
        tools: What the request offered.
    """
    from glmdesk.engine.formats.chatglm_tools import CallError, parse_call  # the package imports torch

    if not tools:
        return None
    if family == "glm45":
        from glmdesk.engine.formats.glm45_format import parse_xml_reply

        return parse_xml_reply(text, tools)
    metadata, newline, content = text.lstrip(" ").partition("\n")
    if not newline or not metadata.strip():
        return None
    try:
        return parse_call(family, metadata.strip(), content, tools)
    except CallError:
        return None


def messages_to_openai(messages: Sequence[ChatMessage]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The inverse of :func:`messages_from_openai`, for the remote backend.

    Returns:
        ``(wire, tools)``: the ``messages`` of a request (a call is an assistant message
        with ``tool_calls``, the further calls of one turn in the same message; an
        observation a ``tool`` message with the ``tool_call_id`` of the call it answers,
        in order; a user message with images a list of ``image_url`` parts
        with ``data:`` URLs, then its ``text`` part; an answer's reasoning as
        ``reasoning_content`` and ``reasoning``) and its ``tools`` (the custom functions on the system
        message; the code interpreter has no OpenAI form and is not sent).
    """
    wire: list[dict[str, Any]] = []
    tools: list[dict[str, Any]] = []
    last_id, unanswered = "", []  # the ids of the calls whose results come next, in order
    for m in messages:
        if m.role == "system" and m.tools:
            tools = [{"type": "function", "function": f.definition()} for f in m.tools.functions]
        if m.role == "assistant" and m.tool_call is not None:
            entry = tool_call_to_openai(m.tool_call)
            last_id = entry["id"]
            if not m.content and unanswered and wire and wire[-1].get("tool_calls"):
                wire[-1]["tool_calls"].append(entry)  # a further call of the same turn
            else:
                unanswered = []
                wire.append(
                    {"role": "assistant", "content": m.content or None, "tool_calls": [entry], **_thought(m)}
                )
            unanswered.append(last_id)
        elif m.role == "observation":
            call_id = unanswered.pop(0) if unanswered else last_id
            wire.append({"role": "tool", "tool_call_id": call_id, "content": m.content})
        elif m.attachments:  # OpenAI's vision parts: the images, then the text
            parts: list[dict[str, Any]] = [
                {"type": "image_url", "image_url": {"url": a.data_url()}} for a in m.attachments
            ]
            wire.append({"role": m.role, "content": [*parts, {"type": "text", "text": m.content}]})
        else:
            wire.append({"role": m.role, "content": m.content, **_thought(m)})
    return wire, tools


def _thought(message: ChatMessage) -> dict[str, str]:
    """An assistant message's reasoning as a request sends it: ``reasoning_content``
    (what GLM templates read; SGLang and vLLM before 0.32 take it) and ``reasoning``
    (vLLM 0.32 and later); ``{}`` without reasoning."""
    if message.role != "assistant" or not message.reasoning:
        return {}
    return {"reasoning_content": message.reasoning, "reasoning": message.reasoning}


def call_from_openai(name: str, arguments: str, call_id: str, tools: ToolSet) -> ToolCall | None:
    """A streamed or returned ``tool_calls`` entry as a :class:`ToolCall`, or ``None`` when
    it names a tool that was not offered or its arguments are not a JSON object."""
    try:
        parsed = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return None
    if not isinstance(parsed, dict):
        return None
    if name in (INTERPRETER, "python") and tools.interpreter and set(parsed) == {"code"}:
        return ToolCall(INTERPRETER, parsed, "", "interpreter", call_id)
    if tools.function(name) is None:
        return None
    return ToolCall(name, parsed, "", "function", call_id)
