"""Import accepts what editors write back and refuses anything else with a sentence
(issue 19 item 6)."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

from glmdesk.core.history import History
from glmdesk.core.history_io import decode_export, read_export


@pytest.fixture
def history(tmp_path: Path):
    with History(tmp_path / "history.sqlite3") as h:
        yield h


def _exported(h: History) -> tuple[int, str]:
    cid = h.create_conversation(model="smol")
    h.add_message(cid, "system", "You are helpful.")
    h.add_message(cid, "user", '新空间 \u00e9 🙂 "quoted" \\ back\nline')
    mid = h.begin_assistant_message(cid, model="smol", settings={"temperature": 0.2})
    h.finish_assistant_message(mid, "量子计算 uses qubits.", "stop")
    return cid, h.export_json(cid)


def _resaved(text: str) -> dict[str, bytes]:
    """The export as common editors write it back."""
    doc = json.loads(text)

    def reorder(value):
        if isinstance(value, dict):
            return {k: reorder(value[k]) for k in sorted(value, reverse=True)}
        if isinstance(value, list):
            return [reorder(v) for v in value]
        return value

    crlf = text.replace("\n", "\r\n")
    return {
        "notepad utf-8 bom, crlf": codecs.BOM_UTF8 + crlf.encode("utf-8") + b"\r\n",
        "trailing newline": (text + "\n").encode("utf-8"),
        "4 spaces, keys reordered": json.dumps(reorder(doc), ensure_ascii=False, indent=4).encode("utf-8"),
        "tabs": json.dumps(doc, ensure_ascii=False, indent="\t").encode("utf-8"),
        "\\u escapes": json.dumps(doc, ensure_ascii=True, indent=2).encode("ascii"),
        "one line": json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8"),
        "utf-16 le with bom (Windows 'Unicode')": codecs.BOM_UTF16_LE + crlf.encode("utf-16-le"),
        "utf-16 be with bom": codecs.BOM_UTF16_BE + text.encode("utf-16-be"),
    }


def test_editor_resaved_exports_import_unchanged(history: History, tmp_path: Path):
    cid, text = _exported(history)
    for name, data in _resaved(text).items():
        file = tmp_path / "resaved.json"
        file.write_bytes(data)
        new = history.import_json(read_export(file))
        assert history.export_json(new) == text, name


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "empty"),
        (b"  \r\n", "empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not text"),
        ('{"title": "caf\u00e9"}'.encode("latin-1"), "not UTF-8 text (byte 0xE9 at position 14)"),
        (codecs.BOM_UTF8 + b"[1, 2", "not valid JSON"),
        (b'{"format": "something-else"}', "not a conversation exported by glmdesk"),
        (codecs.BOM_UTF16_LE + b"\x00\xd8", "UTF-16 byte order mark but is not UTF-16 text"),
    ],
)
def test_anything_else_is_refused_with_a_sentence(history: History, tmp_path: Path, data, problem):
    file = tmp_path / "bad.json"
    file.write_bytes(data)
    with pytest.raises(ValueError) as err:
        history.import_json(read_export(file))
    assert problem in str(err.value)
    assert str(err.value).endswith((".", ")", "again."))
    assert history.count_conversations() == 0


def test_folder_is_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="folder"):
        read_export(tmp_path)


def test_text_with_a_bom_character_parses(history: History):
    _, text = _exported(history)
    assert decode_export(text.encode("utf-8")) == text
    assert history.export_json(history.import_json("\ufeff" + text)) == text
