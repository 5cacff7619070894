"""Chat with documents, without Qt: text out of files (:mod:`.extract`), chunks that
respect paragraphs and headings (:mod:`.chunking`), the SQLite FTS5 index beside history
(:mod:`.store`), indexing with progress and cancel (:mod:`.indexing`), and the one entry
point an answer run calls, :func:`documents_for_turn` (:mod:`.turn`)."""

from glmdesk.documents.problems import DocumentError, DocumentProblem
from glmdesk.documents.turn import DocumentTurn, Source, TokenBudget, TurnNote, documents_for_turn

__all__ = [
    "DocumentError",
    "DocumentProblem",
    "DocumentTurn",
    "Source",
    "TokenBudget",
    "TurnNote",
    "documents_for_turn",
]
