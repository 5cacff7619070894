"""How ``glmdesk chat`` shows a reasoning model's thinking: apart from the answer.

The thinking goes to standard error (standard output stays the answer alone, for
pipes and files), each line after a ``│ `` bar under a ``Thinking:`` line, dimmed when
standard error is a terminal (unless ``NO_COLOR`` is set, https://no-color.org), and
ends with how long the model thought and how many tokens, before the answer starts.
"""

from __future__ import annotations

import os
from typing import TextIO

DIM, RESET = "\033[2m", "\033[0m"
BAR = "│ "


class ThinkingPrinter:
    """Streams reasoning text to ``stream`` as a marked-apart block.

    Args:
        stream: Where the thinking goes (``sys.stderr``).
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        tty = getattr(stream, "isatty", lambda: False)()
        self.colour = bool(tty) and not os.environ.get("NO_COLOR")
        self.open = False  # a block is being written

    def write(self, text: str) -> None:
        """Add reasoning text (a ``ReasoningPart``'s); the first opens the block."""
        if not text:
            return
        if not self.open:
            self.stream.write((DIM if self.colour else "") + "Thinking:\n" + BAR)
            self.open = True
        self.stream.write(text.replace("\n", "\n" + BAR))
        self.stream.flush()

    def close(self, seconds: float = 0.0, tokens: int = 0) -> None:
        """End the block (the answer starts, or the reply ended), saying how long the
        model thought (``seconds``, in s) and its ``tokens`` when known."""
        if not self.open:
            return
        self.open = False
        figures = f" ({seconds:.1f} s, {tokens} tokens)" if seconds and tokens else ""
        self.stream.write(f"\n[thought{figures}]" + (RESET if self.colour else "") + "\n")
        self.stream.flush()
