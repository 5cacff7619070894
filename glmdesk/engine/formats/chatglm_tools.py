"""ChatGLM3 and GLM-4 tool calls: the system text that offers tools, and parsing calls.

Prompt side (what :class:`~glmdesk.engine.formats.chatglm_formats.RoleTokenFormat` encodes):

- ChatGLM3 (``tokenization_chatglm.py::build_chat_input``): a system item with tools
  becomes ``content + "\\n" + json.dumps(tools, indent=4, ensure_ascii=False)``; the
  tool demo's content is :data:`CHATGLM3_TOOL_INTRO`; the code interpreter has no
  tool entry, only the composite demo's system prompt :data:`CHATGLM3_CI_PROMPT`.
- GLM-4-9B-chat (the ``chat_template`` of its ``tokenizer_config.json``, as
  transformers renders it): tools open their own ``<|system|>`` turn:
  :data:`GLM4_TOOL_INTRO`, ``"\\n\\n# 可用工具"``, then per function
  ``"\\n## {name}\\n\\n" + json.dumps(function, ensure_ascii=False, indent=4) + "\\n" +
  GLM4_FUNCTION_SUFFIX`` and for the interpreter :data:`GLM4_PYTHON_TOOL`. The template
  writes ``"\\n\\n## "`` right after a block tag, and transformers renders templates with
  ``trim_blocks``, which drops that first newline: the text has no blank line before a
  function's heading (THUDM's Python ``apply_chat_template`` writes one; the template's
  text is what servers and llama.cpp send, so glmdesk writes that).

Reply side: the model answers ``<|assistant|>`` + the tool name as the metadata line
+ ``"\\n"`` + the call, then ``<|observation|>`` (a stop id). ChatGLM3 writes
``` ```python\\ntool_call(a=1, b='x')\\n``` ```` (THUDM's ``process_response`` runs it
with ``eval``; here :func:`parse_chatglm3_call` reads it with :mod:`ast`, literals
only); GLM-4 writes the arguments as JSON. The interpreter's metadata is
``interpreter`` (ChatGLM3) or ``python`` (GLM-4), followed by a fenced code block.
Results go back as ``<|observation|>`` turns; ChatGLM3's interpreter results are
fenced as ``` ```result ``` ```` (``PROMPT.md``).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from glmdesk.core.tools import INTERPRETER, ToolCall, ToolSet

#: THUDM ChatGLM3 tool_using demo: the system text before the tools' JSON.
CHATGLM3_TOOL_INTRO = (
    "Answer the following questions as best as you can. You have access to the following tools:"
)
#: THUDM ChatGLM3 composite_demo: the code interpreter's system prompt.
CHATGLM3_CI_PROMPT = (
    "你是一位智能AI助手，你叫ChatGLM，你连接着一台电脑，但请注意不能联网。在使用Python解决任务时，"
    "你可以运行代码并得到结果，如果运行结果有错误，你需要尽可能对代码进行改进。你可以处理用户上传到电脑上的文件，"
    "文件默认存储路径是/mnt/data/。"
)
#: GLM-4-9B-chat chat template: the tools turn's first paragraph.
GLM4_TOOL_INTRO = (
    "你是一个名为 GLM-4 的人工智能助手。你是基于智谱AI训练的语言模型 GLM-4 模型开发的，"
    "你的任务是针对用户的问题和要求提供适当的答复和支持。"
)
#: GLM-4-9B-chat chat template: the line after each function's JSON.
GLM4_FUNCTION_SUFFIX = "在调用上述函数时，请使用 Json 格式表示调用的参数。"
#: GLM-4-9B-chat chat template: the built-in ``python`` tool.
GLM4_PYTHON_TOOL = (
    "\n## python\n\n当你向 `python` 发送包含 Python 代码的消息时，该代码将会在一个有状态的 Jupyter notebook "
    "环境中执行。\n`python` 返回代码执行的输出，或在执行 60 秒后返回超时。\n`/mnt/data` 将会持久化存储你的文件。"
    "在此会话中，`python` 无法访问互联网。不要使用 `python` 进行任何网络请求或者在线 API 调用，这些在线内容的访问将不会成功。"
)

#: Metadata naming the interpreter, per family.
INTERPRETER_METADATA = {"chatglm3": "interpreter", "glm4": "python"}

_FENCE = re.compile(r"^\s*```[^\n]*\n(.*?)\n?```\s*$", re.DOTALL)


def chatglm3_system_text(content: str, tools: ToolSet) -> str:
    """ChatGLM3's system turn for ``tools`` (see the module docstring).

    With functions: ``(content or CHATGLM3_TOOL_INTRO) + "\\n" + json.dumps(...)``; with
    the interpreter, :data:`CHATGLM3_CI_PROMPT` leads (``"\\n"`` before the rest).
    """
    text = content
    if tools.functions:
        listed = [f.definition() for f in tools.functions]
        text = (text or CHATGLM3_TOOL_INTRO) + "\n" + json.dumps(listed, indent=4, ensure_ascii=False)
    if tools.interpreter:
        text = CHATGLM3_CI_PROMPT + ("\n" + text if text else "")
    return text


def glm4_tools_text(tools: ToolSet) -> str:
    """The content of GLM-4's tools turn (``<|system|>`` + ``"\\n"`` + this)."""
    text = GLM4_TOOL_INTRO + "\n\n# 可用工具"
    for f in tools.functions:
        body = json.dumps(f.definition(), ensure_ascii=False, indent=4)
        text += f"\n## {f.name}\n\n{body}\n{GLM4_FUNCTION_SUFFIX}"
    if tools.interpreter:
        text += GLM4_PYTHON_TOOL
    return text


def _literal(value: Any) -> str:
    return repr(value)


def call_text(family: str, call: ToolCall) -> tuple[str, str]:
    """``(metadata, content)`` of an assistant turn that makes ``call``.

    ``call.raw`` is used when present (the model's own bytes); otherwise the
    canonical text: ChatGLM3 ``` ```python\\ntool_call(k=repr(v), ...)\\n``` ```` or
    GLM-4 JSON arguments; interpreter code fenced as ``` ```python ``` ````.
    """
    if call.kind == "interpreter":
        metadata = INTERPRETER_METADATA[family]
        return metadata, call.raw or f"```python\n{call.code}\n```"
    if call.raw:
        return call.name, call.raw
    if family == "chatglm3":
        args = ", ".join(f"{k}={_literal(v)}" for k, v in call.arguments.items())
        return call.name, f"```python\ntool_call({args})\n```"
    return call.name, json.dumps(dict(call.arguments), ensure_ascii=False)


def interpreter_observation(family: str, text: str) -> str:
    """An interpreter result as the observation content (ChatGLM3 fences it as ``result``)."""
    return f"```result\n{text}\n```" if family == "chatglm3" else text


class CallError(ValueError):
    """A call that is not recognised; the message says why (English, for the note)."""


def _unfence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group(1) if match else text.strip()


def parse_chatglm3_arguments(text: str) -> dict[str, Any]:
    """Arguments of ChatGLM3's ``tool_call(name=value, ...)``, literals only.

    Args:
        text: The call's content (fenced or not).

    Returns:
        ``{name: value}``; values are Python literals (str, numbers, bool, None,
        lists, tuples as lists, dicts, sets as lists).

    Raises:
        CallError: for anything but a ``tool_call(...)`` with keyword literal
            arguments (``__import__('os')`` and any other expression are refused;
            nothing is evaluated).
    """
    source = _unfence(text)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise CallError(f"the call is not valid Python ({exc.msg})") from exc
    node = tree.body
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "tool_call"):
        raise CallError("the call is not of the form tool_call(name=value, ...)")
    if node.args:
        raise CallError("tool_call takes named arguments only")
    out: dict[str, Any] = {}
    for kw in node.keywords:
        if kw.arg is None:
            raise CallError("tool_call(**...) is not accepted")
        try:
            out[kw.arg] = _jsonable(ast.literal_eval(kw.value))
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError) as exc:
            raise CallError(f"the argument {kw.arg} is not a literal value") from exc
    return out


def _jsonable(value: Any) -> Any:
    if isinstance(value, (tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (bytes, complex)):
        raise ValueError("not a JSON value")
    return value


def parse_glm4_arguments(text: str) -> dict[str, Any]:
    """GLM-4's JSON arguments (a JSON object, possibly fenced).

    Raises:
        CallError: when the text is not a JSON object.
    """
    try:
        value = json.loads(_unfence(text))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise CallError(f"the arguments are not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise CallError("the arguments are not a JSON object")
    return value


def parse_call(family: str, metadata: str, content: str, tools: ToolSet) -> ToolCall:
    """Recognise one tool call.

    Args:
        family: ``chatglm3`` or ``glm4``.
        metadata: The assistant turn's metadata line (stripped): the tool's name.
        content: The text after the metadata line, up to the stop id.
        tools: What the conversation offered.

    Returns:
        The :class:`ToolCall` (``raw`` is ``content``).

    Raises:
        CallError: when the tool was not offered or the arguments do not parse.
    """
    if metadata == INTERPRETER_METADATA[family] and tools.interpreter:
        code = _unfence(content)
        if not code.strip():
            raise CallError("the interpreter call has no code")
        return ToolCall(INTERPRETER, {"code": code}, content, "interpreter")
    if tools.function(metadata) is None:
        raise CallError(f"it names the tool {metadata!r}, which this conversation does not offer")
    if family == "chatglm3":
        arguments = parse_chatglm3_arguments(content)
    else:
        arguments = parse_glm4_arguments(content)
    return ToolCall(metadata, arguments, content, "function")


def offered_names(family: str, tools: ToolSet) -> frozenset[str]:
    """Metadata lines that start a call: offered function names and the interpreter's."""
    names = {f.name for f in tools.functions}
    if tools.interpreter:
        names.add(INTERPRETER_METADATA[family])
    return frozenset(names)


def tool_dicts(tools: ToolSet) -> list[Mapping[str, Any]]:
    """The offered functions' definitions in order (for display and export)."""
    return [f.definition() for f in tools.functions]
