"""A full disk while a photo is sent: the round is kept in the window and, when space
returns, stored whole with its images, which come back when the conversation is reopened.

The full disk is the operating system's answer to writing the image's file,
``OSError(ENOSPC)``, raised at that write on the history writer's thread (SQLite
itself is not touched)."""

from __future__ import annotations

import errno
import os
import pathlib

from glmdesk.core.errors import ErrorInfo
from glmdesk.ui.chat.image_thumbnails import ImageThumbnail, ThumbnailRow
from glmdesk.ui.common.messages import error_sentence
from glmdesk.ui.history import history_access
from tests.ui.conftest import history_window

ANSWER_MS = 60_000


def _thumbnails(widget) -> list[ImageThumbnail]:
    return [t for w in widget.attachments if isinstance(w, ThumbnailRow) for t in w.thumbnails]


def test_a_round_saved_after_a_full_disk_keeps_its_images(
    qtbot, make_window, glm4v_loaded, red_photo, blue_photo, tmp_path, monkeypatch
):
    monkeypatch.setattr(history_access, "RETRY_MS", 200)
    disk = {"full": True}
    write_bytes = pathlib.Path.write_bytes

    def on_the_disk(path: pathlib.Path, data) -> int:
        if disk["full"] and "images" in path.parts:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return write_bytes(path, data)

    monkeypatch.setattr(pathlib.Path, "write_bytes", on_the_disk)
    window, history, _panel, controller = history_window(
        make_window, tmp_path / "history.sqlite3", glm4v_loaded
    )
    try:
        window.input_box.add_images([red_photo, blue_photo])
        with qtbot.waitSignal(window.session.answer_finished, timeout=ANSWER_MS):
            assert window.send_message("Compare them.")
        full = error_sentence(ErrorInfo("history_disk_full", "", {"path": str(history.path), "detail": ""}))
        qtbot.waitUntil(lambda: window.notice.text() == full, timeout=5000)  # a sentence, no traceback
        qtbot.waitUntil(controller.writes.blocked, timeout=5000)  # the whole round waits for space
        assert history.count_conversations() == 0
        assert not list((tmp_path / "images").rglob("*.tmp"))  # no partial file left behind
        answer = window.state.messages[-1].content
        disk["full"] = False
        qtbot.waitUntil(lambda: controller.pending_writes() == 0, timeout=5000)  # the retry timer
        cid = controller.conversation_id
        assert [(m.role, m.text) for m in history.messages(cid)] == [
            ("user", "Compare them."),
            ("assistant", answer),
        ]
        window.new_chat()
        controller.open_conversation(cid)
        qtbot.waitUntil(lambda: len(window.chat_view.messages()) == 2)
        shown = [t.image.sha256 for t in _thumbnails(window.chat_view.messages()[0])]
        assert shown == [red_photo.sha256, blue_photo.sha256]
        assert window.session.state.messages[0].attachments == (red_photo, blue_photo)
    finally:
        controller.close()
        history.close()
