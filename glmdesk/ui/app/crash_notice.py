"""What the window says at start about a run that died while its engine answered.

A run that did not end (a native crash, a kill, a power cut) leaves its marker
(:mod:`glmdesk.core.run_marker`). At start the window takes the markers of runs that
died, says in the notice bar what happened (engine, model, crash log), opens the
conversation that was being answered and puts a note on its unanswered question, with
Regenerate in the notice bar. ``auto`` no longer chooses an engine that crashed
(:mod:`glmdesk.core.distrusted_engines`) until the user picks it in Open model.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from PySide6.QtCore import QObject, Slot

from glmdesk.core.distrusted_engines import is_distrusted
from glmdesk.core.run_marker import RunMarker, dead_runs


def engine_label(engine: str) -> str:
    """The engine's name as the interface writes it (``llama.cpp``)."""
    from glmdesk.engine.backends import spec_for

    try:
        return spec_for(engine).label
    except Exception:  # an engine of another build
        return engine or "?"


def settle_answer(message_id: int, history) -> None:
    """The answer a dead run was writing, as the user last saw it: removed when it holds no
    text yet (the question stays, and Regenerate answers it in its place), else finished
    with the text of its last checkpoint and finish reason ``error``. Runs as a history
    write (on the writer thread); a message already finished or erased is left alone."""
    try:
        message = history.get_message(message_id)
    except KeyError:
        return
    if message.complete or message.role != "assistant":
        return
    if not message.text and not message.reasoning:
        history.delete_message(message_id)
    else:
        history.finish_assistant_message(message_id, message.text, "error", reasoning=message.reasoning)


class CrashNotice(QObject):
    """Tells the user about runs that died (see the module docstring).

    Args:
        notice: The window's notice bar.
        chat_view: The chat view (its last message gets the note).
        regenerate: Writes the last answer again (the window's Regenerate); returns
            whether it started (``False`` while the model loads).
        history_controller: Opens the conversation that was answered (``None``: no history).
        parent: The owning QObject (the window).

    Attributes:
        runs: The runs taken at :meth:`check`, oldest first.
    """

    def __init__(
        self,
        notice,
        chat_view,
        regenerate: Callable[[], bool],
        history_controller=None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.notice = notice
        self.chat_view = chat_view
        self.regenerate = regenerate
        self.history_controller = history_controller
        self.runs: list[RunMarker] = []
        self._conversation: int | None = None

    def check(self) -> list[RunMarker]:
        """Take the markers of runs that died and tell the newest (once per start)."""
        self.runs = dead_runs()
        if not self.runs:
            return self.runs
        run = self.runs[-1]
        controller = self.history_controller
        if controller is not None and run.conversation_id is not None:
            for dead in self.runs:
                if dead.message_id is not None:
                    controller.write(functools.partial(settle_answer, dead.message_id))
            # Told once it is on screen (opening a conversation clears the notice bar).
            self._conversation = run.conversation_id
            controller.conversation_opened.connect(self._on_conversation_opened)
            controller.open_conversation(run.conversation_id)
        else:
            self._tell()
        return self.runs

    def _tell(self) -> None:
        self.notice.show_error(self.sentence(self.runs[-1]), (self.tr("Regenerate"), self._on_regenerate))

    def sentence(self, run: RunMarker) -> str:
        """What happened, in one or two sentences: the engine, the model, the cause and
        the crash log, and whether ``auto`` passes the engine over from now on."""
        engine = engine_label(run.engine)
        how = run.signal_name()
        if how:
            text = self.tr(
                "glmdesk closed unexpectedly while {engine} was answering with {model}: the engine crashed "
                "({signal}). Crash log: {log}"
            ).format(engine=engine, model=run.model, signal=how, log=run.crash_log)
        else:
            text = self.tr(
                "glmdesk stopped while {engine} was answering with {model}: it was ended from outside or the "
                "computer lost power (no crash log was written)."
            ).format(engine=engine, model=run.model)
        if is_distrusted(run.engine):
            text += " " + self.tr(
                "glmdesk will not choose {engine} by itself until you pick it in Open model."
            ).format(engine=engine)
        return text

    def note(self) -> str:
        """The note on the question the engine did not finish answering."""
        return self.tr("The engine stopped while answering. Regenerate (Ctrl+R) writes the answer again.")

    def _on_regenerate(self) -> None:
        if not self.regenerate():
            self.notice.show_error(
                self.tr("Wait until the model has loaded, then press Regenerate again."),
                (self.tr("Regenerate"), self._on_regenerate),
            )

    @Slot(int)
    def _on_conversation_opened(self, conversation_id: int) -> None:
        if conversation_id != self._conversation:
            return
        self._conversation = None
        controller = self.history_controller  # the sender of this signal: never None here
        if controller is not None:
            controller.conversation_opened.disconnect(self._on_conversation_opened)
        widgets = self.chat_view.messages()
        if widgets:
            widgets[-1].set_note(self.note())
        self._tell()
