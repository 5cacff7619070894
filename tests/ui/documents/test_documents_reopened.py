"""A conversation's documents across closing and reopening: which files and library folders
are on comes back with the chat (after the window was closed too), and its answers show
their sources cards again, each passage read back from the index; a file changed or gone
since is said in the card."""

from __future__ import annotations

import os

from glmdesk.core.history import History
from tests.helpers.fake_backend import FakeBackend

MS = 30_000


def _window(qtbot, history):
    from glmdesk.ui.app.main_window import MainWindow

    window = MainWindow(backend=FakeBackend(pieces=("Ok.",)), options=lambda: {}, history=history)
    qtbot.addWidget(window)
    window.resize(1000, 700)
    window.show()
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
        window.start()
    return window


def _close(window):
    window.close()
    window.history_controller.close()


def _send(qtbot, window, text):
    with qtbot.waitSignal(window.history_controller.recorder.round_begun, timeout=MS):
        with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
            window.input_box.set_text(text)
            window.input_box.submit()
    assert window.history_controller.flush(MS / 1000)


def _open(qtbot, window, cid, cards=1):
    """Open ``cid`` and wait until its answers' ``cards`` sources cards show (their
    passages are read back off the GUI thread)."""
    with qtbot.waitSignal(window.history_controller.conversation_opened, timeout=MS):
        window.history_controller.open_conversation(cid)
    qtbot.waitUntil(lambda: len(_cards(window)) == cards, timeout=MS)


def _cards(window):
    """The sources cards under the answers on screen, as the user reads them."""
    return [
        card.label.text()
        for message in window.chat_view.messages()
        for card in message.attachments
        if card.objectName() == "sources_view" and card.isVisible()
    ]


def test_the_documents_on_and_the_sources_come_back_with_the_chat_after_closing(qtbot, tmp_path):
    note = tmp_path / "recipe.md"
    note.write_text("# Pancakes\n\nRest the batter ten minutes.\n")
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "vault.md").write_text("The vault code is 5512.")
    other = tmp_path / "other"
    other.mkdir()
    (other / "x.md").write_text("Unrelated words.")
    history = History(tmp_path / "history.sqlite3")
    window = _window(qtbot, history)
    try:
        with qtbot.waitSignal(window.documents.indexing_finished, timeout=MS):
            window.documents.add_folder(str(other))
        window.documents.set_folder_on(str(other.resolve()), False)  # in the library, off here
        with qtbot.waitSignal(window.documents.indexing_finished, timeout=MS):
            window.documents.attach([str(note)])
        with qtbot.waitSignal(window.documents.indexing_finished, timeout=MS):
            window.documents.add_folder(str(folder))
        _send(qtbot, window, "How long does the batter rest, and what is the vault code?")
        (live,) = _cards(window)
        cid = history.list_conversations()[0].id
        assert history.chat_settings(cid)["documents"] == {
            "files": [str(note.resolve())],
            "folders": [str(folder.resolve())],
        }
    finally:
        _close(window)
        history.close()

    history = History(tmp_path / "history.sqlite3")
    window = _window(qtbot, history)
    try:
        assert window.documents.attached == []  # a new chat: nothing on
        _open(qtbot, window, cid)
        assert window.documents.attached == [str(note.resolve())]
        assert window.documents.folders == {str(other.resolve()): False, str(folder.resolve()): True}
        chips = [
            c.text() for c in window.documents_panel.findChildren(type(window.documents_panel.attach_button))
        ]
        assert "recipe.md ×" in chips and "notes/ ×" in chips
        (card,) = _cards(window)
        assert "recipe.md, whole" in card and "vault.md, whole" in card
        assert "changed" not in card and "no longer" not in card
        assert live.split(":", 1)[1] == card.split(":", 1)[1]  # the same sources as the live answer
        sources = window.document_sending.cards[-1]
        dialog = sources.open_passage(2)
        assert "The vault code is 5512." in dialog.text.toPlainText()
        dialog.close()
        window.documents.detach(str(note.resolve()))  # a change in a stored chat is kept at once
        window.documents.set_folder_on(str(other.resolve()), True)
        assert window.history_controller.flush(MS / 1000)
        assert history.chat_settings(cid)["documents"] == {
            "files": [],
            "folders": [str(other.resolve()), str(folder.resolve())],
        }
        window.new_chat()
        assert window.documents.attached == [] and not any(window.documents.folders.values())
        _open(qtbot, window, cid)
        assert window.documents.attached == [] and all(window.documents.folders.values())
    finally:
        _close(window)
        history.close()


def test_a_reopened_answer_says_when_its_file_changed_or_is_gone(qtbot, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    logbook = folder / "logbook.txt"
    logbook.write_text(
        "\n\n".join(f"Entry {i}: ordinary weather and harbour paperwork." for i in range(400))
        + "\n\nThe harbour master's boat is named Grey Heron.\n"
    )
    history = History(tmp_path / "history.sqlite3")
    window = _window(qtbot, history)
    try:
        with qtbot.waitSignal(window.documents.indexing_finished, timeout=MS):
            window.documents.add_folder(str(folder))
        window.documents_panel.budget.setValue(800)
        _send(qtbot, window, "What is the harbour master's boat named?")
        cid = history.list_conversations()[0].id
        window.new_chat()
        _open(qtbot, window, cid)
        (card,) = _cards(window)
        assert "[1] logbook.txt, line" in card and "changed" not in card
        dialog = window.document_sending.cards[-1].open_passage(1)
        assert "Grey Heron" in dialog.text.toPlainText()
        dialog.close()

        logbook.write_text("The boat was renamed Blue Tern.\n")
        os.utime(logbook, ns=(1, 2))
        with qtbot.waitSignal(window.documents.indexing_finished, timeout=MS):
            window.documents.refresh_folders()
        window.new_chat()
        _open(qtbot, window, cid)
        (card,) = _cards(window)
        assert "[1] logbook.txt, line" in card and "(changed since this answer)" in card
        dialog = window.document_sending.cards[-1].open_passage(1)
        assert "no longer in the index as it was given" in dialog.text.toPlainText()
        dialog.close()

        logbook.unlink()
        window.new_chat()
        _open(qtbot, window, cid)
        (card,) = _cards(window)
        assert "(file no longer on disk)" in card
    finally:
        _close(window)
        history.close()
