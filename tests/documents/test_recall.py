"""An earlier answer's sources read back from the index: the text given when the index still
holds it, else said changed; a file gone from disk said gone."""

from __future__ import annotations

import os

from glmdesk.core.history_documents import DocumentUse, SourceRef, passage_digest
from glmdesk.documents.indexing import index_paths
from glmdesk.documents.recall import recall_sources
from glmdesk.documents.store import DocumentIndex
from glmdesk.documents.turn import whole_block


def _kept(index, path, ordinal=None):
    """What a question keeps for ``path``: its whole text (``ordinal`` None) or one chunk."""
    row = index.document(path)
    chunks = index.chunks(row.id)
    if ordinal is None:
        return SourceRef(1, None, 1, None, "", True, passage_digest(whole_block(row, chunks)))
    chunk = chunks[ordinal]
    return SourceRef(2, chunk.page, chunk.line, ordinal, chunk.section, False, passage_digest(chunk.text))


def test_whole_and_passage_sources_come_back_then_say_changed_then_gone(tmp_path):
    index = DocumentIndex(tmp_path / "d.sqlite3")
    note = tmp_path / "note.md"
    note.write_text("# Otters\n\nOtters hold hands while asleep.\n\n# Seals\n\nSeals sleep in water.\n")
    index_paths(index, files=[note])
    path = str(note.resolve())
    use = DocumentUse(path, (_kept(index, path), _kept(index, path, 1)))
    whole, passage = recall_sources(index, (use,))
    assert (whole.state, passage.state) == ("same", "same")
    assert '<document name="note.md">' in whole.source.passage and whole.source.whole
    assert passage.source.passage == "# Seals\n\nSeals sleep in water." and passage.source.section == "Seals"

    note.write_text("# Otters\n\nOtters hold hands while asleep.\n\n# Seals\n\nSeals nap on rocks now.\n")
    os.utime(note, ns=(1, 2))
    index_paths(index, files=[note])
    whole, passage = recall_sources(index, (use,))
    assert (whole.state, passage.state) == ("changed", "changed")
    assert whole.source.passage == passage.source.passage == ""  # a later reading is not shown as given

    index_paths(index, files=[note])  # unchanged since: nothing new
    note.unlink()
    assert [r.state for r in recall_sources(index, (use,))] == ["gone", "gone"]
    index.forget(path)
    assert [r.passage_known for r in recall_sources(index, (use,))] == [False, False]
    assert recall_sources(index, (DocumentUse(path),)) == []  # an older history: nothing kept
