"""GLM-4.1V-Thinking's ``<answer>`` wrapper, left out of what is shown (no torch: the
remote backend uses it too).

GLM-4.1V-Thinking writes ``<think>...</think><answer>...</answer>`` (its model card); the
think block becomes reasoning parts (:mod:`glmdesk.engine.families.parser`), and the
answer markers, plain text to its tokenizer and to a server, are dropped here.
"""

from __future__ import annotations

from glmdesk.engine.formats.prompt import ReplyFilter

#: GLM-4.1V-Thinking wraps its final answer in these markers; they are not shown.
ANSWER_MARKERS = ("<answer>", "</answer>")


class AnswerMarkerFilter(ReplyFilter):
    """Shows the reply without GLM-4.1V-Thinking's ``<answer>`` / ``</answer>`` markers
    (written as text by its tokenizer, and sent as text by a server), whatever the deltas
    split; a text that only begins like a marker is held until it is told apart.

    Args:
        markers: The marker texts to leave out (default :data:`ANSWER_MARKERS`).
    """

    def __init__(self, markers: tuple[str, ...] = ANSWER_MARKERS) -> None:
        self.markers = markers
        self._held = ""

    def __call__(self, delta: str) -> str:
        text = self._held + delta
        for marker in self.markers:
            text = text.replace(marker, "")
        cut = text.rfind("<")
        if cut >= 0 and any(m.startswith(text[cut:]) for m in self.markers):
            self._held, text = text[cut:], text[:cut]
        else:
            self._held = ""
        return text

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held
