"""The reasoning-effort levels a chat template reads, and how the thinking of earlier
turns is kept.

GLM-5.2 and 5.3 take ``reasoning_effort`` through their chat template (5.2: ``high`` or
``max``; 5.3: ``low``, ``high`` or ``max``) and ``clear_thinking`` (whether the thinking
of earlier turns is dropped from the prompt; 5.2 drops it unless told otherwise, 5.3
keeps it). vLLM and SGLang pass both as ``chat_template_kwargs``; a template says which
effort levels exist by the strings it compares ``reasoning_effort`` with, or falls back
to (``'high' if reasoning_effort == 'high' else 'max'``). This module reads them from the
template's syntax tree (Jinja2's parser, as transformers renders the template), so a
model's levels are its template's, whatever its family.
"""

from __future__ import annotations

from jinja2 import Environment, nodes
from jinja2.exceptions import TemplateSyntaxError

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
    except TemplateSyntaxError:
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
