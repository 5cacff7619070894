"""The status bar: model, device and precision, context used, last TTFT and tokens/s.

Each fact is its own label, set apart from the next by a thin rule; an empty fact takes
no room. The engine line is left out while the welcome shows it (the same sentence twice).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Slot
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QFrame, QLabel, QStatusBar, QWidget

from glmdesk.ui.app.load_indicator import LoadIndicator
from glmdesk.ui.common.messages import note_sentence
from glmdesk.ui.common.model_facts import device_text, weights_text


class ElidedLabel(QLabel):
    """A one-line label that ends in "…" when it is narrower than its text (``text()``
    and the tooltip keep it whole)."""

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt override)
        rect = self.contentsRect()
        shown = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, rect.width())
        if shown == self.text():
            super().paintEvent(event)
            return
        QFrame.paintEvent(self, event)  # the style's border, without the whole text
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(rect, int(self.alignment() | Qt.AlignmentFlag.AlignVCenter), shown)
        painter.end()


class StatusBar(QStatusBar):
    """Permanent facts about the model and the last answer, plus the load indicator."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("status_bar")
        self.model_label = QLabel(self.tr("No model loaded"))
        self.device_label = QLabel()
        self.context_label = QLabel()
        self.speed_label = QLabel()
        self.cache_label = QLabel()
        self.cache_label.setObjectName("cache_label")
        self.engine_label = ElidedLabel()
        self.engine_label.setObjectName("engine_label")
        # A long line ("... until llama.cpp is built (stage 2/3: compiling 45%)") must not
        # widen the window: it may be cut on a narrow one; the tooltip keeps it whole.
        self.engine_label.setMinimumWidth(40)
        self.load_indicator = LoadIndicator()
        self.addWidget(self.load_indicator)
        self._facts: list[QLabel] = []
        self._rules: list[QFrame] = []  # the thin rule before each fact
        self.setStyleSheet("QStatusBar::item { border: none; }")  # the rules set facts apart
        for label in (
            self.engine_label,
            self.model_label,
            self.device_label,
            self.context_label,
            self.cache_label,
            self.speed_label,
        ):
            self.add_fact(label)
        self._context_length = 0
        self._engine_elsewhere = False
        self._tidy()

    def add_fact(self, label: QLabel) -> None:
        """Add a fact after the others, set apart by a thin rule (shown while the fact
        and one before it are)."""
        rule = QFrame()
        rule.setObjectName("status_rule")
        rule.setFrameShape(QFrame.Shape.VLine)
        rule.setFrameShadow(QFrame.Shadow.Plain)
        rule.setForegroundRole(QPalette.ColorRole.Mid)
        rule.setFixedWidth(9)  # the line in the middle: room on both sides
        label.setProperty("fact", True)
        label.setContentsMargins(2, 0, 2, 0)
        self._facts.append(label)
        self._rules.append(rule)
        self.addPermanentWidget(rule)
        self.addPermanentWidget(label)
        label.installEventFilter(self)  # the server's label is shown and hidden by its owner

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt override)
        if event.type() in (QEvent.Type.Show, QEvent.Type.Hide) and watched in self._facts:
            self._place_rules()
        return False

    def _place_rules(self) -> None:
        """A rule before each shown fact that follows another shown fact."""
        seen = False
        for label, rule in zip(self._facts, self._rules, strict=True):
            shown = not label.isHidden()
            rule.setVisible(shown and seen)
            seen = seen or shown

    def set_engine_line_elsewhere(self, elsewhere: bool) -> None:
        """Leave the engine line out while another place (the welcome) shows it."""
        self._engine_elsewhere = elsewhere
        self._tidy()

    def _tidy(self, *_args) -> None:
        """Show exactly the facts that have text."""
        for label in (
            self.model_label,
            self.device_label,
            self.context_label,
            self.cache_label,
            self.speed_label,
        ):
            label.setVisible(bool(label.text()))
        self.engine_label.setVisible(bool(self.engine_label.text()) and not self._engine_elsewhere)
        self._place_rules()

    def show_model(self, info) -> None:
        """Show a loaded model (:class:`glmdesk.engine.info.ModelInfo`)."""
        name = info.name
        if getattr(info, "source_kind", "") == "embedded":
            name = self.tr("{name} (embedded)").format(name=info.name)
        self.model_label.setText(name)
        if info.family not in ("remote", "gguf", "generic-hf"):  # a family worth naming
            self.model_label.setText(self.tr("{name} \u00b7 {family}").format(name=name, family=info.family))
        self.model_label.setToolTip(info.location)
        if info.engine == "remote":
            text = weights_text(info)
        else:
            text = self.tr("{device} \u00b7 {weights}").format(
                device=device_text(info.device), weights=weights_text(info)
            )
        self.device_label.setText(text)
        self.device_label.setToolTip("\n".join(note_sentence(note) for note in info.notes))
        self._context_length = info.context_length
        self.show_context(0)
        self.speed_label.setText("")
        self._tidy()

    @Slot(str)
    def show_engine(self, line: str) -> None:
        """Show which engine answers and why, or how far its build is (one line)."""
        self.engine_label.setText(line)
        self.engine_label.setToolTip(line)
        self._tidy()

    def show_no_model(self) -> None:
        """Show that no model is loaded."""
        self.model_label.setText(self.tr("No model loaded"))
        self.device_label.setText("")
        self.context_label.setText("")
        self.speed_label.setText("")
        self._tidy()

    def show_context(self, used: int) -> None:
        """Show ``used`` of the model's context length, in tokens."""
        self.context_label.setText(
            self.tr("context {used} / {length}").format(used=used, length=self._context_length)
        )
        self._tidy()

    def show_cache(self, stats) -> None:
        """Show the KV cache's state when it has evicted tokens or switched to the window.

        Args:
            stats: :class:`glmdesk.engine.chunk.CacheStats` of the newest chunk.
        """
        if stats.evicted <= 0 and stats.state != "windowed":
            self.cache_label.setText("")
            self._tidy()
            return
        self.cache_label.setText(
            self.tr("KV cache: {held} of {seen} tokens held, {evicted} evicted").format(
                held=stats.tokens_held, seen=stats.tokens_seen, evicted=stats.evicted
            )
        )
        self._tidy()

    def show_speed(self, ttft_s: float, tokens_per_s: float) -> None:
        """Show the last answer's time to first token (s) and decode speed (tokens/s)."""
        self.speed_label.setText(
            self.tr("TTFT {ttft} s, {rate} tokens/s").format(ttft=f"{ttft_s:.2f}", rate=f"{tokens_per_s:.1f}")
        )
        self._tidy()

    def reset_answer_figures(self) -> None:
        """Clear the last answer's figures (context used, KV cache state, speed): on New and
        when an answer starts, so no stale number stays on screen."""
        if self._context_length:
            self.show_context(0)
        self.cache_label.setText("")
        self.speed_label.setText("")
        self.clearMessage()
        self._tidy()
