"""Tool calls in a remote answer: ``tool_calls`` deltas a server parsed, or GLM call
text it did not (vLLM has no tool parser for glm-4-9b-chat), read with the engine's
parser.

Source: OpenAI API reference, streamed ``delta.tool_calls`` (``index``, ``id``,
``function.name``, then ``function.arguments`` pieces concatenated per index).
"""

from __future__ import annotations

from dataclasses import replace

from glmdesk.core.tools import INTERPRETER, ToolCall, ToolSet

# The GLM parsers (glmdesk.engine.chatglm, which imports torch) are imported only when
# an answer offers tools: a remote chat without tools never loads torch.


class RemoteCalls:
    """Collects one answer's tool calls (the first, and any further ones in order).

    Text that may be a call written as GLM text is held back: while the first line could
    still be an offered tool's name, and after it when it is one (then :attr:`pending`
    names the tool, so the UI shows a card).

    Args:
        tools: What the request offered (empty: every text is passed through).
        families: The GLM formats to try on the text, in order (``glm4``, ``chatglm3``;
            ``glm45`` first: GLM-4.5's XML calls, read while the text streams).
        reasoning: The served family's think markers (a ``<think>`` block in the text
            is reasoning: an XML call written there is not run), or ``None``.
        inside: The text starts inside the think block (the template opened it).
    """

    def __init__(
        self, tools: ToolSet, families: tuple[str, ...], reasoning=None, inside: bool = False
    ) -> None:
        self.tools, self.families = tools, families
        self.names = {f.name for f in tools.functions}
        if tools.interpreter:
            from glmdesk.engine.formats.chatglm_tools import INTERPRETER_METADATA

            self.names |= {INTERPRETER_METADATA[f] for f in families if f in INTERPRETER_METADATA}
        self.held = ""
        self.pending: str | None = None
        self.decided = not tools
        self.streamed: dict[int, dict[str, str]] = {}
        self.calls: tuple[ToolCall, ...] = ()  # every call of the answer, set by finish()
        self.xml = None  # GLM-4.5's XML calls, read while the text streams
        if tools and families and families[0] == "glm45":
            from glmdesk.engine.formats.glm45_format import XmlToolFilter

            # the server forces a call itself (tool_choice is passed through): its text is read as written
            self.xml = XmlToolFilter(replace(tools, forced=None), reasoning, inside)

    def reasoning_apart(self) -> None:
        """The server sends the reasoning apart: the text is answer from here on."""
        if self.xml is not None:
            self.xml.reasoning_apart()

    def add_delta(self, delta) -> None:
        """Take one ``delta.tool_calls`` entry (an object of the ``openai`` client)."""
        slot = self.streamed.setdefault(delta.index or 0, {"id": "", "name": "", "arguments": ""})
        if delta.id:
            slot["id"] = delta.id
        function = delta.function
        if function is not None:
            slot["name"] += function.name or ""
            slot["arguments"] += function.arguments or ""
        name = slot["name"]
        if name in ("python", INTERPRETER) and self.tools.interpreter and self.tools.function(name) is None:
            name = INTERPRETER  # the interpreter's code, named as the local chunks and the final call name it
        self.pending = name or self.pending

    def text(self, piece: str) -> str:
        """The part of the answer's text that can be shown now."""
        if self.xml is not None and not self.streamed:
            shown = self.xml(piece)
            self.pending = self.xml.pending or (self.xml.tool_call.name if self.xml.tool_call else None)
            return shown
        if self.decided:
            return piece
        self.held += piece
        if self.pending is not None:
            return ""
        head, newline, _ = self.held.lstrip(" \n").partition("\n")
        if newline and head.strip() in self.names:
            self.pending = head.strip()
            if self.tools.interpreter and self.tools.function(self.pending) is None:
                self.pending = INTERPRETER  # ``python``/``interpreter``: code, as the local chunks say
            return ""
        if not newline and any(name.startswith(head) for name in self.names):
            return ""
        self.decided = True
        out, self.held = self.held, ""
        return out

    @property
    def call_text(self) -> str:
        """The pending call's text so far: the streamed ``function.arguments`` of the first
        call, or the GLM call text after its metadata line; ``""`` when no call is pending."""
        if self.pending is None:
            return ""
        if self.streamed:
            return self.streamed[min(self.streamed)]["arguments"]
        if self.xml is not None:
            return self.xml.call_text
        return self.held.lstrip(" \n").partition("\n")[2]

    def finish(self) -> tuple[ToolCall | None, str]:
        """At the end: ``(call, text still to show)``; the call is ``None`` when nothing
        parsed (the held text is then shown). :attr:`calls` then holds every call of the
        answer in order (several ``tool_calls`` entries, or GLM-4.5's XML blocks)."""
        from glmdesk.engine.tools.openai_tools import call_from_openai, parse_glm_reply

        if self.streamed:
            slots = [self.streamed[i] for i in sorted(self.streamed)]
            calls = [call_from_openai(s["name"], s["arguments"], s["id"], self.tools) for s in slots]
            if calls[0] is not None:
                self.calls = tuple(c for c in calls if c is not None)
                return calls[0], ""
        if self.xml is not None:
            out = self.xml.finish(cut_off=False)
            self.calls = self.xml.calls
            return self.xml.tool_call, out
        if self.held and self.pending is not None:
            for family in self.families:
                call = parse_glm_reply(family, self.held.lstrip("\n"), self.tools)
                if call is not None:
                    if call.kind == "interpreter" and call.name != INTERPRETER:
                        call = ToolCall(INTERPRETER, call.arguments, call.raw, "interpreter")
                    return call, ""
        out, self.held = self.held, ""
        return None, out
