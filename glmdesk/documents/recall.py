"""An earlier answer's sources read back from the index, for a conversation reopened from
the history: the history keeps where each passage was (file, page, line, chunk ordinal and
a digest of its text, :class:`~glmdesk.core.history_documents.SourceRef`), never the
text; the text comes from the index, and only when it is still the text that was given.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from glmdesk.core.history_documents import DocumentUse, passage_digest
from glmdesk.documents.store import DocumentIndex
from glmdesk.documents.turn import Source, whole_block

#: What became of a source since its answer: ``same`` (the index holds the text given),
#: ``changed`` (the file was read again since and the passage is no longer there as
#: given, or the index no longer holds the file) and ``gone`` (the file is no longer on
#: disk; the passage is shown when the index still holds it).
RECALL_STATES = ("same", "changed", "gone")


@dataclass(frozen=True)
class RecalledSource:
    """One source of an earlier answer.

    Attributes:
        source: The source; its ``passage`` is the text given, or ``""`` when the index
            no longer holds it.
        state: One of :data:`RECALL_STATES`.
    """

    source: Source
    state: str

    @property
    def passage_known(self) -> bool:
        """True when the passage's text as given was found."""
        return bool(self.source.passage)


def recall_sources(index: DocumentIndex, documents: tuple[DocumentUse, ...]) -> list[RecalledSource]:
    """The sources kept with a question's ``documents``, in prompt order, each read back
    from ``index`` (see the module's text). Documents without kept sources give none.

    Raises:
        sqlite3.Error: when the index cannot be read.
    """
    recalled: list[RecalledSource] = []
    for use in documents:
        if not use.sources:
            continue
        row = index.document(use.path)
        on_disk = Path(use.path).is_file()
        whole_text: str | None = None
        for ref in use.sources:
            text = ""
            if row is not None and row.chunks:
                if ref.whole:
                    if whole_text is None:
                        whole_text = whole_block(row, index.chunks(row.id))
                    text = whole_text
                elif ref.chunk is not None:
                    chunk = index.chunk(row.id, ref.chunk)
                    text = chunk.text if chunk is not None else ""
            if text and passage_digest(text) != ref.digest:
                text = ""  # a later reading of a changed file: not what the answer was given
            state = "gone" if not on_disk else "same" if text else "changed"
            source = Source(
                ref.number,
                use.path,
                ref.page,
                ref.line,
                ref.section,
                text,
                whole=ref.whole,
                ordinal=ref.chunk,
            )
            recalled.append(RecalledSource(source, state))
    return sorted(recalled, key=lambda r: r.source.number)
