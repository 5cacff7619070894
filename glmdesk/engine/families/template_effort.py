"""The reasoning-effort levels a chat template reads, and how the thinking of earlier
turns is kept.

GLM-5.2 and 5.3 take ``reasoning_effort`` through their chat template (5.2: ``high`` or
``max``; 5.3: ``low``, ``high`` or ``max``) and ``clear_thinking`` (whether the thinking
of earlier turns is dropped from the prompt; 5.2 drops it unless told otherwise, 5.3
keeps it). vLLM and SGLang pass both as ``chat_template_kwargs``; a template says which
effort levels exist by the strings it compares ``reasoning_effort`` with, or falls back
to (``'high' if reasoning_effort == 'high' else 'max'``). This module reads them from the
template's syntax tree (Jinja2's parser, as transformers renders the template), so a
model's levels are its template's, whatever its family; whether a template keeps earlier
thinking when it is not told is read by rendering it (:func:`keeps_thinking`).
"""

from __future__ import annotations

import json

import jinja2.ext
from jinja2 import Environment, nodes
from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

#: The template variable of the effort, as vLLM and OpenAI name it.
EFFORT = "reasoning_effort"
#: Known levels, from least to most thinking (the order the levels are offered in).
EFFORT_ORDER = ("none", "minimal", "low", "medium", "high", "xhigh", "max")


def _reads_effort(node: nodes.Node) -> bool:
    return any(name.name == EFFORT for name in node.find_all(nodes.Name))


def _strings(node: nodes.Node) -> set[str]:
    return {c.value for c in node.find_all(nodes.Const) if isinstance(c.value, str)}


def effort_levels(template: str | None) -> tuple[str, ...]:
    """The ``reasoning_effort`` values ``template`` tells apart, ordered by
    :data:`EFFORT_ORDER` (unknown words last, as written); ``()`` when it reads none.

    The strings a comparison with ``reasoning_effort`` names (``==``, ``in [...]``) and
    the values an ``if ... else`` over it chooses between count; text the template writes
    does not. A template that does not parse has none (the loader words that error).
    """
    if not template or EFFORT not in template:
        return ()
    try:
        tree = Environment().parse(template)
    except TemplateError:
        return ()
    found: set[str] = set()
    for compare in tree.find_all(nodes.Compare):
        if _reads_effort(compare):
            found |= _strings(compare)
    for choice in tree.find_all(nodes.CondExpr):
        if _reads_effort(choice.test):
            found |= _strings(choice)
    for test in tree.find_all(nodes.If):
        if isinstance(test.test, nodes.Compare) and _reads_effort(test.test):
            found |= _strings(test.test)
    rank = {level: i for i, level in enumerate(EFFORT_ORDER)}
    return tuple(sorted(found, key=lambda level: (rank.get(level, len(rank)), level)))


def reads_clear_thinking(template: str | None) -> bool:
    """Whether ``template`` reads ``clear_thinking`` (GLM-4.7 and the GLM-5 line)."""
    return bool(template) and "clear_thinking" in template


#: The reasoning of the earlier answer in :func:`keeps_thinking`'s probe conversation.
_PROBE_THOUGHT = "GLMDESKPROBEEARLIERTHOUGHT"


def keeps_thinking(template: str | None) -> bool:
    """Whether ``template`` keeps an earlier turn's thinking in the prompt when
    ``clear_thinking`` is not given (GLM-5.3: yes; GLM-4.7 and GLM-5.2: no, they drop it
    unless told ``clear_thinking=false``).

    Read by rendering the template as transformers does (a sandboxed Jinja2 environment
    with ``trim_blocks``, ``lstrip_blocks`` and loop controls) over a probe conversation:
    a user turn, an answer with ``reasoning_content``, a second user turn; the answer
    is kept when its reasoning is in the text. ``False`` for a template that does not
    read ``clear_thinking`` or does not render (the loader words a broken template).
    """
    if not reads_clear_thinking(template):
        return False
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = lambda value, **_: json.dumps(value)

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    messages = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi", "reasoning_content": _PROBE_THOUGHT},
        {"role": "user", "content": "Again"},
    ]
    try:
        text = env.from_string(template or "").render(messages=messages, add_generation_prompt=True)
    except (TemplateError, TypeError, ValueError):
        return False
    return _PROBE_THOUGHT in text
