"""Why a document cannot be read or indexed: a kind, the file and the English sentence.

The terminal prints :attr:`DocumentProblem.message`; the window words the same kind in the
user's language (``glmdesk/ui/documents/document_words.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: Every kind of problem, with the English sentence (``{name}`` is the file's name;
#: ``{detail}`` the library's own words where it gave any).
PROBLEM_SENTENCES = {
    "missing": "{name} does not exist (or cannot be seen by glmdesk).",
    "vanished": "{name} disappeared while it was being read; what was indexed before is kept.",
    "unreadable": "{name} cannot be opened: {detail}.",
    "too_large": "{name} is {detail}; glmdesk reads documents up to 256 MB.",
    "empty": "{name} is empty: there is no text in it.",
    "binary": "{name} is not a document glmdesk can read (text, Markdown, code, PDF, DOCX or HTML): it holds binary data.",
    "password": "{name} is protected by a password: save a copy without one and add that.",
    "damaged": "{name} is damaged and cannot be read ({detail}).",
    "scanned": "{name} has only scanned pages (images, no text): they need text recognition before they can be searched.",
    "disk_full": "The disk is full: {name} was not indexed. What was indexed before is kept.",
    "cancelled": "Indexing stopped before {name}; what was indexed before is kept.",
}


@dataclass(frozen=True)
class DocumentProblem:
    """One document that could not be read or indexed.

    Attributes:
        kind: A key of :data:`PROBLEM_SENTENCES`.
        path: The file.
        detail: What the extracting library or the system said (may be empty).
    """

    kind: str
    path: str
    detail: str = ""

    def __post_init__(self) -> None:
        if self.kind not in PROBLEM_SENTENCES:
            raise ValueError(f"unknown document problem {self.kind!r}")

    @property
    def name(self) -> str:
        """The file's name without its folder."""
        return Path(self.path).name or self.path

    @property
    def message(self) -> str:
        """The English sentence (for the terminal and logs)."""
        return PROBLEM_SENTENCES[self.kind].format(name=self.name, detail=self.detail or "no detail")


class DocumentError(Exception):
    """Raised by extraction and indexing with the :class:`DocumentProblem` it met."""

    def __init__(self, problem: DocumentProblem) -> None:
        super().__init__(problem.message)
        self.problem = problem
