"""Images in the window: attach, paste or drop; thumbnails in the sent message (click to
view); the attach button greyed with the reason for a model without vision."""

from __future__ import annotations

import threading

from PySide6.QtCore import QMimeData, QUrl
from PySide6.QtGui import QImage

from glmdesk.ui.chat.image_thumbnails import ImageThumbnail, ThumbnailRow

ANSWER_TIMEOUT_MS = 60_000


def _thumbnails(widget) -> list[ImageThumbnail]:
    rows = [w for w in widget.attachments if isinstance(w, ThumbnailRow)]
    return [t for row in rows for t in row.thumbnails]


def test_a_photo_is_answered_and_shown_as_a_thumbnail(qtbot, make_window, glm4v_loaded, red_photo, tmp_path):
    window = make_window(glm4v_loaded)
    box = window.input_box
    assert box.attach_button.isEnabled()
    photo = tmp_path / "red.png"
    photo.write_bytes(red_photo.data)
    dropped = QMimeData()
    dropped.setUrls([QUrl.fromLocalFile(str(photo))])
    assert box.editor.canInsertFromMimeData(dropped)
    box.editor.insertFromMimeData(dropped)  # what a drop or a paste of a file does
    assert [i.sha256 for i in box.attachments()] == [red_photo.sha256]
    assert box.tray.isVisible() and box.editor.toPlainText() == ""
    (waiting,) = box.tray.findChildren(ImageThumbnail)
    assert waiting.toolTip() == "red.png, 60 × 40 px\nthe model sees it at 112 × 84 px (12 tokens)"
    box.set_text("What is in this picture?")
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_TIMEOUT_MS) as done:
        box.submit()
    assert done.args[1].finish_reason in ("stop", "length")
    user, answer = window.chat_view.messages()[-2:]
    assert user.text() == "What is in this picture?" and answer.text()
    (thumbnail,) = _thumbnails(user)
    assert thumbnail.image.sha256 == red_photo.sha256
    assert "red.png, 60 × 40 px" in thumbnail.toolTip()
    viewer = thumbnail.open_viewer()
    qtbot.waitUntil(viewer.isVisible)
    assert viewer.label.pixmap().width() == 60
    viewer.close()
    assert not box.attachments() and not box.tray.isVisible()  # sent with the message
    assert window.session.state.messages[-2].attachments[0].sha256 == red_photo.sha256


def test_a_pasted_picture_is_attached_as_png(make_window, glm4v_loaded):
    window = make_window(glm4v_loaded)
    pasted = QMimeData()
    image = QImage(30, 20, QImage.Format.Format_RGB32)
    image.fill(0x336699)
    pasted.setImageData(image)
    window.input_box.editor.insertFromMimeData(pasted)
    (attached,) = window.input_box.attachments()
    assert attached.mime == "image/png"


def test_a_text_model_greys_the_attach_button_with_the_reason(window, tmp_path, qtbot):
    box = window.input_box
    assert not box.attach_button.isEnabled()
    assert "does not read images" in box.attach_button.toolTip()
    text = tmp_path / "notes.png"
    text.write_text("not an image")
    dropped = QMimeData()
    dropped.setUrls([QUrl.fromLocalFile(str(text))])
    with qtbot.waitSignal(box.image_refused) as refused:
        box.editor.insertFromMimeData(dropped)
    assert "notes.png cannot be used" in refused.args[0]
    assert box.attachments() == ()


def test_the_thumbnail_comes_back_when_the_conversation_is_reopened(
    qtbot, make_window, glm4v_loaded, red_photo, blue_photo, tmp_path
):
    from tests.ui.conftest import history_window

    window, history, _panel, controller = history_window(
        make_window, tmp_path / "history.sqlite3", glm4v_loaded
    )
    try:
        writer_threads = []
        writers = controller.writer.call(lambda h: h)
        original = writers._store_images
        writers._store_images = lambda *a: (writer_threads.append(threading.get_ident()), original(*a))[1]
        window.input_box.add_images([red_photo, blue_photo])
        with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_TIMEOUT_MS):
            assert window.send_message("Compare them.")
        assert controller.flush()
        assert (
            writer_threads and threading.get_ident() not in writer_threads
        )  # files written off the GUI thread
        cid = controller.conversation_id
        window.new_chat()
        assert not window.chat_view.messages()
        controller.open_conversation(cid)
        qtbot.waitUntil(lambda: len(window.chat_view.messages()) == 2)
        user = window.chat_view.messages()[0]
        assert [t.image.sha256 for t in _thumbnails(user)] == [red_photo.sha256, blue_photo.sha256]
        history.image_file(blue_photo.sha256).unlink()  # the file gone: a note, the rest opens
        window.new_chat()
        controller.open_conversation(cid)
        qtbot.waitUntil(lambda: len(window.chat_view.messages()) == 2)
        assert [t.image.sha256 for t in _thumbnails(window.chat_view.messages()[0])] == [red_photo.sha256]
        assert "blue.jpg" in window.notice.text() and "missing or damaged" in window.notice.text()
    finally:
        controller.close()
        history.close()


def test_an_edited_message_keeps_its_images(qtbot, make_window, glm4v_loaded, red_photo):
    window = make_window(glm4v_loaded)
    window.input_box.add_images([red_photo])
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_TIMEOUT_MS):
        assert window.send_message("What is this?")
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_TIMEOUT_MS):
        assert window.branch_actions.edit_message(0, "Describe the colour.")
    first = window.session.state.messages[0]
    assert first.content == "Describe the colour." and first.attachments == (red_photo,)
    assert [t.image for t in _thumbnails(window.chat_view.messages()[0])] == [red_photo]


def test_a_thinking_answer_shows_its_reasoning_and_not_the_answer_wrapper(
    qtbot, make_window, glm4v_loaded, red_photo, monkeypatch
):
    from glmdesk.core.settings import SamplingParams
    from tests.helpers.tool_models import ForceTokens

    tok = glm4v_loaded.tokenizer
    written = "<think>It is red.</think><answer>A red square</answer>"
    script = tok.encode(written, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|user|>")]
    forcer = ForceTokens([script])
    monkeypatch.setattr(glm4v_loaded, "logits_processors", lambda: (forcer,))
    window = make_window(glm4v_loaded)
    window.sidebar.set_params(SamplingParams(temperature=0.0, top_p=1.0, max_new_tokens=len(script) + 2))
    window.input_box.add_images([red_photo])
    with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_TIMEOUT_MS) as done:
        assert window.send_message("What is this?")
    assert done.args[1].finish_reason != "error"
    answer = window.chat_view.messages()[-1]
    assert answer.reasoning().strip() == "It is red."
    assert answer.text() == "A red square"
    assert "answer>" not in answer.text() and "think>" not in answer.text()
