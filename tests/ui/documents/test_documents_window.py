"""Documents in the window: attached (button's path, drop), indexed off the GUI thread with
progress, given to the model with the question (history keeps the question), the answer's
sources shown and opened; bad files are sentences; the library's folders are per chat."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData, QUrl

from tests.helpers.documents import write_pdf
from tests.helpers.fake_backend import FakeBackend

MS = 30_000


@pytest.fixture
def fake_window(qtbot):
    from glmdesk.ui.app.main_window import MainWindow

    backend = FakeBackend(pieces=("Got", " it."))
    window = MainWindow(backend=backend, options=lambda: {})
    qtbot.addWidget(window)
    window.resize(1000, 700)
    window.show()
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
        window.start()
    yield window, backend
    window.close()


def _attach(qtbot, window, paths):
    with qtbot.waitSignal(window.documents.indexing_finished, timeout=MS) as done:
        window.documents.attach([str(p) for p in paths])
    return done.args[0]


def _send(qtbot, window, text):
    with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
        window.input_box.set_text(text)
        window.input_box.submit()


def test_a_short_document_goes_in_whole_and_history_keeps_the_question(qtbot, fake_window, tmp_path):
    window, backend = fake_window
    note = tmp_path / "recipe.md"
    note.write_text("# Pancakes\n\nRest the batter ten minutes.\n")
    _attach(qtbot, window, [note])
    chips = [
        c.text()
        for c in window.documents_panel.findChildren(
            type(window.documents_panel.attach_button), "document_chip"
        )
    ]
    assert chips == ["recipe.md ×"]
    _send(qtbot, window, "How long does the batter rest?")
    sent = backend.requests[-1][-1]
    assert sent.role == "user" and "Rest the batter ten minutes." in sent.content
    assert sent.content.endswith("Question: How long does the batter rest?")
    assert window.session.state.messages[0].content == "How long does the batter rest?"
    (card,) = window.document_sending.cards
    assert card.isVisible() and card in window.chat_view.messages()[-1].attachments  # under the answer
    assert "recipe.md, whole" in card.label.text()


def test_a_pdf_gives_cited_passages_and_a_click_shows_the_passage(qtbot, fake_window, tmp_path):
    window, backend = fake_window
    pages = [[f"Page {n} is about ordinary harbour paperwork and weather notes." * 8] for n in range(1, 60)]
    pages[40] = ["The harbour master's boat is named Grey Heron."]
    pdf = write_pdf(tmp_path / "harbour.pdf", pages)
    seen = []
    window.documents.progress_changed.connect(seen.append)
    _attach(qtbot, window, [pdf])
    assert seen and seen[-1].pages_done >= 1
    window.documents_panel.budget.setValue(300)
    _send(qtbot, window, "What is the harbour master's boat named?")
    assert "[1] harbour.pdf, page 41, line 1" in backend.requests[-1][-1].content
    card = window.document_sending.cards[-1]
    assert "harbour.pdf, page 41, line 1" in card.label.text()
    dialog = card.open_passage(1)
    assert dialog.text.toPlainText() == "The harbour master's boat is named Grey Heron."
    dialog.close()


def test_dropped_files_attach_and_bad_ones_are_sentences(qtbot, fake_window, tmp_path):
    window, _backend = fake_window
    good, empty = tmp_path / "good.txt", tmp_path / "empty.txt"
    good.write_text("fine words")
    empty.write_bytes(b"")
    data = QMimeData()
    data.setUrls([QUrl.fromLocalFile(str(good)), QUrl.fromLocalFile(str(empty))])
    with qtbot.waitSignal(window.documents.indexing_finished, timeout=MS):
        window.input_box.editor.insertFromMimeData(data)
    assert window.documents_panel.problems.text() == "empty.txt is empty: there is no text in it."
    assert window.documents.active_paths() == [str(good.resolve())]
    assert window.input_box.text() == ""


def test_a_library_folder_is_shared_and_on_per_chat(qtbot, fake_window, tmp_path):
    window, backend = fake_window
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("The vault code is 5512.")
    with qtbot.waitSignal(window.documents.indexing_finished, timeout=MS):
        window.documents.add_folder(str(folder))
    _send(qtbot, window, "What is the vault code?")
    assert "5512" in backend.requests[-1][-1].content
    window.new_chat()
    assert window.documents.folders == {str(folder.resolve()): False}  # kept in the library, off here
    _send(qtbot, window, "What is the vault code?")
    assert backend.requests[-1][-1].content == "What is the vault code?"
    assert window.document_sending.cards == []  # the new chat's answer had no documents


def test_cancel_stops_indexing_and_keeps_what_was_stored(qtbot, fake_window, tmp_path):
    window, _backend = fake_window
    pdf = write_pdf(tmp_path / "long.pdf", [[f"Page {n}."] for n in range(1, 200)])
    library = window.documents
    with qtbot.waitSignal(library.indexing_finished, timeout=MS) as done:
        library.progress_changed.connect(lambda _p: library.cancel())
        library.attach([str(pdf)])
    assert done.args[0].cancelled
    assert "Indexing was cancelled" in window.documents_panel.problems.text()


def test_a_folder_file_changed_since_is_read_again_before_the_question(qtbot, fake_window, tmp_path):
    import os

    window, backend = fake_window
    folder = tmp_path / "notes"
    folder.mkdir()
    note = folder / "a.md"
    note.write_text("The vault code is 5512.")
    with qtbot.waitSignal(window.documents.indexing_finished, timeout=MS):
        window.documents.add_folder(str(folder))
    note.write_text("The vault code is 9034 since Monday.")
    os.utime(note, ns=(1, 2))
    _send(qtbot, window, "What is the vault code?")
    assert "9034" in backend.requests[-1][-1].content and "5512" not in backend.requests[-1][-1].content


def test_history_keeps_the_documents_a_question_was_given_not_their_text(qtbot, tmp_path):
    from glmdesk.core.history import History
    from glmdesk.ui.app.main_window import MainWindow

    history = History(tmp_path / "history.sqlite3")
    window = MainWindow(backend=FakeBackend(pieces=("Ok.",)), options=lambda: {}, history=history)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.loader.model_ready, timeout=MS):
        window.start()
    note = tmp_path / "recipe.md"
    note.write_text("Rest the batter ten minutes.")
    try:
        _attach(qtbot, window, [note])
        with qtbot.waitSignal(window.history_controller.recorder.round_begun, timeout=MS):
            _send(qtbot, window, "How long does it rest?")
        qtbot.waitUntil(lambda: history.list_conversations() != [], timeout=MS)
        cid = history.list_conversations()[0].id
        qtbot.waitUntil(lambda: len(history.chat_messages(cid)) == 2, timeout=MS)
        question = history.chat_messages(cid)[0]
        assert question.content == "How long does it rest?"
        assert [d.name for d in question.documents] == ["recipe.md"]
        assert "_Documents: recipe.md_" in history.export_markdown(cid)
    finally:
        window.close()
        window.history_controller.close()
        history.close()


def test_regenerate_keeps_the_documents_and_the_sources(qtbot, fake_window, tmp_path):
    window, backend = fake_window
    note = tmp_path / "recipe.md"
    note.write_text("Rest the batter ten minutes.")
    _attach(qtbot, window, [note])
    _send(qtbot, window, "How long?")
    with qtbot.waitSignal(window.session.answer_finished, timeout=MS):
        window.regenerate()
    assert "Rest the batter ten minutes." in backend.requests[-1][-1].content
    answer = window.chat_view.messages()[-1]
    (card,) = [c for c in window.document_sending.cards if c in answer.attachments]  # the new answer's own
    assert "recipe.md, whole" in card.label.text()


def test_a_folder_taken_out_of_the_library_is_no_longer_searched(qtbot, fake_window, tmp_path):
    from glmdesk.documents.store import DocumentIndex

    window, backend = fake_window
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("The vault code is 5512.")
    with qtbot.waitSignal(window.documents.indexing_finished, timeout=MS):
        window.documents.add_folder(str(folder))
    window.documents.remove_folder(str(folder.resolve()))
    assert window.documents.folders == {} and not window.documents.has_documents()
    qtbot.waitUntil(lambda: DocumentIndex().documents() == [], timeout=MS)
    _send(qtbot, window, "What is the vault code?")
    assert backend.requests[-1][-1].content == "What is the vault code?"


def test_scanned_pages_are_named_after_indexing(qtbot, fake_window, tmp_path):
    window, _backend = fake_window
    pdf = write_pdf(tmp_path / "mixed.pdf", [["Typed page."], [], ["Another typed page."]], blank=(2,))
    _attach(qtbot, window, [pdf])
    assert window.documents_panel.problems.text() == (
        "mixed.pdf: pages 2 are scanned images with no text; they are not searched."
    )


def test_no_room_for_passages_is_said_and_the_question_goes_alone(qtbot, fake_window, tmp_path):
    window, backend = fake_window
    note = tmp_path / "long.txt"
    note.write_text("\n\n".join(f"Paragraph {i} about the lighthouse and its keeper." for i in range(2000)))
    _attach(qtbot, window, [note])
    window.documents_panel.budget.setValue(0)
    with qtbot.waitSignal(window.document_sending.notes_shown, timeout=MS) as noted:
        _send(qtbot, window, "Who keeps the lighthouse?")
    assert noted.args[0].startswith("No passage fits the room left (0 tokens)")
    assert backend.requests[-1][-1].content == "Who keeps the lighthouse?"
    assert window.document_sending.cards == []


def test_each_chat_keeps_its_own_documents(qtbot, fake_window, tmp_path):
    window, _backend = fake_window
    note = tmp_path / "a.md"
    note.write_text("Some words.")
    window.show_conversation([], key=("history", 7))
    _attach(qtbot, window, [note])
    assert window.documents.attached == [str(note.resolve())]
    window.new_chat()
    assert window.documents.attached == []
    window.show_conversation([], key=("history", 7))
    assert window.documents.attached == [str(note.resolve())]


def test_every_bad_file_is_a_sentence_and_the_good_ones_still_answer(qtbot, fake_window, tmp_path):
    from tests.documents.test_index import _bad_files

    window, backend = fake_window
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "vault.md").write_text("The vault code is 5512.")
    with qtbot.waitSignal(window.documents.indexing_finished, timeout=MS):
        window.documents.add_folder(str(folder))
    _bad_files(folder)
    with qtbot.waitSignal(window.documents.indexing_finished, timeout=MS) as done:
        window.documents.refresh_folders()
    assert len(done.args[0].problems) == 5
    shown = sorted(window.documents_panel.problems.text().split("\n"))
    assert shown[1].startswith("broken.pdf is damaged and cannot be read (") and shown[1].endswith(").")
    assert shown[:1] + shown[2:] == [
        "blob.txt is not a document glmdesk can read (text, Markdown, code, PDF, DOCX or HTML): it holds binary data.",
        "empty.txt is empty: there is no text in it.",
        "huge.log is 2.0 GB; glmdesk reads documents up to 256 MB.",
        "locked.pdf is protected by a password: save a copy without one and add that.",
    ]
    assert window.documents_panel.problems.isVisible()
    _send(qtbot, window, "What is the vault code?")
    assert "The vault code is 5512." in backend.requests[-1][-1].content
