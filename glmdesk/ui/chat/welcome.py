"""What an empty chat shows: the model in use, three example prompts (and the chosen MCP
servers' prompts), how to open another model."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from glmdesk.ui.common.model_facts import device_text, no_break, weights_text


def size_text(mib: float) -> str:
    """A memory size for people: ``540 MiB``, ``3.8 GiB`` (binary units)."""
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


class WelcomeWidget(QWidget):
    """The welcome shown in place of an empty conversation.

    Signals:
        prompt_chosen(str): An example prompt was clicked (the window sends it).
        open_model_requested(): "Open another model..." was clicked.
    """

    prompt_chosen = Signal(str)
    open_model_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("welcome")
        self.title_label = QLabel()
        self.title_label.setObjectName("welcome_title")
        font = self.title_label.font()
        font.setPointSizeF(font.pointSizeF() * 1.6)
        font.setBold(True)
        self.title_label.setFont(font)
        self.title_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.title_label.setWordWrap(True)
        self.model_label = QLabel()
        self.model_label.setObjectName("welcome_model")
        self.model_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.model_label.setWordWrap(True)
        self.model_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.model_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.try_label = QLabel(self.tr("Try one of these:"))
        self.try_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        examples = self._example_buttons()
        self._build_open_row()
        self._lay_out(examples)
        self.set_model(None)

    def _example_buttons(self) -> QVBoxLayout:
        """One button per example prompt (``example_buttons``), in a column."""
        self.example_buttons: list[QPushButton] = []
        self.server_prompt_buttons: list[QPushButton] = []
        examples = QVBoxLayout()
        examples.setSpacing(6)
        for text in self.example_prompts():
            button = self._example_button(text, self.tr("Send this message"))
            self.example_buttons.append(button)
            examples.addWidget(button)
        self._examples = examples
        return examples

    def _example_button(self, label: str, tip: str) -> QPushButton:
        button = QPushButton(label)
        button.setObjectName("welcome_example")
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        button.setToolTip(tip)
        button.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        button.setMinimumHeight(button.sizeHint().height() + 8)
        button.clicked.connect(self._on_example_clicked)
        return button

    def set_server_prompts(self, prompts: Sequence[tuple[str, str]]) -> None:
        """Show the chosen MCP servers' prompts below the examples, one button each:
        ``(label, text)`` pairs (:func:`glmdesk.chat.mcp.catalog.example_prompts`); a
        click sends the text. An empty list takes them away."""
        for button in self.server_prompt_buttons:
            self._examples.removeWidget(button)
            button.deleteLater()
        self.server_prompt_buttons = []
        enabled = all(b.isEnabled() for b in self.example_buttons)
        for label, text in prompts:
            tip = self.tr("Send this prompt of an MCP server:\n{text}").format(text=text[:500])
            button = self._example_button(label, tip)
            button.setProperty("prompt", text)
            button.setEnabled(enabled)
            self.server_prompt_buttons.append(button)
            self._examples.addWidget(button)

    def _build_open_row(self) -> None:
        self.open_button = QPushButton(self.tr("Open another model..."))
        self.open_button.setObjectName("welcome_open_model")
        self.open_button.setFlat(True)
        self.open_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.open_button.clicked.connect(self.open_model_requested)
        self.hint_label = QLabel(
            self.tr(
                "A folder of ChatGLM2, ChatGLM3, GLM-4 or any Hugging Face chat model, or a .gguf file (Ctrl+O)."
            )
        )
        self.hint_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint_label.setWordWrap(True)
        self.hint_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)

    def _lay_out(self, examples: QVBoxLayout) -> None:
        column = QWidget()
        column.setMaximumWidth(560)
        inner = QVBoxLayout(column)
        inner.setSpacing(10)
        inner.addWidget(self.title_label)
        inner.addWidget(self.model_label)
        inner.addSpacing(12)
        inner.addWidget(self.try_label)
        inner.addLayout(examples)
        inner.addSpacing(12)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.open_button)
        row.addStretch(1)
        inner.addLayout(row)
        inner.addWidget(self.hint_label)
        outer = QVBoxLayout(self)
        outer.addStretch(1)
        centre = QHBoxLayout()
        centre.addStretch(1)
        centre.addWidget(column, 4)
        centre.addStretch(1)
        outer.addLayout(centre)
        outer.addStretch(2)

    def example_prompts(self, embedded: bool = False) -> list[str]:
        """The three example prompts, in the interface language (English and Chinese
        examples). For the embedded model (SmolLM2-135M, English only), three it answers
        well on every engine (``benchmarks/factual.py``), in English in every language."""
        if embedded:
            return [
                self.tr("What is the capital of Japan?"),
                self.tr("Give me three tips for a good night's sleep."),
                self.tr("Write a Python function that reverses a string."),
            ]
        return [
            self.tr("Explain what a KV cache is in three sentences."),
            self.tr("用三句话介绍一下长城。"),
            self.tr("Write a Python function that checks whether a word is a palindrome."),
        ]

    def set_model(self, info) -> None:
        """Show the model in use (a ``ModelInfo``), or that one is loading (``None``)."""
        buttons_enabled = info is not None
        for button in (*self.example_buttons, *self.server_prompt_buttons):
            button.setEnabled(buttons_enabled)
        self._engine_line = ""
        if info is None:
            self._facts = ""
            self.title_label.setText(self.tr("Welcome to glmdesk"))
            self.model_label.setText(self.tr("The model is loading; you can type meanwhile."))
            return
        self.title_label.setText(self.tr("Chat with {model}").format(model=no_break(info.name)))
        for button, text in zip(
            self.example_buttons, self.example_prompts(info.source_kind == "embedded"), strict=True
        ):
            button.setText(text)
        if info.engine == "remote":  # no size or device of ours: the server's address
            facts = self.tr("Answered by the server at {url} · context {context} tokens").format(
                url=info.location, context=f"{info.context_length:,}"
            )
        else:
            facts = self.tr("{size} on {device} · {weights} · context {context} tokens").format(
                size=size_text(info.footprint_mib),
                device=device_text(info.device),
                weights=weights_text(info),
                context=f"{info.context_length:,}",
            )
        if info.source_kind == "embedded":
            facts = self.tr(
                "{facts}\nThe small embedded model: fine for trying glmdesk; open a GLM model for real work."
            ).format(facts=facts)
        self._facts = facts
        self.model_label.setText(facts)

    @Slot(str)
    def set_engine_line(self, line: str) -> None:
        """Show which engine answers and why (``EngineUpgrade.engine_line``) under the facts."""
        self._engine_line = line
        if self._facts:
            self.model_label.setText(f"{self._facts}\n{line}" if line else self._facts)

    @Slot()
    def _on_example_clicked(self) -> None:
        button = self.sender()
        if isinstance(button, QPushButton):
            self.prompt_chosen.emit(button.property("prompt") or button.text())
