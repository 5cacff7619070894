"""Images of user messages in the history: stored once by content hash beside the
database, shown again on reopening, a missing or damaged file a note; migration from
the previous schema version."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from glmdesk.core.history import History
from glmdesk.core.history_rounds import begin_round
from glmdesk.core.history_schema import SCHEMA_VERSION, connect, schema_version
from glmdesk.core.images import ImageAttachment

PNG = ImageAttachment.from_bytes(b"\x89PNG\r\n\x1a\n" + b"red pixels", "red.png")
JPEG = ImageAttachment.from_bytes(b"\xff\xd8\xff\xe0" + b"blue pixels", "blue.jpg")


def test_images_are_stored_once_and_come_back_in_order(tmp_path: Path) -> None:
    with History(tmp_path / "history.sqlite3") as h:
        cid, _ = begin_round(h, None, "Compare these.", attachments=(PNG, JPEG))
        h.add_message(cid, "assistant", "The first is red.")
        h.add_message(cid, "user", "And this one again?", attachments=(PNG,))
        (first, _answer, again) = h.chat_messages(cid)
        assert [a.sha256 for a in first.attachments] == [PNG.sha256, JPEG.sha256]
        assert first.attachments[0].data == PNG.data and first.attachments[0].name == "red.png"
        assert first.attachments[1].mime == "image/jpeg"
        assert again.attachments == (PNG,)
        files = sorted(p for p in h.images_dir.rglob("*") if p.is_file())
        assert files == sorted([h.image_file(PNG.sha256), h.image_file(JPEG.sha256)])  # once each
        assert hashlib.sha256(files[0].read_bytes()).hexdigest() == files[0].name
        assert h.images_dir.parent == tmp_path
        assert not h.missing_images


def test_a_missing_or_damaged_file_is_a_note_not_a_failed_open(tmp_path: Path) -> None:
    with History(tmp_path / "history.sqlite3") as h:
        cid, _ = begin_round(h, None, "Look.", attachments=(PNG, JPEG))
        h.image_file(PNG.sha256).unlink()
        h.image_file(JPEG.sha256).write_bytes(b"\xff\xd8\xff garbage")
        (message, *_rest) = h.chat_messages(cid)
        assert message.content == "Look." and message.attachments == ()
        assert h.missing_images == ["red.png", "blue.jpg"]


def test_deleting_a_message_drops_its_image_rows(tmp_path: Path) -> None:
    with History(tmp_path / "history.sqlite3") as h:
        cid, _ = begin_round(h, None, "Look.", attachments=(PNG,))
        h.delete_conversation(cid)
        h.purge_deleted(cid)
        assert h.connection.execute("SELECT count(*) FROM message_images").fetchone()[0] == 0


def test_a_database_of_version_5_migrates_and_keeps_its_messages(tmp_path: Path) -> None:
    old = tmp_path / "history.sqlite3"
    conn = connect(old, target=5)
    assert "message_images" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    conn.execute("INSERT INTO conversations (title, created, updated) VALUES ('old chat', 1, 1)")
    conn.execute(
        "INSERT INTO messages (conversation_id, role, text, created, updated) VALUES (1, 'user', 'an old question', 1, 1)"
    )
    conn.execute("UPDATE conversations SET active_leaf = 1")
    conn.close()
    with History(old) as h:
        assert schema_version(h.connection) == SCHEMA_VERSION
        (message,) = h.chat_messages(1)
        assert message.content == "an old question" and message.attachments == ()
        h.add_message(1, "user", "now with a photo", attachments=(PNG,))
        assert h.chat_messages(1)[-1].attachments == (PNG,)


def test_json_export_embeds_the_images_and_import_brings_them_back(tmp_path: Path) -> None:
    with History(tmp_path / "a.sqlite3") as h:
        cid, _ = begin_round(h, None, "Look.", attachments=(PNG, JPEG))
        exported = h.export_json(cid)
    doc = json.loads(exported)
    assert [a["name"] for a in doc["messages"][0]["attachments"]] == ["red.png", "blue.jpg"]
    with History(tmp_path / "b.sqlite3") as other:
        new = other.import_json(exported)
        (message, *_rest) = other.chat_messages(new)
        assert message.attachments == (PNG, JPEG)
        assert other.image_file(PNG.sha256).read_bytes() == PNG.data  # in the new history's folder
        assert other.export_json(new) == exported
        doc["messages"][0]["attachments"][0]["data_b64"] = "bm90IGFuIGltYWdl"  # "not an image"
        with pytest.raises(
            ValueError, match="Message 1 has an attachment \\(1\\) that is not a usable image"
        ):
            other.import_json(json.dumps(doc))


def test_markdown_export_writes_the_images_beside_it(tmp_path: Path) -> None:
    with History(tmp_path / "history.sqlite3") as h:
        cid, _ = begin_round(h, None, "Look.", attachments=(PNG,))
        md = (
            h.export_markdown_files(cid, tmp_path / "out" / "chat.md")
            if (tmp_path / "out").mkdir() is None
            else None
        )
    text = md.read_text(encoding="utf-8")
    link = f"chat_images/{PNG.sha256}.png"
    assert f"![Image]({link})" in text and "Look." in text
    assert (md.parent / link).read_bytes() == PNG.data
