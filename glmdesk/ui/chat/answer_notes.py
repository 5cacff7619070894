"""The sentences shown when an answer ends: its figures under the bubble, the messages
left out of the context, and how many tokens a short reply had room for."""

from __future__ import annotations

from PySide6.QtCore import QObject

from glmdesk.ui.session.conversation import AnswerRecord


class AnswerNotes(QObject):
    """Words the window shows about a finished answer (a QObject only for ``tr``).

    Args:
        parent: The owning window.
    """

    def stats_text(self, record: AnswerRecord) -> str:
        """``"N tokens, R tokens/s, first token after T s"`` (TTFT in s, rate in tokens/s),
        with the finish reason in brackets unless it is ``stop``."""
        reasons = {
            "stop": "",
            "length": self.tr("max tokens reached"),
            "cancelled": self.tr("stopped"),
            "error": self.tr("failed"),
            "repetition": self.tr("stopped: repeating itself"),
        }
        if record.answer_ttft_s:  # it thought first: its first thinking and answer tokens
            stats = self.tr(
                "{tokens} tokens, {rate} tokens/s, first thinking token after {ttft} s, "
                "first answer token after {answer} s"
            ).format(
                tokens=record.n_tokens,
                rate=f"{record.tokens_per_s:.1f}",
                ttft=f"{record.ttft_s:.2f}",
                answer=f"{record.answer_ttft_s:.2f}",
            )
        else:
            stats = self.tr("{tokens} tokens, {rate} tokens/s, first token after {ttft} s").format(
                tokens=record.n_tokens, rate=f"{record.tokens_per_s:.1f}", ttft=f"{record.ttft_s:.2f}"
            )
        reason = reasons.get(record.finish_reason, "")
        return self.tr("{stats} ({reason})").format(stats=stats, reason=reason) if reason else stats

    def repetition(self) -> str:
        """The note under an answer the engine stopped for repeating itself."""
        return self.tr(
            "Stopped: the answer kept repeating the same few tokens over and over. "
            "Try Regenerate, a higher temperature or a repetition penalty."
        )

    def reply_limit(self, tokens: int, max_new_tokens: int) -> str:
        """The prompt left less room than max new tokens: what the reply could use."""
        return self.tr(
            "Only {tokens} tokens are left in the context window for this answer (max new tokens is {max})."
        ).format(tokens=tokens, max=max_new_tokens)

    def mark_dropped(self, chat_view, status, dropped: tuple[int, ...]) -> None:
        """Note under each message left out of the context (indices into the chat view),
        and say how many in the status bar for 8 s."""
        for index, widget in enumerate(chat_view.messages()):
            if index in dropped:
                widget.set_note(
                    self.tr(
                        "Left out of the model's context: the conversation is longer than the context window."
                    )
                )
        if dropped:
            status.showMessage(
                self.tr("{count} earlier messages were left out of the context.").format(count=len(dropped)),
                8000,
            )
