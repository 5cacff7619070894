"""The documents' sentences in the user's language: a problem of a file, the progress
line, a source's place."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from glmdesk.documents import DocumentProblem, Source


def problem_sentence(problem: DocumentProblem) -> str:
    """What went wrong with one file, as a sentence (``{name}``, ``{detail}`` filled)."""
    texts = {
        "missing": QCoreApplication.translate(
            "DocumentWords", "{name} does not exist (or cannot be seen by glmdesk)."
        ),
        "vanished": QCoreApplication.translate(
            "DocumentWords", "{name} disappeared while it was being read; what was indexed before is kept."
        ),
        "unreadable": QCoreApplication.translate("DocumentWords", "{name} cannot be opened: {detail}."),
        "too_large": QCoreApplication.translate(
            "DocumentWords", "{name} is {detail}; glmdesk reads documents up to 256 MB."
        ),
        "empty": QCoreApplication.translate("DocumentWords", "{name} is empty: there is no text in it."),
        "binary": QCoreApplication.translate(
            "DocumentWords",
            "{name} is not a document glmdesk can read (text, Markdown, code, PDF, DOCX or HTML): it holds binary data.",
        ),
        "password": QCoreApplication.translate(
            "DocumentWords", "{name} is protected by a password: save a copy without one and add that."
        ),
        "damaged": QCoreApplication.translate(
            "DocumentWords", "{name} is damaged and cannot be read ({detail})."
        ),
        "scanned": QCoreApplication.translate(
            "DocumentWords",
            "{name} has only scanned pages (images, no text): they need text recognition before they can be searched.",
        ),
        "disk_full": QCoreApplication.translate(
            "DocumentWords", "The disk is full: {name} was not indexed. What was indexed before is kept."
        ),
        "cancelled": QCoreApplication.translate(
            "DocumentWords", "Indexing stopped before {name}; what was indexed before is kept."
        ),
    }
    return texts[problem.kind].format(name=problem.name, detail=problem.detail or "-")


def progress_line(progress) -> str:
    """``3 of 40 files, 120 pages, about 20 s left`` for an
    :class:`~glmdesk.documents.indexing.IndexProgress`."""
    line = QCoreApplication.translate("DocumentWords", "{done} of {total} files, {pages} pages").format(
        done=progress.files_done, total=progress.files_total, pages=progress.pages_done
    )
    eta = progress.eta_s
    if eta is not None and progress.files_done < progress.files_total:
        line += QCoreApplication.translate("DocumentWords", ", about {seconds} s left").format(
            seconds=max(round(eta), 1)
        )
    return line


def source_place(source: Source) -> str:
    """``report.pdf, page 3, line 12`` (or ``notes.md, whole``)."""
    if source.whole:
        return QCoreApplication.translate("DocumentWords", "{name}, whole").format(name=source.name)
    if source.page is not None:
        return QCoreApplication.translate("DocumentWords", "{name}, page {page}, line {line}").format(
            name=source.name, page=source.page, line=source.line
        )
    return QCoreApplication.translate("DocumentWords", "{name}, line {line}").format(
        name=source.name, line=source.line
    )


def recall_note(state: str) -> str:
    """What became of an earlier answer's source since (``changed`` or ``gone``; ``""``
    for ``same``), see :data:`~glmdesk.documents.recall.RECALL_STATES`."""
    if state == "changed":
        return QCoreApplication.translate("DocumentWords", "changed since this answer")
    if state == "gone":
        return QCoreApplication.translate("DocumentWords", "file no longer on disk")
    return ""


def note_sentence(note) -> str:
    """A :class:`~glmdesk.documents.turn.TurnNote` as a sentence."""
    if note.kind == "scanned":
        return _scanned(note.name, note.pages)
    if note.kind == "unusable" and note.problem is not None:
        return problem_sentence(note.problem)
    if note.kind == "no_match":
        return QCoreApplication.translate(
            "DocumentWords",
            "No passage matched the question's words; the documents' first passages were given.",
        )
    return QCoreApplication.translate(
        "DocumentWords",
        "No passage fits the room left ({tokens} tokens): raise the budget or shorten the conversation.",
    ).format(tokens=note.tokens)


def _scanned(name: str, pages) -> str:
    shown = ", ".join(map(str, pages[:20])) + (", …" if len(pages) > 20 else "")
    return QCoreApplication.translate(
        "DocumentWords",
        "{name}: pages {pages} are scanned images with no text; they are not searched.",
    ).format(name=name, pages=shown)


def scanned_sentence(row) -> str:
    """``report.pdf: pages 2, 5, 9 are scanned images with no text; they are not searched.``
    for a :class:`~glmdesk.documents.store.DocumentRow` with such pages."""
    return _scanned(row.name, row.scanned_pages)
